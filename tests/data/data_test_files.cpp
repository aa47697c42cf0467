// The test file writers (and the one stb_image_write implementation of the tests).
#include "data_test_files.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace vitune::data::testing {

namespace fs = std::filesystem;

namespace {

// The folders made by fresh_folder(), removed when the test program exits.
struct MadeFolders {
  std::vector<fs::path> paths;
  ~MadeFolders() {
    std::error_code ignored;
    for (const fs::path& path : paths) fs::remove_all(path, ignored);
  }
};

}  // namespace

std::string fresh_folder() {
  static MadeFolders made;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path folder =
      fs::path(::testing::TempDir()) / (std::string("vitune_data_") + info->test_suite_name() +
                                        "_" + info->name() + "_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  made.paths.push_back(folder);
  return folder.string();
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot open " + path);
  const int written = gzwrite(file, bytes.data(), unsigned(bytes.size()));
  gzclose(file);
  if (written != int(bytes.size())) throw std::runtime_error("cannot write " + path);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

namespace {

void append_u32(std::vector<uint8_t>& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(uint8_t(value >> shift));
}

}  // namespace

std::vector<uint8_t> idx_images_bytes(uint32_t count, uint32_t rows, uint32_t cols,
                                      const std::vector<uint8_t>& pixels) {
  std::vector<uint8_t> bytes;
  append_u32(bytes, 0x00000803);
  append_u32(bytes, count);
  append_u32(bytes, rows);
  append_u32(bytes, cols);
  bytes.insert(bytes.end(), pixels.begin(), pixels.end());
  return bytes;
}

std::vector<uint8_t> idx_labels_bytes(const std::vector<uint8_t>& labels) {
  std::vector<uint8_t> bytes;
  append_u32(bytes, 0x00000801);
  append_u32(bytes, uint32_t(labels.size()));
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

uint8_t pixel_value(int seed, int y, int x, int c) {
  return uint8_t((seed * 97 + y * 31 + x * 7 + c * 50) % 256);
}

std::vector<uint8_t> cifar_record(int label, int coarse_label, bool cifar100, int record_seed) {
  std::vector<uint8_t> bytes;
  if (cifar100) bytes.push_back(uint8_t(coarse_label));
  bytes.push_back(uint8_t(label));
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) bytes.push_back(pixel_value(record_seed, y, x, c));
    }
  }
  return bytes;
}

Image pattern_image(int height, int width, int channels, int seed) {
  Image image{height, width, channels, {}};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) image.pixels.push_back(pixel_value(seed, y, x, c));
    }
  }
  return image;
}

void write_png(const std::string& path, const Image& image) {
  if (!stbi_write_png(path.c_str(), image.width, image.height, image.channels, image.pixels.data(),
                      image.width * image.channels)) {
    throw std::runtime_error("cannot write " + path);
  }
}

void write_jpg(const std::string& path, const Image& image) {
  if (!stbi_write_jpg(path.c_str(), image.width, image.height, image.channels, image.pixels.data(),
                      95)) {
    throw std::runtime_error("cannot write " + path);
  }
}

}  // namespace vitune::data::testing
