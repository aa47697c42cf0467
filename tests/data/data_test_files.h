// Helpers for the data tests: a fresh folder per test, and writers for the small files
// the tests read back (raw and gzipped bytes, IDX files, CIFAR records, PNG and JPEG
// images, text files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"
#include "engine/error.h"

namespace vitune::data::testing {

// The message of the vitune::Error that `run` throws ("" when it throws none).
template <typename Run>
std::string error_of(Run run) {
  try {
    run();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

// An empty folder under the test temporary directory, named after the running test
// and the process; removed when the test program exits.
std::string fresh_folder();

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);

// IDX file contents: count images of rows x cols (pixels in order), and labels.
std::vector<uint8_t> idx_images_bytes(uint32_t count, uint32_t rows, uint32_t cols,
                                      const std::vector<uint8_t>& pixels);
std::vector<uint8_t> idx_labels_bytes(const std::vector<uint8_t>& labels);

// A CIFAR record: (coarse label,) label, then the R, G and B planes of a 32x32 image
// whose pixel (y, x, c) is pixel_value(record_seed, y, x, c).
std::vector<uint8_t> cifar_record(int label, int coarse_label, bool cifar100, int record_seed);
uint8_t pixel_value(int seed, int y, int x, int c);

// An image whose pixel (y, x, c) is pixel_value(seed, y, x, c).
Image pattern_image(int height, int width, int channels, int seed);
void write_png(const std::string& path, const Image& image);
void write_jpg(const std::string& path, const Image& image);

}  // namespace vitune::data::testing
