// Google Benchmark of multi-head attention's forward and backward ops
// (ops::attention_forward / attention_backward) at the Fashion-MNIST ViT's shape (batch
// 128, 50 tokens, dim 64, 4 heads of 16) and a ViT-B/16's (batch 8, 197 tokens, dim 768,
// 12 heads of 64). The GFLOP rate counts the two products of a head in the forward pass
// (S = Q K^T, O = P V: 4 N^2 dh flops) and the four of the backward (8 N^2 dh flops),
// over the valid tokens only.
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
  int64_t batch, tokens, dim;
  int heads;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> all = {{"fmnist", 128, 50, 64, 4}, {"vit_b16", 8, 197, 768, 12}};
  return all;
}

double head_flops(const Shape& s, double per_head) {
  return per_head * double(s.batch * s.heads) * double(s.tokens * s.tokens) * double(s.dim / s.heads);
}

void BM_attention_forward(benchmark::State& state) {
  const Shape& s = shapes()[size_t(state.range(0))];
  Tensor qkv = random_normal_tensor({s.batch, s.tokens, 3 * s.dim}, 1);
  Tensor probs;
  for (auto _ : state) benchmark::DoNotOptimize(vitune::ops::attention_forward(qkv, s.heads, probs));
  state.SetLabel(s.name);
  state.counters["GFLOP"] =
      benchmark::Counter(head_flops(s, 4.0) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_attention_backward(benchmark::State& state) {
  const Shape& s = shapes()[size_t(state.range(0))];
  Tensor qkv = random_normal_tensor({s.batch, s.tokens, 3 * s.dim}, 1);
  Tensor dctx = random_normal_tensor({s.batch, s.tokens, s.dim}, 2);
  Tensor probs;
  vitune::ops::attention_forward(qkv, s.heads, probs);
  for (auto _ : state) benchmark::DoNotOptimize(vitune::ops::attention_backward(dctx, qkv, probs, s.heads));
  state.SetLabel(s.name);
  state.counters["GFLOP"] =
      benchmark::Counter(head_flops(s, 8.0) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_attention_forward)->DenseRange(0, 1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_attention_backward)->DenseRange(0, 1)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return vitune::bench::run_op_benchmarks(argc, argv); }
