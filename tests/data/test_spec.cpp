// Dataset specs: parsing, the canonical form, errors, and opening every kind of
// dataset from small files written here.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "data/open_dataset.h"
#include "data_test_files.h"

namespace vitune::data {
namespace {

namespace fs = std::filesystem;
using testing::cifar_record;
using testing::error_of;
using testing::fresh_folder;
using testing::idx_images_bytes;
using testing::idx_labels_bytes;
using testing::pattern_image;
using testing::write_bytes;
using testing::write_gzip;
using testing::write_png;
using testing::write_text;

TEST(DatasetSpec, ParsesEveryKey) {
  const DatasetSpec spec = parse_dataset_spec(
      "vtab:/data/cifar/train800?root=/data/cifar/images&num_classes=10&classes=0-2,7,5&"
      "per_class=20&part=5:15&seed=3&limit=40");
  EXPECT_EQ(spec.kind, "vtab");
  EXPECT_EQ(spec.location, "/data/cifar/train800");
  EXPECT_EQ(spec.root, "/data/cifar/images");
  EXPECT_EQ(spec.num_classes, 10);
  EXPECT_EQ(spec.classes, (std::vector<int64_t>{0, 1, 2, 7, 5}));
  EXPECT_EQ(spec.per_class, 20);
  EXPECT_EQ(spec.part_begin, 5);
  EXPECT_EQ(spec.part_end, 15);
  EXPECT_EQ(spec.seed, 3u);
  EXPECT_EQ(spec.limit, 40);
  EXPECT_DOUBLE_EQ(parse_dataset_spec("cifar10:/c/test?ratio=0.25").ratio, 0.25);
}

TEST(DatasetSpec, CanonicalFormIsFixedAndRoundTrips) {
  const std::map<std::string, std::string> cases = {
      {"fashion-mnist:train", "fashion-mnist:train"},
      {"fashion-mnist:train?part=0:160&per_class=200&classes=5,6,7,8,9",
       "fashion-mnist:train?classes=5-9&per_class=200&part=0:160&seed=0"},
      {"cifar100:/d/test?limit=7&ratio=0.100&seed=12",
       "cifar100:/d/test?ratio=0.1&seed=12&limit=7"},
      {"folder:/images?seed=4", "folder:/images"},  // a seed without a subset changes nothing
      {"fgvc:/cub/train.json?classes=3,1,2,9,8,0&root=/cub/images",
       "fgvc:/cub/train.json?root=/cub/images&classes=3,1-2,9,8,0"},
  };
  for (const auto& [text, canonical] : cases) {
    EXPECT_EQ(parse_dataset_spec(text).canonical(), canonical) << text;
    EXPECT_EQ(parse_dataset_spec(canonical).canonical(), canonical) << canonical;
  }
}

TEST(DatasetSpec, ErrorsNameTheSpecAndTheProblem) {
  const std::map<std::string, std::string> cases = {
      {"cifar10", "expected <kind>:<location>"},
      {"imagenet:/x", "unknown kind \"imagenet\""},
      {"folder:", "expected a path after \"folder:\""},
      {"fashion-mnist:val", "fashion-mnist split \"val\": expected train or test"},
      {"folder:/x?per_class=ten", "per_class=ten: expected an integer in [1, "},
      {"folder:/x?per_class=0", "per_class=0: expected an integer in [1, "},
      {"folder:/x?ratio=1.5", "ratio=1.5: expected a number in (0, 1]"},
      {"folder:/x?ratio=0.1&per_class=3", "give per_class or ratio, not both"},
      {"folder:/x?part=160", "part=160: expected begin:end"},
      {"folder:/x?part=5:5", "part=5:5: expected begin < end"},
      {"folder:/x?per_class=100&part=0:160", "part=0:160 reaches past per_class=100"},
      {"folder:/x?classes=1,x", "classes=x: expected an integer"},
      {"folder:/x?classes=1,1", "class 1 is listed twice"},
      {"folder:/x?classes=9-8", "range 9-8 runs backwards"},
      {"folder:/x?seed=-1", "seed=-1: expected a non-negative integer"},
      {"folder:/x?limit=0", "limit=0: expected an integer in [1, "},
      {"folder:/x?colour=red", "unknown key \"colour\""},
      {"folder:/x?seed", "option \"seed\": expected key=value"},
      {"folder:/x?seed=1&seed=2", "key seed is given twice"},
      {"cifar10:/x?root=/y", "root= applies to fashion-mnist, vtab and fgvc, not cifar10"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string message = error_of([&] { parse_dataset_spec(text); });
    EXPECT_NE(message.find("dataset spec \"" + text + "\": "), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << text << " -> " << message;
  }
}

// Ten 1x2 IDX images with labels 0..4, 0..4 as <folder>/<prefix>-{images,labels}.
void write_idx_split(const std::string& folder, const std::string& prefix, bool gzipped) {
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < 10; ++i) {
    pixels.insert(pixels.end(), {uint8_t(i), uint8_t(100 + i)});
    labels.push_back(uint8_t(i % 5));
  }
  const std::string suffix = gzipped ? ".gz" : "";
  const auto write = gzipped ? write_gzip : write_bytes;
  write(folder + "/" + prefix + "-images-idx3-ubyte" + suffix, idx_images_bytes(10, 1, 2, pixels));
  write(folder + "/" + prefix + "-labels-idx1-ubyte" + suffix, idx_labels_bytes(labels));
}

TEST(OpenDataset, IdxByFolderAndSplitOrByFiles) {
  const std::string folder = fresh_folder();
  write_idx_split(folder, "train", true);
  write_idx_split(folder, "t10k", false);
  const auto train = open_dataset("idx:" + folder + "/train");
  EXPECT_EQ(train->size(), 10);
  EXPECT_EQ(train->load(3).pixels, (std::vector<uint8_t>{3, 103}));
  EXPECT_EQ(open_dataset("idx:" + folder + "/test")->size(), 10);  // t10k files
  const auto files = open_dataset("idx:" + folder + "/t10k-images-idx3-ubyte," + folder +
                                  "/t10k-labels-idx1-ubyte?classes=4,0");
  ASSERT_EQ(files->size(), 4);
  EXPECT_EQ(files->label(0), 1);  // example 0 has class 0, now label 1
  EXPECT_EQ(files->label(1), 0);
  EXPECT_NE(error_of([&] {
              open_dataset("idx:" + folder + "/valid");
            }).find("no IDX images file found (tried " + folder + "/valid-images-idx3-ubyte.gz"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              open_dataset("idx:" + folder + "/train?classes=5");
            }).find("class 5 is out of range for a dataset of 5 classes"),
            std::string::npos);
}

TEST(OpenDataset, CifarSplitsByFolder) {
  const std::string folder = fresh_folder();
  for (int b = 1; b <= 5; ++b) {
    write_bytes(folder + "/data_batch_" + std::to_string(b) + ".bin", cifar_record(b, 0, false, b));
  }
  write_bytes(folder + "/test_batch.bin", cifar_record(9, 0, false, 0));
  write_bytes(folder + "/train.bin", cifar_record(42, 3, true, 0));
  const auto train = open_dataset("cifar10:" + folder + "/train");
  ASSERT_EQ(train->size(), 5);
  EXPECT_EQ(train->label(4), 5);
  EXPECT_EQ(train->describe(4), folder + "/data_batch_5.bin record 0");
  EXPECT_EQ(open_dataset("cifar10:" + folder + "/test")->label(0), 9);
  EXPECT_EQ(open_dataset("cifar100:" + folder + "/train")->label(0), 42);
  EXPECT_EQ(
      open_dataset("cifar10:" + folder + "/data_batch_2.bin," + folder + "/test_batch.bin")->size(),
      2);
  EXPECT_NE(error_of([&] {
              open_dataset("cifar10:" + folder + "/valid");
            }).find("expected cifar10:<folder>/train, <folder>/test"),
            std::string::npos);
}

TEST(OpenDataset, FolderVtabAndFgvc) {
  const std::string folder = fresh_folder();
  for (const char* name : {"a", "b", "c"}) {
    fs::create_directories(folder + "/classes/" + name);
    for (int i = 0; i < 4; ++i) {
      write_png(folder + "/classes/" + name + "/" + std::to_string(i) + ".png",
                pattern_image(2, 2, 3, i));
    }
  }
  const auto images = open_dataset("folder:" + folder + "/classes?classes=2,0&per_class=3&seed=1");
  EXPECT_EQ(images->size(), 6);
  EXPECT_EQ(images->num_classes(), 2);

  write_text(folder + "/classes/val200.txt", "a/1.png 0\nc/2.png 2\n");
  const auto vtab = open_dataset("vtab:" + folder + "/classes/val200");  // .txt added
  ASSERT_EQ(vtab->size(), 2);
  EXPECT_EQ(vtab->describe(1), folder + "/classes/c/2.png");
  EXPECT_EQ(open_dataset("vtab:" + folder + "/classes/val200.txt?num_classes=5")->num_classes(), 5);
  EXPECT_NE(error_of([&] {
              open_dataset("vtab:" + folder + "/classes/test");
            }).find("no VTAB list file found"),
            std::string::npos);

  write_text(folder + "/split.json", R"({"b/3.png": 1})");
  const auto fgvc = open_dataset("fgvc:" + folder + "/split.json?root=" + folder + "/classes");
  ASSERT_EQ(fgvc->size(), 1);
  EXPECT_EQ(fgvc->describe(0), folder + "/classes/b/3.png");
}

}  // namespace
}  // namespace vitune::data
