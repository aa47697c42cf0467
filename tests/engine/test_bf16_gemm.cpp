// The bf16 GEMM under autocast on the CPU: vitune's AMX kernel (engine/cpu/bf16gemm_amx.h)
// at the amx level, its AVX-512 BF16 kernel (engine/cpu/bf16gemm_avx512.h) at the opt-in
// avx512bf16 level, else the exact emulation. On operands whose
// bf16 values are integers (reached through round-to-nearest-even ties) every fp32 sum is
// exact, so either path must give the exact product bit for bit: this holds the kernel's
// rounding, pairing along k (odd k, blocks of K), tiles and transposes to the emulation's.
// On random operands the kernel differs from the emulation by the order of fp32 sums
// only; it gives the same bits for 1 to 4 threads and never writes past a row of C.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/autocast.h"
#include "engine/cpu/gemm_kernel.h"
#include "engine/cpu/isa.h"
#include "engine/ops.h"
#include "engine/parallel.h"
#include "test_util.h"
#if VITUNE_X86_LEVELS
#include "engine/cpu/bf16gemm_amx.h"
#include "engine/cpu/bf16gemm_avx512.h"
#endif

namespace vitune::testing {
namespace {

Shape operand(bool transposed, int64_t rows, int64_t cols) {
  return transposed ? Shape{cols, rows} : Shape{rows, cols};
}

std::string label(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
         " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb);
}

// Values whose bf16 rounding is the integer 9..15 or -15..-9 (where the bf16 spacing is
// 2^-4), moved off it by 0, +-2^-6, just under +-2^-5, or exactly +-2^-5: half a spacing,
// a tie that round-to-nearest-even sends back to the integer (an even significand), while
// rounding half up or truncation would not. `integers` receives the rounded values.
Tensor near_integers(const Shape& shape, uint64_t seed, Tensor& integers) {
  const float offsets[] = {0.0f, 0x1p-6f, -0x1p-6f, 0x1p-5f, -0x1p-5f, 0x1p-5f - 0x1p-12f, -0x1p-5f + 0x1p-12f};
  Tensor values(shape, DType::F32, Device::cpu());
  integers = Tensor(shape, DType::F64, Device::cpu());
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < values.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int magnitude = 9 + int((state >> 33) % 7), sign = (state >> 40) & 1 ? -1 : 1;
    const float offset = offsets[(state >> 44) % 7];
    integers.data<double>()[i] = sign * magnitude;
    values.data<float>()[i] = float(sign * magnitude) + offset;
  }
  return values;
}

// Sizes around the 12 x 32 tile, odd k (a lone last k), and K beyond one block of 512.
// Products of integers up to 15 summed over k <= 1025 stay below 2^24: exact in fp32.
// Paired along k, a row of a row-major A is ceil(k / 2) words. The AVX-512 kernel reads
// it in place for {25, 65, 513} (257 words a row, its last strip of 1 row packed) and
// {36, 64, 129} (65 words, 3 whole strips); the others it packs: fewer than 12 rows,
// or rows that share L1 sets (2, 513 or 1024 words apart).
constexpr int64_t kShapes[][3] = {{1, 1, 1},      {11, 31, 7},   {13, 33, 3},   {25, 65, 513},
                                  {200, 40, 1025}, {14, 20, 2047}, {36, 64, 129}};

TEST(Bf16Gemm, IntegerValuedProductsAreExactOnEveryPath) {
  for (const auto& mnk : kShapes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::string what = label(m, n, k, ta, tb) + " (" + cpu::gemm_bf16_kernel_name() + ")";
        Tensor ia, ib, ic;
        const Tensor a = near_integers(operand(ta, m, k), 1, ia), b = near_integers(operand(tb, k, n), 2, ib);
        near_integers({m, n}, 3, ic);
        Tensor c = ic.to(DType::F32);
        Tensor expected = ic.clone();
        ops::gemm_reference(ta, tb, 0.5, ia, ib, -2.0, expected);
        {
          AutocastBf16Scope autocast;
          ops::gemm(ta, tb, 0.5, a, b, -2.0, c);
        }
        EXPECT_TRUE(tensors_close(c, expected, {0.0, 0.0}, what));
      }
    }
  }
}

TEST(Bf16Gemm, IntegerValuedBatchedProductsAreExactOnEveryPath) {
  const int64_t stack = 3, m = 14, n = 35, k = 515;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Shape sa = operand(ta, m, k), sb = operand(tb, k, n);
      Tensor ia, ib;
      const Tensor a = near_integers({stack, sa[0], sa[1]}, 4, ia), b = near_integers({stack, sb[0], sb[1]}, 5, ib);
      Tensor c = Tensor::full({stack, m, n}, std::nan(""), DType::F32, Device::cpu());
      {
        AutocastBf16Scope autocast;
        ops::gemm_batched(ta, tb, 1.0, a, b, 0.0, c);
      }
      for (int64_t s = 0; s < stack; ++s) {
        Tensor expected = Tensor::zeros({m, n}, DType::F64, Device::cpu());
        ops::gemm_reference(ta, tb, 1.0, ia.rows(s, s + 1).reshape(sa), ib.rows(s, s + 1).reshape(sb), 0.0,
                            expected);
        EXPECT_TRUE(tensors_close(c.rows(s, s + 1).reshape({m, n}), expected, {0.0, 0.0},
                                  label(m, n, k, ta, tb) + " stack " + std::to_string(s)));
      }
    }
  }
}

TEST(Bf16Gemm, HardwareKernelWhereTheCpuHasItElseTheEmulation) {
  EXPECT_EQ(cpu::bf16_gemm_on_hardware(), cpu::cpu_isa() >= cpu::Isa::Avx512Bf16);
  const std::string name = cpu::gemm_bf16_kernel_name();
  if (cpu::cpu_isa() >= cpu::Isa::Amx) {
    EXPECT_EQ(name, "vitune AMX BF16");
  } else if (cpu::bf16_gemm_on_hardware()) {
    EXPECT_EQ(name, "vitune AVX-512 BF16");
  } else {
    EXPECT_EQ(name.rfind("emulated", 0), 0u) << name;
  }
}

// Random N(0, 1) operands, k = 1100 (three blocks of K). Both paths sum the same exact
// products (two bf16 significands of 8 bits multiply exactly in fp32) in fp32; each sum
// of k terms is within about sqrt(k) * 2^-24 * (its partial sums, ~|sqrt(k)|) ~ 1e-4 of
// the exact value, with random signs. abs 2e-3 + rel 1e-4 * |ref| leaves a margin of
// ~20 over that, and is still ~100x below what bf16 rounding itself does to the product
// (asserted: the plain fp32 product is far from both).
TEST(Bf16Gemm, HardwareKernelDiffersFromTheEmulationOnlyBySummationOrder) {
  if (!cpu::bf16_gemm_on_hardware()) {
    GTEST_SKIP() << "no bf16 kernel runs at this level (" << cpu::isa_name(cpu::cpu_isa())
                 << "): the AMX kernel needs a CPU with AMX-BF16, the AVX-512 BF16 one is opt-in "
                    "(VITUNE_CPU_ISA=avx512bf16, as ctest's bf16_gemm_at_avx512bf16 runs it); the emulation "
                    "runs, checked by Bf16Autocast.*";
  }
  const int64_t m = 150, n = 70, k = 1100;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const std::string what = label(m, n, k, ta, tb);
      const Tensor a = random_normal(operand(ta, m, k), DType::F32, 7, 1);
      const Tensor b = random_normal(operand(tb, k, n), DType::F32, 7, 2);
      Tensor hardware = random_normal({m, n}, DType::F32, 7, 3);
      Tensor emulated = hardware.clone(), plain = hardware.clone();
      {
        AutocastBf16Scope autocast;
        ops::gemm(ta, tb, 1.0, a, b, 1.0, hardware);
      }
      ops::gemm(ta, tb, 1.0, ops::round_to_bf16(a), ops::round_to_bf16(b), 1.0, emulated);
      ops::gemm(ta, tb, 1.0, a, b, 1.0, plain);
      EXPECT_TRUE(tensors_close(hardware, emulated, {2e-3, 1e-4}, what));
      EXPECT_FALSE(bitwise_equal(hardware, emulated)) << what << ": the emulation ran, not the kernel";
      EXPECT_GT(max_difference(plain, hardware), 0.2) << what;
    }
  }
}

#if VITUNE_X86_LEVELS
using Bf16Kernel = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                            int64_t, float, float*, int64_t);

// A kernel itself on strided operands (rows padded with NaN, which a read would spread),
// integer-valued as above so that the result is exact: 1 to 4 threads give the same bits,
// and the padding of C is never written.
void check_kernel_on_padded_operands(Bf16Kernel kernel) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int before = num_threads();
  for (const auto& mnk : kShapes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::string where = label(m, n, k, ta, tb);
        Tensor ia, ib;
        const Tensor a = near_integers(operand(ta, m, k), 8, ia), b = near_integers(operand(tb, k, n), 9, ib);
        const int64_t a_cols = a.dim(1), b_cols = b.dim(1), lda = a_cols + 5, ldb = b_cols + 3, ldc = n + 7;
        std::vector<float> pa(a.dim(0) * lda, nan), pb(b.dim(0) * ldb, nan);
        for (int64_t r = 0; r < a.dim(0); ++r) std::memcpy(&pa[r * lda], a.data<float>() + r * a_cols, a_cols * 4);
        for (int64_t r = 0; r < b.dim(0); ++r) std::memcpy(&pb[r * ldb], b.data<float>() + r * b_cols, b_cols * 4);
        Tensor expected = Tensor::zeros({m, n}, DType::F64, Device::cpu());
        ops::gemm_reference(ta, tb, 1.0, ia, ib, 0.0, expected);
        std::vector<float> first;
        for (int threads : {1, 2, 3, 4}) {
          set_num_threads(threads);
          std::vector<float> pc(m * ldc, nan);
          kernel(ta, tb, m, n, k, 1.0f, pa.data(), lda, pb.data(), ldb, 0.0f, pc.data(), ldc);
          for (int64_t r = 0; r < m; ++r) {
            for (int64_t j = n; j < ldc; ++j) ASSERT_TRUE(std::isnan(pc[r * ldc + j])) << where << ": padding of C written";
          }
          if (threads == 1) {
            for (int64_t r = 0; r < m; ++r) {
              for (int64_t j = 0; j < n; ++j) {
                ASSERT_EQ(double(pc[r * ldc + j]), expected.data<double>()[r * n + j]) << where << " at " << r << "," << j;
              }
            }
            first = pc;
          } else {
            EXPECT_EQ(0, std::memcmp(first.data(), pc.data(), pc.size() * sizeof(float)))
                << where << ": " << threads << " threads differ from 1";
          }
        }
      }
    }
  }
  set_num_threads(before);
}

TEST(Bf16Gemm, KernelOnPaddedOperandsIsExactAndTheSameForAnyThreadCount) {
  if (cpu::detected_isa() < cpu::Isa::Avx512Bf16) {
    GTEST_SKIP() << "the CPU lacks AVX512_BF16: the kernel can never run here";
  }
  check_kernel_on_padded_operands(cpu::bf16gemm_avx512);
}

TEST(Bf16Gemm, AmxKernelOnPaddedOperandsIsExactAndTheSameForAnyThreadCount) {
  if (cpu::detected_isa() < cpu::Isa::Amx) {
    GTEST_SKIP() << "the CPU lacks AMX-BF16 (or Linux refused this process the tile state): the AMX kernel can "
                    "never run here";
  }
  check_kernel_on_padded_operands(cpu::bf16gemm_amx);
}
#endif

}  // namespace
}  // namespace vitune::testing
