// Tests of the CPU multi-head attention in timm's fused qkv layout, forward and
// backward: against a plain double-precision reference written here, a float64
// finite-difference check, bit-identical results for any thread count, huge scores,
// and bad shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/error.h"
#include "engine/flop_counter.h"
#include "engine/ops.h"
#include "test_util.h"

namespace {

using vitune::DType;
using vitune::Error;
using vitune::Tensor;
using vitune::testing::bitwise_equal;
using vitune::testing::random_normal;
using vitune::testing::tensors_close;
using vitune::testing::ThreadCount;
using vitune::testing::values;
namespace ops = vitune::ops;

// The seed of this suite's random tensors.
constexpr uint64_t kSeed = 13;

// Sizes of a test case and the flat index of qkv[b, n, part, h, d] (part 0/1/2 = q/k/v).
struct Dims {
  int64_t batch, tokens, heads, head_dim;
  int64_t dim() const { return heads * head_dim; }
  size_t qkv(int64_t b, int64_t n, int64_t part, int64_t h, int64_t d) const {
    return size_t(((b * tokens + n) * 3 + part) * dim() + h * head_dim + d);
  }
  size_t ctx(int64_t b, int64_t n, int64_t h, int64_t d) const {
    return size_t((b * tokens + n) * dim() + h * head_dim + d);
  }
  size_t prob(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return size_t(((b * heads + h) * tokens + i) * tokens + j);
  }
};

struct Reference {
  Tensor ctx, probs, dqkv;
};

// Attention and its gradient straight from the definitions, one element at a time.
Reference reference(const Dims& s, const Tensor& qkv_t, const Tensor& dctx_t) {
  std::vector<double> qkv = values(qkv_t), dctx = values(dctx_t);
  std::vector<double> ctx(dctx.size(), 0.0), probs(size_t(s.batch * s.heads * s.tokens * s.tokens));
  std::vector<double> dqkv(qkv.size(), 0.0);
  const double scale = 1 / std::sqrt(double(s.head_dim));
  const int64_t n = s.tokens;
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      auto q = [&](int64_t t, int64_t d) { return qkv[s.qkv(b, t, 0, h, d)]; };
      auto k = [&](int64_t t, int64_t d) { return qkv[s.qkv(b, t, 1, h, d)]; };
      auto v = [&](int64_t t, int64_t d) { return qkv[s.qkv(b, t, 2, h, d)]; };
      auto dout = [&](int64_t t, int64_t d) { return dctx[s.ctx(b, t, h, d)]; };
      std::vector<double> p(size_t(n * n)), dp(size_t(n * n)), ds(size_t(n * n));
      for (int64_t i = 0; i < n; ++i) {
        std::vector<double> scores(static_cast<size_t>(n));
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < s.head_dim; ++d) dot += q(i, d) * k(j, d);
          scores[size_t(j)] = scale * dot;
          max = std::max(max, scores[size_t(j)]);
        }
        for (int64_t j = 0; j < n; ++j) sum += std::exp(scores[size_t(j)] - max);
        for (int64_t j = 0; j < n; ++j) {
          p[size_t(i * n + j)] = std::exp(scores[size_t(j)] - max) / sum;
          probs[s.prob(b, h, i, j)] = p[size_t(i * n + j)];
        }
        for (int64_t d = 0; d < s.head_dim; ++d) {
          for (int64_t j = 0; j < n; ++j) ctx[s.ctx(b, i, h, d)] += p[size_t(i * n + j)] * v(j, d);
        }
      }
      // dP = dO V^T, dS through the full softmax Jacobian P_ik (delta_kj - P_ij).
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t d = 0; d < s.head_dim; ++d) dp[size_t(i * n + j)] += dout(i, d) * v(j, d);
        }
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t k2 = 0; k2 < n; ++k2) {
            double jacobian =
                p[size_t(i * n + k2)] * ((k2 == j ? 1.0 : 0.0) - p[size_t(i * n + j)]);
            ds[size_t(i * n + j)] += dp[size_t(i * n + k2)] * jacobian;
          }
        }
      }
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t d = 0; d < s.head_dim; ++d) {
          double dq = 0, dk = 0, dv = 0;
          for (int64_t u = 0; u < n; ++u) {
            dq += ds[size_t(t * n + u)] * k(u, d) * scale;
            dk += ds[size_t(u * n + t)] * q(u, d) * scale;
            dv += p[size_t(u * n + t)] * dout(u, d);
          }
          dqkv[s.qkv(b, t, 0, h, d)] = dq;
          dqkv[s.qkv(b, t, 1, h, d)] = dk;
          dqkv[s.qkv(b, t, 2, h, d)] = dv;
        }
      }
    }
  }
  return {Tensor::from_vector(dctx_t.shape(), ctx, vitune::Device::cpu()),
          Tensor::from_vector({s.batch, s.heads, n, n}, probs, vitune::Device::cpu()),
          Tensor::from_vector(qkv_t.shape(), dqkv, vitune::Device::cpu())};
}

void check_against_reference(const Dims& s, DType dtype, vitune::testing::Tolerance forward_tol,
                             vitune::testing::Tolerance grad_tol) {
  Tensor qkv = random_normal({s.batch, s.tokens, 3 * s.dim()}, dtype, kSeed, 1, 0, 1.5);
  Tensor dctx = random_normal({s.batch, s.tokens, s.dim()}, dtype, kSeed, 2);
  Tensor probs;
  Tensor ctx = ops::attention_forward(qkv, int(s.heads), probs);
  Tensor dqkv = ops::attention_backward(dctx, qkv, probs, int(s.heads));
  Reference ref = reference(s, qkv, dctx);
  EXPECT_EQ(ctx.dtype(), dtype);
  EXPECT_EQ(dqkv.dtype(), dtype);
  EXPECT_TRUE(tensors_close(ctx, ref.ctx, forward_tol, "ctx"));
  EXPECT_TRUE(tensors_close(probs, ref.probs, forward_tol, "probs"));
  EXPECT_TRUE(tensors_close(dqkv, ref.dqkv, grad_tol, "dqkv"));
}

TEST(AttentionTest, MatchesReferenceF32) {
  check_against_reference({2, 7, 3, 5}, DType::F32, vitune::testing::kF32Forward,
                          vitune::testing::kF32Gradient);
}

TEST(AttentionTest, MatchesReferenceF64) {
  check_against_reference({2, 7, 3, 5}, DType::F64, vitune::testing::kF64Exact,
                          vitune::testing::kF64Exact);
  check_against_reference({1, 32, 2, 24}, DType::F64, vitune::testing::kF64Exact,
                          vitune::testing::kF64Exact);
}

TEST(AttentionTest, MatchesReferenceAtSmallVitShapeF32) {
  // The test ViT's heads: 50 tokens, 4 heads of 16.
  check_against_reference({2, 50, 4, 16}, DType::F32, vitune::testing::kF32Forward,
                          vitune::testing::kF32Gradient);
}

TEST(AttentionTest, MatchesReferenceWithoutTokenPaddingF32) {
  // 32 tokens fill whole register tiles; a head of 24 does not.
  check_against_reference({1, 32, 2, 24}, DType::F32, vitune::testing::kF32Forward,
                          vitune::testing::kF32Gradient);
}

TEST(AttentionTest, MatchesReferenceWithHeadsOfWholeVectorsF32) {
  // Heads of 40 floats go through register transposes 16 columns at a time, then 8 one
  // by one; 33 tokens leave a last block of one row.
  check_against_reference({1, 33, 2, 40}, DType::F32, vitune::testing::kF32Forward,
                          vitune::testing::kF32Gradient);
}

TEST(AttentionTest, BackwardMatchesFiniteDifferencesF64) {
  const Dims s{2, 5, 2, 4};
  Tensor qkv = random_normal({2, 5, 24}, DType::F64, kSeed, 11);
  Tensor dctx = random_normal({2, 5, 8}, DType::F64, kSeed, 12);
  Tensor v = random_normal({2, 5, 24}, DType::F64, kSeed, 13);
  std::vector<double> dctx_v = values(dctx), vv = values(v);
  // L(qkv) = sum(dctx * attention(qkv)) along qkv + t v.
  auto loss_along = [&](double t) {
    std::vector<double> xs = values(qkv);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] += t * vv[i];
    Tensor probs;
    std::vector<double> ctx =
        values(ops::attention_forward(Tensor::from_vector(qkv.shape(), xs, vitune::Device::cpu()), int(s.heads), probs));
    double sum = 0;
    for (size_t i = 0; i < ctx.size(); ++i) sum += dctx_v[i] * ctx[i];
    return sum;
  };
  const double h = 1e-6;
  const double numeric = (loss_along(h) - loss_along(-h)) / (2 * h);
  Tensor probs;
  ops::attention_forward(qkv, int(s.heads), probs);
  std::vector<double> grad = values(ops::attention_backward(dctx, qkv, probs, int(s.heads)));
  double analytic = 0;
  for (size_t i = 0; i < grad.size(); ++i) analytic += grad[i] * vv[i];
  EXPECT_NEAR(numeric, analytic, 1e-6 * std::fabs(analytic));
}

TEST(AttentionTest, ResultsDoNotDependOnThreadCount) {
  Tensor qkv = random_normal({3, 33, 3 * 64}, DType::F32, kSeed, 21);
  Tensor dctx = random_normal({3, 33, 64}, DType::F32, kSeed, 22);
  struct Run {
    Tensor ctx, probs, dqkv;
  };
  auto run = [&](int threads) {
    ThreadCount scope(threads);
    Run r;
    r.ctx = ops::attention_forward(qkv, 4, r.probs);
    r.dqkv = ops::attention_backward(dctx, qkv, r.probs, 4);
    return r;
  };
  Run one = run(1);
  for (int threads : {2, 3}) {
    Run many = run(threads);
    EXPECT_TRUE(bitwise_equal(one.ctx, many.ctx)) << threads;
    EXPECT_TRUE(bitwise_equal(one.probs, many.probs)) << threads;
    EXPECT_TRUE(bitwise_equal(one.dqkv, many.dqkv)) << threads;
  }
}

TEST(AttentionTest, HugeScoresDoNotOverflow) {
  // Scores of order 1e4 over 40 keys: each softmax row must still be finite, match the
  // reference and sum to one.
  const Dims s{1, 40, 2, 4};
  Tensor qkv = random_normal({1, 40, 3 * 8}, DType::F32, kSeed, 31, 0, 100);
  Tensor probs;
  Tensor ctx = ops::attention_forward(qkv, 2, probs);
  for (double x : values(ctx)) ASSERT_TRUE(std::isfinite(x));
  std::vector<double> p = values(probs);
  for (size_t row = 0; row < p.size() / 40; ++row) {
    double sum = 0;
    for (size_t j = 0; j < 40; ++j) sum += p[row * 40 + j];
    EXPECT_NEAR(sum, 1.0, 1e-6) << row;
  }
  Tensor dctx = random_normal({1, 40, 8}, DType::F32, kSeed, 32);
  Reference ref = reference(s, qkv, dctx);
  // Scores near 1e4 carry float rounding errors near 1e-3, which the softmax passes on.
  EXPECT_TRUE(tensors_close(probs, ref.probs, {1e-3, 1e-2}, "probs"));
  Tensor dqkv = ops::attention_backward(dctx, qkv, probs, 2);
  for (double x : values(dqkv)) ASSERT_TRUE(std::isfinite(x));
}

TEST(AttentionTest, ProbabilitiesAreAccurateF32) {
  // Scores spread over several units, so that the exponentials cover a wide range; the
  // float probabilities must agree with the double reference to a few ulp of the scores.
  const Dims s{2, 40, 2, 16};
  Tensor qkv = random_normal({2, 40, 3 * 32}, DType::F32, kSeed, 37, 0, 2);
  Tensor probs;
  ops::attention_forward(qkv, 2, probs);
  Reference ref = reference(s, qkv, random_normal({2, 40, 32}, DType::F32, kSeed, 38));
  EXPECT_TRUE(tensors_close(probs, ref.probs, {1e-12, 1e-5}, "probs"));
}

TEST(AttentionTest, NanReachesTheOutputOfItsHead) {
  Tensor qkv = random_normal({1, 4, 3 * 4}, DType::F32, kSeed, 35);
  qkv.data<float>()[1] = NAN;  // query 0, head 0
  Tensor probs;
  std::vector<double> ctx = values(ops::attention_forward(qkv, 2, probs));
  EXPECT_TRUE(std::isnan(ctx[0]) && std::isnan(ctx[1]));        // token 0, head 0
  EXPECT_TRUE(std::isfinite(ctx[2]) && std::isfinite(ctx[3]));  // token 0, head 1
}

// Forward: Q K^T and P V; backward: dV, dP, dQ, dK; each 2 T T dh FLOPs per (item,
// head), so 2 B T T D per product summed over the heads.
TEST(AttentionTest, CountsTheFlopsOfItsProducts) {
  const int64_t batch = 3, tokens = 7, dim = 12;
  Tensor qkv = random_normal({batch, tokens, 3 * dim}, DType::F32, kSeed, 51);
  Tensor dctx = random_normal({batch, tokens, dim}, DType::F32, kSeed, 52);
  const int64_t product = 2 * batch * tokens * tokens * dim;
  Tensor probs;
  vitune::reset_flop_counter();
  ops::attention_forward(qkv, 3, probs);
  EXPECT_EQ(vitune::flops_counted(), 2 * product);
  vitune::reset_flop_counter();
  ops::attention_backward(dctx, qkv, probs, 3);
  EXPECT_EQ(vitune::flops_counted(), 4 * product);
  vitune::reset_flop_counter();
  EXPECT_THROW(ops::attention_forward(qkv, 5, probs), Error);  // 12 % 5: nothing ran, nothing counted
  EXPECT_EQ(vitune::flops_counted(), 0);
}

TEST(AttentionTest, BadShapesThrow) {
  Tensor probs;
  EXPECT_THROW(ops::attention_forward(Tensor::zeros({2, 5, 24}, DType::F32, vitune::Device::cpu()), 5, probs), Error);  // 8 % 5
  EXPECT_THROW(ops::attention_forward(Tensor::zeros({2, 5, 25}, DType::F32, vitune::Device::cpu()), 1, probs), Error);  // not 3*D
  EXPECT_THROW(ops::attention_forward(Tensor::zeros({10, 24}, DType::F32, vitune::Device::cpu()), 2, probs), Error);    // not 3-D
  EXPECT_THROW(ops::attention_forward(Tensor::zeros({2, 5, 24}, DType::F32, vitune::Device::cpu()), 0, probs), Error);
  EXPECT_THROW(ops::attention_forward(Tensor::zeros({2, 5, 24}, DType::I64, vitune::Device::cpu()), 2, probs), Error);
  Tensor qkv = random_normal({2, 5, 24}, DType::F32, kSeed, 41);
  ops::attention_forward(qkv, 2, probs);
  EXPECT_THROW(ops::attention_backward(Tensor::zeros({2, 5, 9}, DType::F32, vitune::Device::cpu()), qkv, probs, 2), Error);
  EXPECT_THROW(ops::attention_backward(Tensor::zeros({2, 5, 8}, DType::F64, vitune::Device::cpu()), qkv, probs, 2), Error);
  EXPECT_THROW(ops::attention_backward(Tensor::zeros({2, 5, 8}, DType::F32, vitune::Device::cpu()), qkv, probs, 4), Error);
  try {
    ops::attention_backward(Tensor::zeros({2, 5, 8}, DType::F32, vitune::Device::cpu()), qkv, Tensor::zeros({2, 2, 5, 4}, DType::F32, vitune::Device::cpu()), 2);
    ADD_FAILURE() << "a wrong probs shape was accepted";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("attention_backward"), std::string::npos) << message;
    EXPECT_NE(message.find("probs"), std::string::npos) << message;
  }
}

}  // namespace
