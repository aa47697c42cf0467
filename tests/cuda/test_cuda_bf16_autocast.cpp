// bf16 autocast on the GPU (cuBLAS with bf16 operands and fp32 accumulation) against the
// host's emulation (operands rounded to bf16 values, fp32 kernel): round_to_bf16 bit for
// bit on edge values; gemm and gemm_batched in every transpose combination, with beta 0
// over a NaN-filled output, an empty inner dimension and folded leading dimensions, at
// fp32 tolerance (only the order of the fp32 accumulation differs); and one training
// step of a small ViT under autocast, close to the host's autocast step and clearly
// apart from the fp32 step (so autocast acts on the GPU).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/autocast.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "nn/optimizer.h"
#include "nn/vit.h"
#include "op_harness.h"
#include "small_vit.h"

namespace vitune::testing {
namespace {

class CudaBf16Autocast : public CudaTest {};

TEST_F(CudaBf16Autocast, RoundToBf16MatchesTheHostBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = uniform({4096}, DType::F32, 300, -100, 100);
  const std::vector<float> edges = {0.0f, -0.0f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f,
                                    std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                                    std::numeric_limits<float>::min(), inf, -inf,
                                    std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; i < edges.size(); ++i) x.data<float>()[i] = edges[i];
  EXPECT_TRUE(gpu_matches_cpu("round_to_bf16", {x}, kExact, [](OpArgs& a) {
    return OpOutputs().tensor("rounded", ops::round_to_bf16(a[0]));
  }));
  EXPECT_TRUE(both_refuse("round_to_bf16 f64", {uniform({3}, DType::F64, 301)},
                          [](OpArgs& a) { return OpOutputs().tensor("rounded", ops::round_to_bf16(a[0])); }));
}

void check_gemm(int64_t m, int64_t n, int64_t k, bool ta, bool tb, double beta, uint64_t stream) {
  Tensor a = uniform(ta ? Shape{k, m} : Shape{m, k}, DType::F32, stream);
  Tensor b = uniform(tb ? Shape{n, k} : Shape{k, n}, DType::F32, stream + 1);
  Tensor c = uniform({m, n}, DType::F32, stream + 2);
  if (beta == 0) c.fill(std::nan(""));
  AutocastBf16Scope autocast;
  EXPECT_TRUE(gpu_matches_cpu(cat("bf16 gemm m ", m, " n ", n, " k ", k, ta ? " a^T" : "", tb ? " b^T" : "",
                                  " beta ", beta),
                              {a, b, c}, summed(std::max<int64_t>(k, 1)).f32, [=](OpArgs& x) {
                                ops::gemm(ta, tb, 1.25, x[0], x[1], beta, x[2]);
                                return OpOutputs();
                              }));
}

TEST_F(CudaBf16Autocast, GemmMatchesTheHostEmulation) {
  struct Mnk {
    int64_t m, n, k;
  };
  for (Mnk s : {Mnk{1, 1, 1}, Mnk{5, 7, 3}, Mnk{33, 17, 65}, Mnk{394, 768, 192}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (double beta : {0.0, 0.5}) check_gemm(s.m, s.n, s.k, ta, tb, beta, 310);
      }
    }
  }
  check_gemm(6, 5, 0, false, false, 0.5, 320);  // empty inner dimension: c = beta c
  check_gemm(0, 5, 4, false, true, 1.0, 330);   // no rows
}

TEST_F(CudaBf16Autocast, GemmFoldsLeadingDimensionsLikeTheHost) {
  Tensor a = uniform({2, 9, 40}, DType::F32, 340), b = uniform({24, 40}, DType::F32, 341);
  Tensor c = uniform({2, 9, 24}, DType::F32, 342);
  AutocastBf16Scope autocast;
  EXPECT_TRUE(gpu_matches_cpu("bf16 gemm folded", {a, b, c}, summed(40).f32, [](OpArgs& x) {
    ops::gemm(false, true, 1.0, x[0], x[1], 1.0, x[2]);
    return OpOutputs();
  }));
}

TEST_F(CudaBf16Autocast, GemmBatchedMatchesTheHostEmulation) {
  const int64_t stack = 4, m = 19, n = 23, k = 64;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (double beta : {0.0, 1.0}) {
        Tensor a = uniform(ta ? Shape{stack, k, m} : Shape{stack, m, k}, DType::F32, 350);
        Tensor b = uniform(tb ? Shape{stack, n, k} : Shape{stack, k, n}, DType::F32, 351);
        Tensor c = uniform({stack, m, n}, DType::F32, 352);
        if (beta == 0) c.fill(std::nan(""));
        AutocastBf16Scope autocast;
        EXPECT_TRUE(gpu_matches_cpu(cat("bf16 gemm_batched", ta ? " a^T" : "", tb ? " b^T" : "", " beta ", beta),
                                    {a, b, c}, summed(k).f32, [=](OpArgs& x) {
                                      ops::gemm_batched(ta, tb, 0.75, x[0], x[1], beta, x[2]);
                                      return OpOutputs();
                                    }));
      }
    }
  }
}

// What one step produced, copied to the host.
struct StepResult {
  Tensor logits;
  double loss = 0;
  std::vector<Tensor> values;  // per parameter, after the SGD step
};

StepResult one_step(Device device, bool autocast) {
  AutocastBf16Scope scope(autocast);
  nn::VisionTransformer model(small_vit_config(3, 32, 2), Device::cpu());
  model.init_weights(3407);
  model.to(device);
  Tensor images({6, 3, 8, 8}, DType::F32, Device::cpu());
  fill_normal(images, 11, 0, 0.0, 1.0);
  std::vector<int64_t> labels(6);
  for (int64_t i = 0; i < 6; ++i) labels[size_t(i)] = i % 3;
  autograd::Variable logits = model.forward(autograd::Variable(images.to(device)));
  autograd::Variable loss = autograd::cross_entropy(logits, Tensor::from_vector<int64_t>({6}, labels, Device::cpu()).to(device), 0.1);
  autograd::backward(loss);
  nn::Sgd sgd(model.parameters(), {0.05, 0.9, 1e-4, false});
  sgd.step();
  StepResult result;
  result.logits = logits.value().to(Device::cpu());
  result.loss = loss.value().item(0);
  for (nn::Parameter* p : model.parameters()) result.values.push_back(p->value().to(Device::cpu()));
  return result;
}

// The two sides round the same operands to bf16 except where an fp32 accumulation-order
// difference upstream moves a value across a bf16 rounding boundary (rare, and then by
// one bf16 ulp of one term): far tighter than the bf16-versus-fp32 difference.
constexpr Tolerance kAutocastStep{1e-3, 1e-2};

TEST_F(CudaBf16Autocast, ATrainingStepMatchesTheHostAutocastStep) {
  const StepResult host = one_step(Device::cpu(), true);
  const StepResult device = one_step(gpu(), true);
  const StepResult host_fp32 = one_step(Device::cpu(), false);
  EXPECT_TRUE(tensors_close(device.logits, host.logits, kAutocastStep, "logits"));
  EXPECT_NEAR(device.loss, host.loss, kAutocastStep.abs + kAutocastStep.rel * host.loss);
  ASSERT_EQ(device.values.size(), host.values.size());
  for (size_t i = 0; i < host.values.size(); ++i) {
    EXPECT_TRUE(tensors_close(device.values[i], host.values[i], kAutocastStep, cat("parameter ", i, " after the step")));
  }
  const double apart_from_host = max_difference(device.logits, host.logits);
  const double apart_from_fp32 = max_difference(device.logits, host_fp32.logits);
  EXPECT_GT(apart_from_fp32, 5 * apart_from_host) << "autocast " << apart_from_host << ", fp32 " << apart_from_fp32;
}

}  // namespace
}  // namespace vitune::testing
