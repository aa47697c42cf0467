// Google Benchmark of the exact (erf) GELU's forward and backward ops (ops::gelu_forward,
// ops::gelu_backward) on the hidden activations of the Fashion-MNIST ViT's MLP (batch
// 128 x 50 tokens by 256) and of a ViT-B/16's (batch 8 x 197 tokens by 3072), next to a
// plain scale of the same tensor (ops::scale, one read and one write of it) that shows
// what moving the data costs. Counter: `Gfloat/s`, elements per second.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/op_benchmark_main.h"
#include "bench/random_tensor.h"
#include "engine/ops.h"

namespace {

using vitune::Tensor;
using vitune::bench::random_normal_tensor;

struct Shape {
  const char* name;
  int64_t rows, cols;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {{"fmnist", 128 * 50, 256}, {"vit_b16", 8 * 197, 3072}};
  return all;
}

template <typename Op>
void run(benchmark::State& state, const Op& op) {
  const Shape& s = shapes()[size_t(state.range(0))];
  const Tensor x = random_normal_tensor({s.rows, s.cols}, 1);
  const Tensor dy = random_normal_tensor({s.rows, s.cols}, 2);
  for (auto _ : state) benchmark::DoNotOptimize(op(x, dy));
  state.SetLabel(s.name);
  state.counters["Gfloat/s"] =
      benchmark::Counter(double(s.rows * s.cols) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_gelu_forward(benchmark::State& state) {
  run(state, [](const Tensor& x, const Tensor&) { return vitune::ops::gelu_forward(x); });
}
void BM_gelu_backward(benchmark::State& state) {
  run(state, [](const Tensor& x, const Tensor& dy) { return vitune::ops::gelu_backward(dy, x); });
}
void BM_scale(benchmark::State& state) {
  run(state, [](const Tensor& x, const Tensor&) { return vitune::ops::scale(x, 0.5); });
}

BENCHMARK(BM_gelu_forward)->DenseRange(0, 1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_gelu_backward)->DenseRange(0, 1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_scale)->DenseRange(0, 1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return vitune::bench::run_op_benchmarks(argc, argv); }
