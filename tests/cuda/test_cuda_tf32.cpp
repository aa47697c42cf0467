// The --tf32 switch (cuda::set_tf32): with it on, f32 products -- gemm, gemm_batched and
// attention's own products -- stay within the TF32 error bound of the fp32 host result
// and differ from the GPU's fp32 result (so tensor-core TF32 really ran); f64 products
// are untouched; and switching it off gives back the fp32 results bit for bit.
//
// The bound: TF32 keeps 10 of f32's 23 mantissa bits, so each operand is off by at most
// 2^-10 of itself (truncated or rounded), a product by at most about 2^-9 |a b|, and a
// sum of K products by 2^-9 sum |a b| plus the fp32 accumulation's K 2^-24 sum |a b|.
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "engine/devices.h"
#include "engine/ops.h"
#include "op_harness.h"

namespace vitune::testing {
namespace {

class CudaTf32 : public CudaTest {
 protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (const char* env = std::getenv("NVIDIA_TF32_OVERRIDE")) {
      if (std::string(env) == "0") GTEST_SKIP() << "NVIDIA_TF32_OVERRIDE=0 turns TF32 off for the whole process";
    }
  }
  void TearDown() override { cuda::set_tf32(false); }
};

// |a| |b| summed over the inner dimension, per element of a [M, K] @ b [K, N] (host f32).
Tensor abs_product_sums(const Tensor& a, const Tensor& b) {
  const int64_t m = a.dim(0), k = a.dim(1), n = b.dim(1);
  Tensor out({m, n}, DType::F64, Device::cpu());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += std::fabs(a.item(i * k + p)) * std::fabs(b.item(p * n + j));
      out.data<double>()[i * n + j] = s;
    }
  }
  return out;
}

// Every |tf32 - reference| <= (2^-9 + K 2^-24) sum_k |a||b|, element by element.
::testing::AssertionResult within_tf32_bound(const Tensor& tf32, const Tensor& reference, const Tensor& abs_sums,
                                             int64_t k) {
  const Tensor got = tf32.to(Device::cpu());
  const double factor = std::ldexp(1.0, -9) + double(k) * std::ldexp(1.0, -24);
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double bound = factor * abs_sums.item(i) + 1e-30;
    if (std::fabs(got.item(i) - reference.item(i)) > bound) {
      return ::testing::AssertionFailure() << "element " << i << ": " << got.item(i) << " vs " << reference.item(i)
                                           << ", beyond the TF32 bound " << bound;
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_F(CudaTf32, GemmIsTf32WhenOnAndExactFp32WhenOffAgain) {
  const int64_t m = 256, k = 512, n = 192;
  const Tensor a = uniform({m, k}, DType::F32, 980), b = uniform({k, n}, DType::F32, 981);
  Tensor host_c = Tensor::zeros({m, n}, DType::F32, Device::cpu());
  ops::gemm(false, false, 1.0, a, b, 0.0, host_c);
  const Tensor ga = a.to(gpu()), gb = b.to(gpu());
  auto on_gpu = [&] {
    Tensor c = Tensor::zeros({m, n}, DType::F32, gpu());
    ops::gemm(false, false, 1.0, ga, gb, 0.0, c);
    return c.to(Device::cpu());
  };
  cuda::set_tf32(false);
  const Tensor fp32 = on_gpu();
  EXPECT_TRUE(matches_reference(fp32, host_c, summed(k).f32, "fp32 gemm"));
  cuda::set_tf32(true);
  EXPECT_TRUE(cuda::tf32_enabled());
  const Tensor tf32 = on_gpu();
  EXPECT_TRUE(within_tf32_bound(tf32, host_c, abs_product_sums(a, b), k));
  const double fp32_error = max_difference(fp32, host_c), tf32_change = max_difference(tf32, fp32);
  EXPECT_GT(tf32_change, 10 * fp32_error) << "TF32 changed the products by " << tf32_change
                                          << ", no more than fp32 rounding (" << fp32_error << "): it did not run";
  cuda::set_tf32(false);
  EXPECT_TRUE(bitwise_equal(on_gpu(), fp32)) << "switching TF32 off did not restore the fp32 results";
}

TEST_F(CudaTf32, BatchedProductsAndAttentionFollowTheSwitch) {
  const Tensor a = uniform({12, 197, 64}, DType::F32, 982), b = uniform({12, 197, 64}, DType::F32, 983);
  const Tensor qkv = uniform({2, 197, 3 * 192}, DType::F32, 984);
  auto run = [&] {
    Tensor c = Tensor::zeros({12, 197, 197}, DType::F32, gpu());
    ops::gemm_batched(false, true, 1.0, a.to(gpu()), b.to(gpu()), 0.0, c);
    Tensor probs;
    const Tensor ctx = ops::attention_forward(qkv.to(gpu()), 3, probs);
    return std::make_pair(c.to(Device::cpu()), ctx.to(Device::cpu()));
  };
  const auto fp32 = run();
  cuda::set_tf32(true);
  const auto tf32 = run();
  cuda::set_tf32(false);
  const auto again = run();
  // TF32 lets cuBLAS use tensor cores without obliging it: for this stack an H200 picks
  // an fp32 kernel, so only the bound is checked; attention's products do change.
  EXPECT_LT(max_difference(tf32.first, fp32.first), std::ldexp(1.0, -9) * 64) << "gemm_batched beyond the TF32 bound";
  EXPECT_GT(max_difference(tf32.second, fp32.second), 1e-6) << "attention's products ignored TF32";
  EXPECT_LT(max_difference(tf32.second, fp32.second), 1e-2) << "attention beyond a TF32 error";
  EXPECT_TRUE(bitwise_equal(again.first, fp32.first));
  EXPECT_TRUE(bitwise_equal(again.second, fp32.second));
}

TEST_F(CudaTf32, LeavesF64ProductsAlone) {
  const Tensor a = uniform({128, 256}, DType::F64, 985).to(gpu()), b = uniform({256, 64}, DType::F64, 986).to(gpu());
  auto product = [&] {
    Tensor c = Tensor::zeros({128, 64}, DType::F64, gpu());
    ops::gemm(false, false, 1.0, a, b, 0.0, c);
    return c.to(Device::cpu());
  };
  const Tensor plain = product();
  cuda::set_tf32(true);
  EXPECT_TRUE(bitwise_equal(product(), plain));
}

}  // namespace
}  // namespace vitune::testing
