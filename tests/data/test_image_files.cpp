// Image folders, VTAB-1k list files and FGVC json splits over PNG and JPEG files
// written here; decoding and the errors for bad files and bad list entries.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "data/image_decode.h"
#include "data/image_file_dataset.h"
#include "data_test_files.h"

namespace vitune::data {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using testing::fresh_folder;
using testing::pattern_image;
using testing::write_bytes;
using testing::write_jpg;
using testing::write_png;
using testing::write_text;

TEST(ImageDecode, PngRoundTripsExactlyAndJpegClosely) {
  const std::string folder = fresh_folder();
  const Image rgb = pattern_image(5, 7, 3, 1);
  const Image grey = pattern_image(4, 3, 1, 2);
  write_png(folder + "/rgb.png", rgb);
  write_png(folder + "/grey.png", grey);
  const Image rgb_back = read_image_file(folder + "/rgb.png");
  EXPECT_EQ(rgb_back.height, 5);
  EXPECT_EQ(rgb_back.width, 7);
  EXPECT_EQ(rgb_back.channels, 3);
  EXPECT_EQ(rgb_back.pixels, rgb.pixels);
  const Image grey_back = read_image_file(folder + "/grey.png");
  EXPECT_EQ(grey_back.channels, 1);
  EXPECT_EQ(grey_back.pixels, grey.pixels);

  // A flat colour survives JPEG compression within a few levels.
  Image flat{16, 16, 3, {}};
  for (int p = 0; p < 16 * 16; ++p) flat.pixels.insert(flat.pixels.end(), {200, 100, 50});
  write_jpg(folder + "/flat.jpg", flat);
  const Image flat_back = read_image_file(folder + "/flat.jpg");
  ASSERT_EQ(flat_back.pixels.size(), flat.pixels.size());
  for (size_t i = 0; i < flat.pixels.size(); ++i) {
    EXPECT_NEAR(flat_back.pixels[i], flat.pixels[i], 3) << "byte " << i;
  }
}

TEST(ImageDecode, AlphaIsDropped) {
  const std::string folder = fresh_folder();
  write_png(folder + "/rgba.png", pattern_image(3, 2, 4, 3));
  write_png(folder + "/grey_alpha.png", pattern_image(3, 2, 2, 4));
  const Image rgba = read_image_file(folder + "/rgba.png");
  EXPECT_EQ(rgba.channels, 3);
  EXPECT_EQ(rgba.at(2, 1, 2), testing::pixel_value(3, 2, 1, 2));
  EXPECT_EQ(read_image_file(folder + "/grey_alpha.png").channels, 1);
}

TEST(ImageDecode, CorruptEmptyOrMissingFileNamesTheFile) {
  const std::string folder = fresh_folder();
  write_text(folder + "/text.png", "this is not an image");
  write_bytes(folder + "/empty.jpg", {});
  write_png(folder + "/cut.png", pattern_image(20, 20, 3, 0));
  fs::resize_file(folder + "/cut.png", 60);
  for (const char* name : {"/text.png", "/empty.jpg", "/cut.png", "/missing.png"}) {
    const std::string path = folder + name;
    try {
      read_image_file(path);
      ADD_FAILURE() << path << " decoded";
    } catch (const BadImageError& error) {
      EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
    }
  }
}

TEST(ImageFolder, ClassesAreSortedSubfoldersAndFilesSortedPaths) {
  const std::string folder = fresh_folder();
  for (const char* sub : {"/zebra", "/ant", "/moth/nested"}) fs::create_directories(folder + sub);
  write_png(folder + "/zebra/b.png", pattern_image(4, 4, 3, 10));
  write_png(folder + "/zebra/a.PNG", pattern_image(4, 4, 3, 11));
  write_jpg(folder + "/ant/x.JPeg", pattern_image(4, 4, 3, 12));
  write_text(folder + "/ant/notes.txt", "not an image");
  write_png(folder + "/moth/nested/deep.png", pattern_image(4, 4, 1, 13));
  write_png(folder + "/moth/c.jpg", pattern_image(4, 4, 3, 14));  // PNG bytes, .jpg name
  write_png(folder + "/stray.png", pattern_image(4, 4, 3, 15));   // not in a class folder

  const ImageFileDataset dataset = open_image_folder(folder);
  ASSERT_EQ(dataset.size(), 5);
  EXPECT_EQ(dataset.num_classes(), 3);
  EXPECT_FALSE(dataset.fixed_size().has_value());  // files may differ: resized as a matter of course
  const std::vector<std::pair<std::string, int64_t>> expected = {{"/ant/x.JPeg", 0},
                                                                 {"/moth/c.jpg", 1},
                                                                 {"/moth/nested/deep.png", 1},
                                                                 {"/zebra/a.PNG", 2},
                                                                 {"/zebra/b.png", 2}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(dataset.describe(int64_t(i)), folder + expected[i].first);
    EXPECT_EQ(dataset.label(int64_t(i)), expected[i].second);
  }
  EXPECT_EQ(dataset.load(4).pixels, pattern_image(4, 4, 3, 10).pixels);
  EXPECT_EQ(dataset.load(2).channels, 1);
}

TEST(ImageFolder, EmptyClassOrNoClassesIsAnError) {
  const std::string folder = fresh_folder();
  EXPECT_NE(error_of([&] { open_image_folder(folder); }).find("no class subfolders"),
            std::string::npos);
  fs::create_directories(folder + "/cat");
  fs::create_directories(folder + "/dog");
  write_png(folder + "/dog/d.png", pattern_image(2, 2, 3, 0));
  EXPECT_NE(error_of([&] {
              open_image_folder(folder);
            }).find("class folder cat has no .jpg, .jpeg or .png files"),
            std::string::npos);
  EXPECT_NE(error_of([&] { open_image_folder(folder + "/none"); }).find("not a directory"),
            std::string::npos);
}

// root/images/{0,1,2}.png and a list file of the given text.
std::string vtab_fixture(const std::string& list_text) {
  const std::string folder = fresh_folder();
  fs::create_directories(folder + "/images");
  for (int i = 0; i < 3; ++i) {
    write_png(folder + "/images/" + std::to_string(i) + ".png", pattern_image(3, 3, 3, i));
  }
  write_text(folder + "/train800.txt", list_text);
  return folder;
}

TEST(VtabList, ReadsPathsAndLabelsSkippingBlankLines) {
  const std::string root =
      vtab_fixture("images/2.png 4\n\n  \nimages/0.png 1\r\nimages/1.png\t0\n");
  const ImageFileDataset dataset = open_vtab_list(root + "/train800.txt", root);
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.num_classes(), 5);
  EXPECT_EQ(dataset.label(0), 4);
  EXPECT_EQ(dataset.label(1), 1);
  EXPECT_EQ(dataset.label(2), 0);
  EXPECT_EQ(dataset.describe(0), root + "/images/2.png");
  EXPECT_EQ(dataset.load(0).pixels, pattern_image(3, 3, 3, 2).pixels);
  EXPECT_EQ(open_vtab_list(root + "/train800.txt", root, 7).num_classes(), 7);
}

TEST(VtabList, BadLinesNameTheListFileAndLine) {
  const struct {
    const char* text;
    const char* expected;
  } cases[] = {
      {"images/0.png 1\nimages/1.png\n", "line 2: \"images/1.png\" has no label"},
      {"images/0.png -1\n", "line 1: label \"-1\" is not a non-negative integer"},
      {"\nimages/0.png 1.5\n", "line 2: label \"1.5\" is not a non-negative integer"},
      {"images/0.png 1\nimages/9.png 0\n", "line 2: image file "},
  };
  for (const auto& c : cases) {
    const std::string root = vtab_fixture(c.text);
    const std::string message = error_of([&] { open_vtab_list(root + "/train800.txt", root); });
    EXPECT_NE(message.find("VTAB list file " + root + "/train800.txt " + c.expected),
              std::string::npos)
        << message;
  }
  const std::string root = vtab_fixture("images/0.png 1\nimages/1.png 3\n");
  EXPECT_NE(error_of([&] {
              open_vtab_list(root + "/train800.txt", root, 3);
            }).find("line 2: label 3 is out of range for 3 classes"),
            std::string::npos);
}

TEST(FgvcJson, ReadsSplitInKeyOrder) {
  const std::string folder = fresh_folder();
  fs::create_directories(folder + "/images/b");
  write_png(folder + "/images/b/1.png", pattern_image(2, 2, 3, 1));
  write_png(folder + "/images/a.png", pattern_image(2, 2, 3, 2));
  write_text(folder + "/train.json", R"({"b/1.png": 3, "a.png": 0})");
  const ImageFileDataset dataset = open_fgvc_json(folder + "/train.json", folder + "/images");
  ASSERT_EQ(dataset.size(), 2);
  EXPECT_EQ(dataset.describe(0), folder + "/images/a.png");
  EXPECT_EQ(dataset.label(0), 0);
  EXPECT_EQ(dataset.label(1), 3);
  EXPECT_EQ(dataset.num_classes(), 4);

  write_text(folder + "/float.json", R"({"a.png": 1.5})");
  EXPECT_NE(error_of([&] {
              open_fgvc_json(folder + "/float.json", folder + "/images");
            }).find("the class of \"a.png\" is 1.5, expected a non-negative integer"),
            std::string::npos);
  write_text(folder + "/missing.json", R"({"c.png": 1})");
  EXPECT_NE(error_of([&] { open_fgvc_json(folder + "/missing.json", folder + "/images"); })
                .find("FGVC json file " + folder + "/missing.json: image file " + folder +
                      "/images/c.png (for key \"c.png\") does not exist"),
            std::string::npos);
  write_text(folder + "/list.json", R"(["a.png"])");
  EXPECT_NE(
      error_of([&] { open_fgvc_json(folder + "/list.json", folder); }).find("expected an object"),
      std::string::npos);
  write_text(folder + "/broken.json", R"({"a.png": )");
  EXPECT_NE(
      error_of([&] { open_fgvc_json(folder + "/broken.json", folder); }).find("not valid JSON"),
      std::string::npos);
}

}  // namespace
}  // namespace vitune::data
