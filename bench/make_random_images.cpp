// make_random_images: writes the inputs of the ViT-B/16 selection-cost and anchor
// benchmarks with vitune's own writers, so that a machine without Python can make them:
//   vit_b16_random.safetensors  a ViT-B/16 (224x224 RGB, patch 16, dim 768, depth 12,
//                               12 heads, 1000 classes) with timm's initialisation
//                               (init_weights(0)), in timm names with its vit_config
//   pre_random.bin, task_random.bin
//                               CIFAR-10 binary files of N random images each (label
//                               i % 10, then 32x32 planar RGB bytes: uniform over 0-255
//                               for the pretraining images, 40-215 for the task's),
//                               which the loader resizes to the model's 224x224
// The same file names as bench/make_random_vit_inputs.py, which needs Python.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/atomic_file.h"
#include "engine/error.h"
#include "engine/random.h"
#include "nn/checkpoint.h"
#include "nn/vit.h"

namespace {

using vitune::Error;

constexpr const char* kUsage =
    "usage: make_random_images FOLDER [N]\n"
    "Writes FOLDER/vit_b16_random.safetensors (a ViT-B/16 with timm's initialisation) and\n"
    "FOLDER/pre_random.bin, FOLDER/task_random.bin: N random 32x32 RGB images each (default\n"
    "64) in CIFAR-10's binary format, 3073 bytes per image.\n";

constexpr int64_t kPixelBytes = 3 * 32 * 32;
constexpr int64_t kMaxImages = int64_t(1) << 24;  // 51 GB per file: beyond any benchmark

// Writes `count` CIFAR-10 records to `path`: label i % 10, then pixel bytes uniform over
// [low, low + range), drawn from stream `stream` of seed 0 (four bytes per Philox block).
void write_cifar(const std::string& path, int64_t count, uint64_t stream, int low, int range) {
  vitune::write_file_atomically(path, [&](std::FILE* file) {
    std::vector<unsigned char> record(1 + kPixelBytes);
    for (int64_t i = 0; i < count; ++i) {
      record[0] = static_cast<unsigned char>(i % 10);
      for (int64_t b = 0; b < kPixelBytes; b += 4) {
        const vitune::PhiloxBlock block = vitune::philox(0, stream, uint64_t(i * kPixelBytes + b) / 4);
        for (int w = 0; w < 4; ++w) {
          const uint64_t scaled = (uint64_t(block.word[w]) * uint64_t(range)) >> 32;  // in [0, range)
          record[size_t(1 + b + w)] = static_cast<unsigned char>(low + int(scaled));
        }
      }
      VITUNE_CHECK(std::fwrite(record.data(), 1, record.size(), file) == record.size(), "make_random_images: ",
                   path, ": write failed after ", i, " of ", count, " images");
    }
  });
  std::printf("%s: %lld images, %lld bytes\n", path.c_str(), (long long)count,
              (long long)(count * (1 + kPixelBytes)));
}

int64_t parse_count(const std::string& text) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  VITUNE_CHECK(!text.empty() && *end == '\0' && value >= 1 && value <= kMaxImages, "make_random_images: N '",
               text, "': expected an integer from 1 to ", kMaxImages);
  return value;
}

void run(const std::string& folder, int64_t count) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  VITUNE_CHECK(!error, "make_random_images: cannot create folder ", folder, ": ", error.message());
  const vitune::nn::VitConfig vit_b16;  // the defaults are ViT-B/16 at 224
  vitune::nn::VisionTransformer model(vit_b16, vitune::Device::cpu());
  model.init_weights(0);
  const std::string model_path = folder + "/vit_b16_random.safetensors";
  vitune::nn::save_vit(model_path, model);
  std::printf("%s: ViT-B/16, %lld parameters\n", model_path.c_str(), (long long)model.parameter_count());
  write_cifar(folder + "/pre_random.bin", count, 1, 0, 256);
  write_cifar(folder + "/task_random.bin", count, 2, 40, 176);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "--help" || first == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc < 2 || argc > 3 || first.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    run(first, argc == 3 ? parse_count(argv[2]) : 64);
  } catch (const Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
