// Google Benchmark of the data loader's throughput in images per second, at 1 and 2
// background threads:
//  - fashion_mnist: Fashion-MNIST train (28x28 grey, from the Debian package
//    dataset-fashion-mnist), normalised with the "half" preset, batches of 256;
//  - jpeg_folder: a synthetic image folder of 224x224 JPEGs written on first use into
//    the system temporary folder, decoded and put through random resized crop to 224
//    (bicubic), horizontal flip and ImageNet normalisation, batches of 64.
// One benchmark iteration is one batch; the loader keeps prefetching across iterations.
#include <benchmark/benchmark.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/image_file_dataset.h"
#include "data/loader.h"
#include "data/open_dataset.h"
#include "data/transform_presets.h"
#include "data/transform_steps.h"
#include "engine/random.h"

namespace {

namespace fs = std::filesystem;
using namespace vitune::data;

constexpr int kJpegSide = 224;
constexpr int kJpegClasses = 4;
constexpr int kJpegsPerClass = 32;
constexpr int kJpegQuality = 90;

void run_loader(benchmark::State& state, const Dataset& dataset, const Transform& transform,
                int64_t batch_size) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = true;
  options.threads = int(state.range(0));
  options.prefetch_batches = 4;
  Loader loader(dataset, transform, options);
  int64_t images = 0;
  for (auto _ : state) {
    const Batch batch = loader.next();
    benchmark::DoNotOptimize(batch.images.raw());
    images += batch.images.dim(0);
  }
  state.counters["images/s"] = benchmark::Counter(double(images), benchmark::Counter::kIsRate);
}

void fashion_mnist(benchmark::State& state) {
  if (!fs::exists(std::string(kFashionMnistFolder) + "/train-images-idx3-ubyte.gz")) {
    state.SkipWithError("Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  static const std::shared_ptr<const Dataset> dataset = open_dataset("fashion-mnist:train");
  const Normalization half = normalization_preset("half");
  Transform transform;
  transform.then(std::make_shared<Normalize>(half.mean, half.std));
  run_loader(state, *dataset, transform, 256);
}

// A smooth colour pattern with some noise, so that the JPEGs are neither trivial nor
// pure noise to decode.
std::vector<uint8_t> synthetic_photo(int seed) {
  std::vector<uint8_t> pixels;
  pixels.reserve(size_t(kJpegSide) * kJpegSide * 3);
  for (int y = 0; y < kJpegSide; ++y) {
    for (int x = 0; x < kJpegSide; ++x) {
      for (int c = 0; c < 3; ++c) {
        const float noise =
            vitune::uniform01(uint64_t(seed), uint64_t(c), uint64_t(y * kJpegSide + x));
        const int value = (x * (c + 1) + y * (3 - c) + seed * 37) % 256;
        pixels.push_back(uint8_t(std::min(255, int(float(value) * 0.8f + noise * 50.0f))));
      }
    }
  }
  return pixels;
}

std::string write_jpeg_folder() {
  const fs::path folder = fs::temp_directory_path() / "vitune_bench_loader_jpegs";
  for (int c = 0; c < kJpegClasses; ++c) {
    const fs::path class_folder = folder / ("class" + std::to_string(c));
    fs::create_directories(class_folder);
    for (int i = 0; i < kJpegsPerClass; ++i) {
      const fs::path path = class_folder / (std::to_string(i) + ".jpg");
      if (fs::exists(path)) continue;
      const std::vector<uint8_t> pixels = synthetic_photo(c * kJpegsPerClass + i);
      stbi_write_jpg(path.c_str(), kJpegSide, kJpegSide, 3, pixels.data(), kJpegQuality);
    }
  }
  return folder.string();
}

void jpeg_folder(benchmark::State& state) {
  static const ImageFileDataset dataset = open_image_folder(write_jpeg_folder());
  TrainTransformOptions options;
  options.size = kJpegSide;
  options.preprocessing.interpolation = Interpolation::Bicubic;
  run_loader(state, dataset, train_transform(options), 64);
}

BENCHMARK(fashion_mnist)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(jpeg_folder)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
