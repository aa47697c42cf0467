// Google Benchmark of a linear layer's weight gradient at a sparse selection
// (ops::masked_weight_grad) against the dense one (ops::gemm, dW += dY^T x), at the
// layer shapes of the Fashion-MNIST ViT (batch 128: T = 128 * 50 token rows; dim 64,
// hidden 256) and of a ViT-B/16 (batch 8: T = 8 * 197; dim 768, hidden 3072), with
// k = 1, 4 or 8 entries selected per row of W (entry (j, (7 j + 131 m) mod in), m < k).
// Reports GFLOP/s of the work done and, for the masked case, `dense_fraction`: its time
// over the dense product's measured just before it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/op_benchmark_main.h"
#include "bench/random_tensor.h"
#include "engine/ops.h"

namespace {

using vitune::Tensor;
using vitune::bench::random_normal_tensor;

struct Layer {
  const char* name;
  int64_t tokens, in, out;
};

const std::vector<Layer>& layers() {
  static const std::vector<Layer> all = {
      {"fmnist/qkv", 6400, 64, 192},       {"fmnist/proj", 6400, 64, 64},
      {"fmnist/fc1", 6400, 64, 256},       {"fmnist/fc2", 6400, 256, 64},
      {"vit_b16/qkv", 1576, 768, 2304},    {"vit_b16/proj", 1576, 768, 768},
      {"vit_b16/fc1", 1576, 768, 3072},    {"vit_b16/fc2", 1576, 3072, 768},
  };
  return all;
}

Tensor selection(const Layer& layer, int64_t per_row) {
  std::vector<int64_t> indices;
  for (int64_t j = 0; j < layer.out; ++j) {
    std::vector<int64_t> row;
    for (int64_t m = 0; m < per_row; ++m) row.push_back(j * layer.in + (7 * j + 131 * m) % layer.in);
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    indices.insert(indices.end(), row.begin(), row.end());
  }
  return Tensor::from_vector<int64_t>({int64_t(indices.size())}, indices, vitune::Device::cpu());
}

// Arguments: the layer's position in layers(), and k (0: the dense product).
void BM_weight_grad(benchmark::State& state) {
  const Layer& layer = layers()[size_t(state.range(0))];
  const int64_t per_row = state.range(1);
  Tensor x = random_normal_tensor({layer.tokens, layer.in}, 1);
  Tensor dy = random_normal_tensor({layer.tokens, layer.out}, 2);
  Tensor dense = Tensor::zeros({layer.out, layer.in}, vitune::DType::F32, vitune::Device::cpu());
  auto dense_product = [&] { vitune::ops::gemm(true, false, 1.0, dy, x, 1.0, dense); };
  // The dense case (k = 0) times the dense product alone; the selection is made anyway.
  Tensor indices = selection(layer, per_row > 0 ? per_row : 1);
  Tensor sparse = Tensor::zeros({indices.numel()}, vitune::DType::F32, vitune::Device::cpu());
  auto masked_product = [&] { vitune::ops::masked_weight_grad(dy, x, indices, layer.in, sparse); };
  using Clock = std::chrono::steady_clock;
  double dense_seconds = 0, own_seconds = 0;
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    dense_product();
    const Clock::time_point t1 = Clock::now();
    if (per_row > 0) masked_product();
    const Clock::time_point t2 = Clock::now();
    const double own = std::chrono::duration<double>(per_row > 0 ? t2 - t1 : t1 - t0).count();
    dense_seconds += std::chrono::duration<double>(t1 - t0).count();
    own_seconds += own;
    state.SetIterationTime(own);
  }
  const double entries = per_row > 0 ? double(indices.numel()) : double(layer.out * layer.in);
  state.SetLabel(std::string(layer.name) + (per_row > 0 ? " k=" + std::to_string(per_row) : " dense"));
  state.counters["GFLOP/s"] = 2.0 * double(layer.tokens) * entries * double(state.iterations()) / 1e9 / own_seconds;
  if (per_row > 0) state.counters["dense_fraction"] = own_seconds / dense_seconds;
}

void layer_arguments(benchmark::internal::Benchmark* b) {
  for (int64_t i = 0; i < int64_t(layers().size()); ++i) {
    for (int64_t k : {0, 1, 4, 8}) b->Args({i, k});
  }
}

BENCHMARK(BM_weight_grad)->Apply(layer_arguments)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return vitune::bench::run_op_benchmarks(argc, argv); }
