// GEMM: ops::gemm and gemm_batched (vitune's AVX-512 kernel or OpenBLAS) and the AVX-512
// kernel on strided operands against the plain-loop reference in every transpose
// combination, with alpha and beta, in f32 and f64; results have the same bits for any
// thread count; bad shapes are errors; FLOPs are counted.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/autocast.h"
#include "engine/cpu/sgemm_avx512.h"
#include "engine/error.h"
#if VITUNE_X86_LEVELS
#include "engine/cpu/gemm_avx512_driver.h"
#endif
#include "engine/flop_counter.h"
#include "engine/ops.h"
#include "engine/parallel.h"
#include "engine/random.h"
#include "test_util.h"

namespace vitune::testing {
namespace {

Tensor random_matrix(Shape shape, DType dtype, uint64_t stream) {
  Tensor t(std::move(shape), dtype, Device::cpu());
  fill_normal(t, 5, stream, 0.0, 1.0);
  return t;
}

Shape operand(bool transposed, int64_t rows, int64_t cols) {
  return transposed ? Shape{cols, rows} : Shape{rows, cols};
}

TEST(Gemm, EveryTransposeCombinationMatchesTheReference) {
  const int64_t m = 37, n = 29, k = 53;
  for (DType dtype : {DType::F32, DType::F64}) {
    Tolerance tol = dtype == DType::F32 ? Tolerance{1e-5, 1e-5} : Tolerance{1e-12, 1e-12};
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        Tensor a = random_matrix(operand(ta, m, k), dtype, 1);
        Tensor b = random_matrix(operand(tb, k, n), dtype, 2);
        Tensor c = random_matrix({m, n}, dtype, 3);
        Tensor expected = c.clone();
        ops::gemm(ta, tb, 0.5, a, b, 2.0, c);
        ops::gemm_reference(ta, tb, 0.5, a, b, 2.0, expected);
        EXPECT_TRUE(tensors_close(c, expected, tol, std::string("ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0")));
      }
    }
  }
}

TEST(Gemm, LargeProductsSplitIntoPanelsMatchTheReferenceAndAnyThreadCount) {
  // Big enough to be cut into panels, both along rows (m >= n) and columns (n > m).
  for (Shape mnk : {Shape{700, 96, 64}, Shape{64, 900, 48}}) {
    int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    Tensor a = random_matrix({m, k}, DType::F32, 4);
    Tensor b = random_matrix({n, k}, DType::F32, 5);
    Tensor expected({m, n}, DType::F32, Device::cpu());
    ops::gemm_reference(false, true, 1.0, a, b, 0.0, expected);
    int before = num_threads();
    Tensor results[2] = {Tensor({m, n}, DType::F32, Device::cpu()), Tensor({m, n}, DType::F32, Device::cpu())};
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      ops::gemm(false, true, 1.0, a, b, 0.0, results[threads - 1]);
    }
    set_num_threads(before);
    EXPECT_TRUE(tensors_close(results[0], expected, {1e-4, 1e-5}, "panels"));
    EXPECT_TRUE(bitwise_equal(results[0], results[1]));
  }
}

TEST(Gemm, LongSumsSpanningSeveralBlocksOfKMatchTheReference) {
  // K beyond several packed blocks of K in every transpose combination, with beta.
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = random_matrix(operand(ta, 19, 1700), DType::F32, 10);
      Tensor b = random_matrix(operand(tb, 1700, 45), DType::F32, 11);
      Tensor c = random_matrix({19, 45}, DType::F32, 12);
      Tensor expected = c.to(DType::F64);
      ops::gemm(ta, tb, 1.5, a, b, -1.0, c);
      ops::gemm_reference(ta, tb, 1.5, a.to(DType::F64), b.to(DType::F64), -1.0, expected);
      EXPECT_TRUE(tensors_close(c, expected, {1e-3, 1e-4}, "long K"));
    }
  }
}

#if VITUNE_X86_LEVELS  // the kernel is compiled on x86 only
// A row-major A is read in place by products of few B strips, unless its rows would
// crowd a few L1 sets.
TEST(Gemm, Avx512KernelReadsARowMajorAInPlaceForFewBStripsUnlessItsRowsShareL1Sets) {
  using cpu::gemm_driver::reads_a_in_place;
  EXPECT_TRUE(reads_a_in_place<12>(64, 2));    // rows 4 lines apart: 12 sets
  EXPECT_TRUE(reads_a_in_place<12>(768, 4));   // 48 lines apart: 4 sets
  EXPECT_TRUE(reads_a_in_place<12>(1024 + 5, 1));
  EXPECT_FALSE(reads_a_in_place<12>(64, 5));   // packing pays back over 5 B strips
  EXPECT_FALSE(reads_a_in_place<12>(512, 2));  // 2 sets
  EXPECT_FALSE(reads_a_in_place<12>(3072, 2)); // 192 lines apart: 1 set
}

// The AVX-512 kernel itself, on strided operands: every row of A, B and C is padded
// (lda, ldb, ldc beyond the width, the padding filled with NaN so that a read of it would
// show), at sizes around its register tile (12 x 32), its blocks of K and of C, in every
// transpose combination; 1 to 4 threads give the same bits. A row-major A of at least
// 12 rows is read in place (its last strip of fewer than 12 rows packed), but for
// n = 257 (9 B strips) and k = 1019 (rows 1024 floats apart), where it is packed
// throughout, as are the shapes of fewer than 12 rows. A transposed A is read in place
// wherever n <= 256 (one block of C), and gives the bits of the same A stored row-major,
// packed or read in place the other way. B is packed by each thread for
// itself where n <= 256 and K is one block or m <= 384 (200 x 40 x 600), the threads
// splitting B's strips where n > m (25 x 65 x 300: 3 strips over 2 to 4 threads), and
// shared by the threads otherwise (193 x 257 x 129, and 400 x 40 x 600: 34 strips of
// rows).
TEST(Gemm, Avx512KernelOnPaddedOperandsAroundItsTileAndBlockEdges) {
  if (!cpu::has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512: the kernel is never used here";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t shapes[][3] = {{1, 1, 1},      {11, 31, 7},    {12, 32, 256},  {13, 33, 257}, {25, 65, 300},
                               {193, 257, 129}, {200, 40, 600}, {400, 40, 600}, {30, 40, 1019}};
  // A rows x cols matrix with rows ld floats apart, the padding NaN.
  auto padded = [nan](const float* values, int64_t rows, int64_t cols, int64_t ld) {
    std::vector<float> out(rows * ld, nan);
    for (int64_t r = 0; r < rows; ++r) std::copy(values + r * cols, values + (r + 1) * cols, out.begin() + r * ld);
    return out;
  };
  int before = num_threads();
  for (const auto& mnk : shapes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
        const int64_t lda = a_cols + 5, ldb = b_cols + 3, ldc = n + 7;
        Tensor a = random_matrix({a_rows, a_cols}, DType::F32, 20);
        Tensor b = random_matrix({b_rows, b_cols}, DType::F32, 21);
        Tensor c = random_matrix({m, n}, DType::F32, 22);
        const std::vector<float> pa = padded(a.data<float>(), a_rows, a_cols, lda);
        const std::vector<float> pb = padded(b.data<float>(), b_rows, b_cols, ldb);
        Tensor expected = c.to(DType::F64);
        ops::gemm_reference(ta, tb, 0.75, a.to(DType::F64), b.to(DType::F64), -0.5, expected);
        std::vector<float> first;
        for (int threads : {1, 2, 3, 4}) {
          set_num_threads(threads);
          std::vector<float> pc = padded(c.data<float>(), m, n, ldc);
          cpu::sgemm_avx512(ta, tb, m, n, k, 0.75f, pa.data(), lda, pb.data(), ldb, -0.5f, pc.data(), ldc);
          const std::string where = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" +
                                    std::to_string(k) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb);
          for (int64_t r = 0; r < m; ++r)
            for (int64_t j = n; j < ldc; ++j) ASSERT_TRUE(std::isnan(pc[r * ldc + j])) << where << ": padding of C written";
          Tensor got({m, n}, DType::F32, Device::cpu());
          for (int64_t r = 0; r < m; ++r)
            for (int64_t j = 0; j < n; ++j) got.data<float>()[r * n + j] = pc[r * ldc + j];
          if (threads == 1) {
            EXPECT_TRUE(tensors_close(got, expected, {1e-4, 1e-4}, where));
            first = pc;
            if (ta) {
              // op(A) stored row-major: the same products in the same order.
              std::vector<float> row_major(m * (k + 5), nan), pc_row_major = padded(c.data<float>(), m, n, ldc);
              for (int64_t i = 0; i < m; ++i)
                for (int64_t p = 0; p < k; ++p) row_major[i * (k + 5) + p] = pa[p * lda + i];
              cpu::sgemm_avx512(false, tb, m, n, k, 0.75f, row_major.data(), k + 5, pb.data(), ldb, -0.5f,
                                pc_row_major.data(), ldc);
              EXPECT_EQ(0, std::memcmp(first.data(), pc_row_major.data(), pc.size() * sizeof(float)))
                  << where << ": a transposed A differs from the same A stored row-major";
            }
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
#endif

// linear_forward is the product and then the bias add, bit for bit, on every path: the
// AVX-512 kernel adding the bias in its tile stores (A in place and packed, column and
// row tails, K in one and in several blocks), OpenBLAS (the ctest gemm_with_openblas
// runs this suite with it), f64 and bf16 autocast; for 1 and 2 threads.
TEST(Gemm, LinearForwardIsTheProductThenTheBiasAddBitForBit) {
  const int64_t shapes[][3] = {{1, 1, 1}, {13, 33, 7}, {25, 65, 300}, {193, 257, 129}, {200, 40, 600}, {36, 32, 64}};
  const int before = num_threads();
  for (DType dtype : {DType::F32, DType::F64}) {
    for (const auto& mnk : shapes) {
      const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
      const Tensor x = random_matrix({m, k}, dtype, 30), w = random_matrix({n, k}, dtype, 31);
      const Tensor bias = random_matrix({1, n}, dtype, 32).reshape({n});
      for (bool bf16 : {false, true}) {
        if (bf16 && dtype == DType::F64) continue;
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          AutocastBf16Scope autocast(bf16);
          Tensor expected({m, n}, dtype, Device::cpu()), fused({m, n}, dtype, Device::cpu());
          ops::gemm(false, true, 1.0, x, w, 0.0, expected);
          ops::add_row_broadcast(expected, bias);
          ops::linear_forward(x, w, bias, fused);
          EXPECT_TRUE(bitwise_equal(fused, expected))
              << dtype_name(dtype) << " m=" << m << " n=" << n << " k=" << k << (bf16 ? " bf16" : "") << ", "
              << threads << " threads";
        }
      }
    }
  }
  set_num_threads(before);
}

// A bias of the wrong length or dtype is refused before y is written, on the host's own
// path (also called directly) and under bf16 autocast, with a message that names the op,
// the bias and what it must be.
TEST(Gemm, LinearForwardRefusesABiasOfTheWrongSizeOrDtype) {
  const Tensor x = random_matrix({4, 3}, DType::F32, 33), w = random_matrix({5, 3}, DType::F32, 34);
  for (bool bf16 : {false, true}) {
    for (const Tensor& bias :
         {Tensor::zeros({4}, DType::F32, Device::cpu()), Tensor::zeros({5}, DType::F64, Device::cpu())}) {
      for (bool direct : {false, true}) {
        AutocastBf16Scope autocast(bf16);
        Tensor y = Tensor::full({4, 5}, 7.0, DType::F32, Device::cpu());
        try {
          direct ? cpu::linear_forward(x, w, bias, y) : ops::linear_forward(x, w, bias, y);
          ADD_FAILURE() << "bias " << bias.str() << " was accepted";
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("linear_forward: bias must be f32[5]"), std::string::npos) << e.what();
        }
        EXPECT_EQ(y.item(0), 7.0) << "y was written before the bias was refused";
      }
    }
  }
}

TEST(Gemm, LeadingDimensionsFoldIntoRows) {
  Tensor x = random_matrix({2, 3, 4}, DType::F64, 6);
  Tensor w = random_matrix({5, 4}, DType::F64, 7);
  Tensor y({2, 3, 5}, DType::F64, Device::cpu());
  ops::gemm(false, true, 1.0, x, w, 0.0, y);
  Tensor expected({6, 5}, DType::F64, Device::cpu());
  ops::gemm_reference(false, true, 1.0, x.reshape({6, 4}), w, 0.0, expected);
  EXPECT_TRUE(tensors_close(y.reshape({6, 5}), expected, kF64Exact, "folded"));
}

TEST(Gemm, BatchedMatchesOneProductPerItem) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t size : {3, 40}) {  // tiny items take the plain loop, larger ones OpenBLAS
        Tensor a = random_matrix(ta ? Shape{4, size + 1, size} : Shape{4, size, size + 1}, DType::F64, 8);
        Tensor b = random_matrix(tb ? Shape{4, size + 2, size + 1} : Shape{4, size + 1, size + 2}, DType::F64, 9);
        Tensor c({4, size, size + 2}, DType::F64, Device::cpu());
        ops::gemm_batched(ta, tb, 1.0, a, b, 0.0, c);
        for (int64_t i = 0; i < 4; ++i) {
          Tensor ai = a.rows(i, i + 1).reshape({a.dim(1), a.dim(2)});
          Tensor bi = b.rows(i, i + 1).reshape({b.dim(1), b.dim(2)});
          Tensor expected({size, size + 2}, DType::F64, Device::cpu());
          ops::gemm_reference(ta, tb, 1.0, ai, bi, 0.0, expected);
          EXPECT_TRUE(tensors_close(c.rows(i, i + 1).reshape({size, size + 2}), expected, kF64Exact, "item"));
        }
      }
    }
  }
}

TEST(Gemm, MismatchedShapesAndDtypesAreErrors) {
  Tensor a({3, 4}, DType::F32, Device::cpu()), b({5, 6}, DType::F32, Device::cpu()), c({3, 6}, DType::F32, Device::cpu());
  EXPECT_THROW(ops::gemm(false, false, 1.0, a, b, 0.0, c), Error);
  Tensor b64({4, 6}, DType::F64, Device::cpu());
  EXPECT_THROW(ops::gemm(false, false, 1.0, a, b64, 0.0, c), Error);
  Tensor s1({2, 3, 4}, DType::F32, Device::cpu()), s2({3, 4, 6}, DType::F32, Device::cpu()), s3({2, 3, 6}, DType::F32, Device::cpu());
  EXPECT_THROW(ops::gemm_batched(false, false, 1.0, s1, s2, 0.0, s3), Error);
}

// K = 0: the product is empty, so C becomes beta C (no division by the zero width).
TEST(Gemm, EmptyInnerDimensionScalesC) {
  for (DType dtype : {DType::F32, DType::F64}) {
    Tensor a({3, 0}, dtype, Device::cpu()), b({0, 4}, dtype, Device::cpu()), c({3, 4}, dtype, Device::cpu());
    c.fill(2.0);
    ops::gemm(false, false, 1.0, a, b, 0.5, c);
    for (int64_t i = 0; i < c.numel(); ++i) EXPECT_EQ(c.item(i), 1.0) << dtype_name(dtype) << " element " << i;
    Tensor wrong({0, 5}, dtype, Device::cpu());
    EXPECT_THROW(ops::gemm(false, false, 1.0, a, wrong, 0.0, c), Error);
  }
}

TEST(Gemm, FlopsAreCounted) {
  Tensor a({8, 16}, DType::F32, Device::cpu()), b({16, 4}, DType::F32, Device::cpu()), c({8, 4}, DType::F32, Device::cpu());
  a.fill(1);
  b.fill(1);
  reset_flop_counter();
  ops::gemm(false, false, 1.0, a, b, 0.0, c);
  EXPECT_EQ(flops_counted(), 2 * 8 * 4 * 16);
}

}  // namespace
}  // namespace vitune::testing
