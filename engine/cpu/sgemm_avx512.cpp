// The AVX-512 fp32 GEMM of sgemm_avx512.h, for a core with two 512-bit FMA pipes (4
// cycles latency), on the blocked driver of engine/cpu/gemm_avx512_driver.h with blocks
// of K of about kKc = 256 and a 12 x 32 register tile: a B strip (256 x 32 floats) is
// 32 KiB, in L1; a group's A block (192 rows x 256) 192 KiB and a C block (192 x 256
// floats) 192 KiB, in L2. The micro-kernel keeps the 12 x 32 tile in 24 accumulators;
// each step of k loads two vectors of the B strip and broadcasts 12 floats of the A strip
// from memory: 24 FMAs for 14 loads, so the two FMA pipes, not the loads, set the pace,
// and 24 independent chains hide the latency. 12 rows also split the 1576 rows of a ViT
// batch (8 x 197 tokens) into 132 strips, an equal share for 2 or 4 threads.
//
// Every function that runs on the way carries VITUNE_TARGET_AVX512 (engine/cpu/isa.h):
// the file is compiled for the baseline like the rest, and gemm.cpp calls sgemm_avx512
// only where cpu_isa() reaches AVX-512. The file is compiled on x86 only.
#include "engine/cpu/sgemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/cpu/gemm_avx512_driver.h"
#include "engine/cpu/isa.h"

namespace vitune::cpu {

namespace {

// The fp32 kernel for gemm_driver::run.
struct Fp32Kernel {
  static constexpr int kMr = 12;                  // rows of the register tile (broadcasts from A)
  static constexpr int kNr = 32;                  // columns: two 16-float vectors of B
  static constexpr int64_t kKc = 256;             // a B strip of kKc x kNr floats is 32 KiB, in L1

  // acc (12 x 32) = sum over kc of a column of the A strip times a row of the B strip, then
  // stored by store_c_tile. Meanwhile fetches 2 kc floats from b_next into L2: a slice of
  // the B strip that comes next.
  template <bool kInPlaceA>
  static VITUNE_TARGET_AVX512 void micro_kernel(int64_t kc, gemm_driver::AStrip<kInPlaceA, kMr> a, const float* bp,
                                    float* c, int64_t ldc, int rows, int cols, float alpha, float beta, bool first,
                                    const float* bias, const float* b_next) {
    gemm_driver::prefetch_c_tile(c, ldc, rows, cols);
    __m512 acc[kMr][2];
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; ++k) {
      const __m512 b0 = _mm512_load_ps(bp);
      const __m512 b1 = _mm512_load_ps(bp + 16);
      a.prefetch(k);
      _mm_prefetch(reinterpret_cast<const char*>(b_next + 2 * k), _MM_HINT_T1);
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) {
        const __m512 av = _mm512_set1_ps(a.at(r));
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
      }
      a.next();
      bp += kNr;
    }
    gemm_driver::store_c_tile<kMr>(acc, c, ldc, rows, cols, alpha, beta, first, bias);
  }
};

}  // namespace

void sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const float* bias) {
  gemm_driver::run<Fp32Kernel>(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
}

}  // namespace vitune::cpu
