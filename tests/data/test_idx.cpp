// IDX datasets: raw and gzipped files written here, and every malformed-file error.
#include <gtest/gtest.h>

#include "data/idx_dataset.h"
#include "data_test_files.h"

namespace vitune::data {
namespace {

using testing::error_of;
using testing::fresh_folder;
using testing::idx_images_bytes;
using testing::idx_labels_bytes;
using testing::write_bytes;
using testing::write_gzip;

// Three 2x3 images whose pixel p of image i is 10 * i + p, labels 4, 0, 2.
std::vector<uint8_t> three_images() {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < 3; ++i) {
    for (int p = 0; p < 6; ++p) pixels.push_back(uint8_t(10 * i + p));
  }
  return idx_images_bytes(3, 2, 3, pixels);
}
const std::vector<uint8_t> kLabels = {4, 0, 2};

void expect_three_images(const IdxDataset& dataset) {
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.num_classes(), 5);
  EXPECT_EQ(dataset.label(0), 4);
  EXPECT_EQ(dataset.label(1), 0);
  EXPECT_EQ(dataset.label(2), 2);
  // The format fixes every image's size, and says so (commands check it against the model).
  ASSERT_TRUE(dataset.fixed_size().has_value());
  EXPECT_TRUE(*dataset.fixed_size() == (ImageSize{2, 3}));
  const Image image = dataset.load(2);
  EXPECT_EQ(image.height, 2);
  EXPECT_EQ(image.width, 3);
  EXPECT_EQ(image.channels, 1);
  EXPECT_EQ(image.pixels, (std::vector<uint8_t>{20, 21, 22, 23, 24, 25}));
  EXPECT_EQ(image.at(1, 0, 0), 23);
}

TEST(IdxDataset, ReadsRawFiles) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/images", three_images());
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  const IdxDataset dataset(folder + "/images", folder + "/labels");
  expect_three_images(dataset);
  EXPECT_EQ(dataset.describe(1), folder + "/images record 1");
  EXPECT_THROW(dataset.load(3), Error);
  EXPECT_THROW(dataset.label(-1), Error);
}

TEST(IdxDataset, ReadsGzippedFiles) {
  const std::string folder = fresh_folder();
  write_gzip(folder + "/images.gz", three_images());
  write_gzip(folder + "/labels.gz", idx_labels_bytes(kLabels));
  expect_three_images(IdxDataset(folder + "/images.gz", folder + "/labels.gz"));
}

TEST(IdxDataset, GivenClassCountIsKeptAndChecked) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/images", three_images());
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  EXPECT_EQ(IdxDataset(folder + "/images", folder + "/labels", 10).num_classes(), 10);
  const std::string message =
      error_of([&] { IdxDataset(folder + "/images", folder + "/labels", 4); });
  EXPECT_NE(message.find("label 4 of record 0 is out of range for 4 classes"), std::string::npos)
      << message;
}

TEST(IdxDataset, TruncatedImagesFileNamesFileAndSizes) {
  const std::string folder = fresh_folder();
  std::vector<uint8_t> images = three_images();
  images.resize(images.size() - 1);
  write_bytes(folder + "/images", images);
  write_gzip(folder + "/images.gz", images);
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  for (const std::string name : {"/images", "/images.gz"}) {
    const std::string message = error_of([&] { IdxDataset(folder + name, folder + "/labels"); });
    EXPECT_NE(message.find(folder + name), std::string::npos) << message;
    EXPECT_NE(
        message.find("3 images of 2x3 need 3 * 6 bytes after the header, found 17 (truncated)"),
        std::string::npos)
        << message;
  }
}

TEST(IdxDataset, TruncatedGzipStreamIsAnError) {
  const std::string folder = fresh_folder();
  write_gzip(folder + "/images.gz", three_images());
  std::vector<uint8_t> gz;
  {
    std::FILE* file = std::fopen((folder + "/images.gz").c_str(), "rb");
    ASSERT_NE(file, nullptr);
    for (int c; (c = std::fgetc(file)) != EOF;) gz.push_back(uint8_t(c));
    std::fclose(file);
  }
  gz.resize(gz.size() / 2);
  write_bytes(folder + "/cut.gz", gz);
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  const std::string message = error_of([&] { IdxDataset(folder + "/cut.gz", folder + "/labels"); });
  EXPECT_NE(message.find("file " + folder + "/cut.gz: truncated gzip data"), std::string::npos)
      << message;
}

TEST(IdxDataset, TrailingBytesAreAnError) {
  const std::string folder = fresh_folder();
  std::vector<uint8_t> images = three_images();
  images.push_back(0);
  write_bytes(folder + "/images", images);
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  const std::string message = error_of([&] { IdxDataset(folder + "/images", folder + "/labels"); });
  EXPECT_NE(message.find("found 19 (trailing bytes)"), std::string::npos) << message;
}

TEST(IdxDataset, WrongMagicNamesFileAndExpectedMagic) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/images", three_images());
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  // The files swapped: each has the other's magic number.
  const std::string swapped = error_of([&] { IdxDataset(folder + "/labels", folder + "/images"); });
  EXPECT_NE(swapped.find("IDX images file " + folder +
                         "/labels: magic number 0x00000801, "
                         "expected 0x00000803"),
            std::string::npos)
      << swapped;
  std::vector<uint8_t> labels = idx_labels_bytes(kLabels);
  labels[2] = 0x0d;  // float elements
  write_bytes(folder + "/float_labels", labels);
  const std::string wrong =
      error_of([&] { IdxDataset(folder + "/images", folder + "/float_labels"); });
  EXPECT_NE(wrong.find("magic number 0x00000d01, expected 0x00000801"), std::string::npos) << wrong;
}

TEST(IdxDataset, LabelCountMismatchNamesBothFiles) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/images", three_images());
  write_bytes(folder + "/labels", idx_labels_bytes({1, 2}));
  const std::string message = error_of([&] { IdxDataset(folder + "/images", folder + "/labels"); });
  EXPECT_NE(message.find("IDX labels file " + folder + "/labels: 2 labels, but the images file " +
                         folder + "/images has 3 images"),
            std::string::npos)
      << message;
}

TEST(IdxDataset, ShortOrMissingFilesAreErrors) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/short", {0, 0, 8, 3, 0, 0});
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  const std::string short_file =
      error_of([&] { IdxDataset(folder + "/short", folder + "/labels"); });
  EXPECT_NE(short_file.find("6 bytes is too short for its 16-byte header"), std::string::npos)
      << short_file;
  const std::string missing = error_of([&] { IdxDataset(folder + "/none", folder + "/labels"); });
  EXPECT_NE(missing.find(folder + "/none"), std::string::npos) << missing;
}

TEST(IdxDataset, ZeroSizedImagesAreAnError) {
  const std::string folder = fresh_folder();
  write_bytes(folder + "/images", idx_images_bytes(3, 0, 3, {}));
  write_bytes(folder + "/labels", idx_labels_bytes(kLabels));
  const std::string message = error_of([&] { IdxDataset(folder + "/images", folder + "/labels"); });
  EXPECT_NE(message.find("image size 0x3"), std::string::npos) << message;
}

}  // namespace
}  // namespace vitune::data
