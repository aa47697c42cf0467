// The bf16 GEMM of bf16gemm_avx512.h. vdpbf16ps multiplies 16 pairs of bf16 by 16 pairs
// and adds each pair's two products to one fp32 lane: k runs in pairs. So the operands
// are first rounded to bf16 and paired along k (two consecutive k of one row or column in
// one 32-bit word, the lower k in the low half, a missing last k as zero), into matrices
// of ceil(K / 2) pairs that have op(A)'s and op(B)'s layouts; then the blocked driver of
// engine/cpu/gemm_avx512_driver.h packs and multiplies them as if each pair were one
// float, K halved. Its blocks of kKc = 256 pairs (512 k) keep a B strip at 32 KiB in L1
// as in the fp32 kernel, and its 12 x 32 tile is the fp32 kernel's with each FMA a
// vdpbf16ps: 24 dot products (48 k x 16 lanes of multiply-adds) for 14 loads per pair.
//
// Rounding and pairing cost one pass over each operand; each 32-bit word depends on its
// own two inputs only, and the driver sums in an order that depends on k alone, so the
// bits are the same for any thread count. Every function that runs on the way carries
// VITUNE_TARGET_AVX512_BF16 or VITUNE_TARGET_AVX512 (engine/cpu/isa.h); gemm.cpp calls
// bf16gemm_avx512 only where cpu_isa() reaches Avx512Bf16. The file is compiled on x86
// only.
#include "engine/cpu/bf16gemm_avx512.h"

#include <immintrin.h>

#include <cstring>
#include <vector>

#include "engine/cpu/bf16_bits.h"
#include "engine/cpu/gemm_avx512_driver.h"
#include "engine/cpu/isa.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

constexpr int64_t kPairGrain = 64;  // rows (or row pairs) of an operand per pairing chunk

// The pair of `low` and `high` as the bits of a float, as the driver packs it.
inline float pair_as_float(float low, float high) {
  const uint32_t bits = bf16_pair(low, high);
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

// An operand with k and one other dimension of `extent` (m of op(A), n of op(B)), lines
// of `ld` floats, paired along k into out, row-major: along each line when k runs along
// the lines (out: extent x ceil(k / 2)), else across each two consecutive lines (out:
// ceil(k / 2) x extent). The loops are compiled for the AVX-512 level, where the
// compiler vectorises them.
void pair_along_k(bool k_along_lines, const float* src, int64_t ld, int64_t k, int64_t extent, float* out) {
  const int64_t pairs = (k + 1) / 2, full = k / 2;
  if (k_along_lines) {
    parallel_for(extent, kPairGrain, [&](int64_t begin, int64_t end) {
      run_at_isa(Isa::Avx512, [&] {
        for (int64_t line = begin; line < end; ++line) {
          const float* s = src + line * ld;
          float* o = out + line * pairs;
          for (int64_t p = 0; p < full; ++p) o[p] = pair_as_float(s[2 * p], s[2 * p + 1]);
          if (pairs > full) o[full] = pair_as_float(s[k - 1], 0.0f);
        }
      });
    });
    return;
  }
  parallel_for(pairs, kPairGrain, [&](int64_t begin, int64_t end) {
    run_at_isa(Isa::Avx512, [&] {
      for (int64_t p = begin; p < end; ++p) {
        const float* low = src + 2 * p * ld;
        float* o = out + p * extent;
        if (p < full) {
          const float* high = low + ld;
          for (int64_t q = 0; q < extent; ++q) o[q] = pair_as_float(low[q], high[q]);
        } else {
          for (int64_t q = 0; q < extent; ++q) o[q] = pair_as_float(low[q], 0.0f);
        }
      }
    });
  });
}

// The bf16 micro-kernel for gemm_driver::run: the fp32 kernel's loop over pairs.
struct Bf16Kernel {
  static constexpr int kMr = 12;                  // rows of the register tile (broadcast pairs from A)
  static constexpr int kNr = 32;                  // columns: two vectors of 16 pairs of B
  static constexpr int64_t kKc = 256;             // pairs per block: a B strip is 32 KiB, in L1

  // acc (12 x 32) = sum over kc pairs of the A strip's pair times the B strip's pairs,
  // then stored by store_c_tile. Meanwhile fetches 2 kc words from b_next into L2.
  template <bool kInPlaceA>
  static VITUNE_TARGET_AVX512_BF16 void micro_kernel(int64_t kc, gemm_driver::AStrip<kInPlaceA, kMr> a, const float* bp,
                                    float* c, int64_t ldc, int rows, int cols, float alpha, float beta, bool first,
                                    const float* bias, const float* b_next) {
    gemm_driver::prefetch_c_tile(c, ldc, rows, cols);
    __m512 acc[kMr][2];
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t p = 0; p < kc; ++p) {
      const __m512bh b0 = (__m512bh)_mm512_load_ps(bp);
      const __m512bh b1 = (__m512bh)_mm512_load_ps(bp + 16);
      a.prefetch(p);
      _mm_prefetch(reinterpret_cast<const char*>(b_next + 2 * p), _MM_HINT_T1);
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) {
        const __m512bh av = (__m512bh)_mm512_set1_ps(a.at(r));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], b0, av);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], b1, av);
      }
      a.next();
      bp += kNr;
    }
    gemm_driver::store_c_tile<kMr>(acc, c, ldc, rows, cols, alpha, beta, first, bias);
  }
};

}  // namespace

void bf16gemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const int64_t pairs = (k + 1) / 2;
  // op(A) is m x k: A is m rows of k (k along its lines), or transposed, k rows of m.
  // op(B) is k x n: B is k rows of n, or transposed, n rows of k (k along its lines).
  static thread_local std::vector<float> a_buffer, b_buffer;
  float* a_pairs = gemm_driver::scratch(a_buffer, size_t(m * pairs));
  float* b_pairs = gemm_driver::scratch(b_buffer, size_t(n * pairs));
  pair_along_k(!trans_a, a, lda, k, m, a_pairs);
  pair_along_k(trans_b, b, ldb, k, n, b_pairs);
  const int64_t lda_pairs = trans_a ? m : pairs, ldb_pairs = trans_b ? pairs : n;
  gemm_driver::run<Bf16Kernel>(trans_a, trans_b, m, n, pairs, alpha, a_pairs, lda_pairs, b_pairs, ldb_pairs, beta, c,
                               ldc, nullptr);
}

}  // namespace vitune::cpu
