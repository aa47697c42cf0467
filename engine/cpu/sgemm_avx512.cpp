// The AVX-512 fp32 GEMM of sgemm_avx512.h. For each block of kKc rows of op(B): the
// block is packed into strips of kNr columns (k-major, zero-padded), shared by all
// threads; the threads then take blocks of kMc rows of op(A), pack each into strips of
// kMr rows, and run the micro-kernel over every (row strip, column strip) pair. Blocks
// of K run one after another, so each element of C is summed in one fixed order.
#include "engine/cpu/sgemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

constexpr int64_t kMr = 8;    // rows of the register tile
constexpr int64_t kNr = 32;   // columns: two 16-float registers
constexpr int64_t kKc = 768;  // K per block: few passes over C; a packed B strip is 96 KB
constexpr int64_t kMc = 64;   // rows per A block (192 KB packed, in L2)

// acc (8 x 32) = sum over kc of a column of the A strip times a row of the B strip; then
// C = alpha acc + (first block ? beta C : C) on the rows x cols corner that exists.
__attribute__((target("avx512f"))) void micro_kernel(int64_t kc, const float* ap, const float* bp, float* c,
                                                     int64_t ldc, int64_t rows, int64_t cols, float alpha,
                                                     float beta, bool first) {
  __m512 acc[kMr][2];
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(bp + k * kNr);
    const __m512 b1 = _mm512_load_ps(bp + k * kNr + 16);
    const float* a = ap + k * kMr;
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
  for (int64_t r = 0; r < rows; ++r) {
    float* cr = c + r * ldc;
    __m512 x0 = _mm512_mul_ps(va, acc[r][0]), x1 = _mm512_mul_ps(va, acc[r][1]);
    if (!first) {
      x0 = _mm512_add_ps(x0, _mm512_maskz_loadu_ps(m0, cr));
      x1 = _mm512_add_ps(x1, _mm512_maskz_loadu_ps(m1, cr + 16));
    } else if (beta != 0.0f) {
      x0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), x0);
      x1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), x1);
    }
    _mm512_mask_storeu_ps(cr, m0, x0);
    _mm512_mask_storeu_ps(cr + 16, m1, x1);
  }
}

// Packs op(B)[k0 .. k0+kc, j0 .. j0+w) as a k-major strip of kNr columns.
void pack_b_strip(bool trans_b, const float* b, int64_t ldb, int64_t k0, int64_t kc, int64_t j0, int64_t w,
                  float* out) {
  if (!trans_b) {
    for (int64_t k = 0; k < kc; ++k) {
      std::memcpy(out + k * kNr, b + (k0 + k) * ldb + j0, size_t(w) * sizeof(float));
      std::fill(out + k * kNr + w, out + (k + 1) * kNr, 0.0f);
    }
    return;
  }
  if (w < kNr) std::fill(out, out + kc * kNr, 0.0f);
  for (int64_t j = 0; j < w; ++j) {
    const float* column = b + (j0 + j) * ldb + k0;
    for (int64_t k = 0; k < kc; ++k) out[k * kNr + j] = column[k];
  }
}

// Packs op(A)[i0 .. i0+h, k0 .. k0+kc) as a k-major strip of kMr rows.
void pack_a_strip(bool trans_a, const float* a, int64_t lda, int64_t i0, int64_t h, int64_t k0, int64_t kc,
                  float* out) {
  if (h < kMr) std::fill(out, out + kc * kMr, 0.0f);
  if (trans_a) {
    for (int64_t k = 0; k < kc; ++k) std::memcpy(out + k * kMr, a + (k0 + k) * lda + i0, size_t(h) * sizeof(float));
    return;
  }
  for (int64_t q = 0; q < h; ++q) {
    const float* row = a + (i0 + q) * lda + k0;
    for (int64_t k = 0; k < kc; ++k) out[k * kMr + q] = row[k];
  }
}

// A 64-byte aligned scratch buffer per thread, grown on demand and kept.
float* scratch(std::vector<float>& buffer, size_t floats) {
  if (buffer.size() < floats + 16) buffer.resize(floats + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t(63));
}

}  // namespace

bool has_avx512() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}

void sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int64_t strips = (n + kNr - 1) / kNr;
  const int64_t blocks = (m + kMc - 1) / kMc;
  static thread_local std::vector<float> b_buffer;
  float* packed_b = scratch(b_buffer, size_t(strips * kNr * kKc));
  for (int64_t k0 = 0; k0 == 0 || k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    const bool first = k0 == 0;
    parallel_for(strips, 4, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        pack_b_strip(trans_b, b, ldb, k0, kc, s * kNr, std::min(kNr, n - s * kNr), packed_b + s * kNr * kKc);
      }
    });
    parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
      static thread_local std::vector<float> a_buffer;
      float* packed_a = scratch(a_buffer, size_t(kMc * kKc));
      for (int64_t block = begin; block < end; ++block) {
        const int64_t i0 = block * kMc, rows = std::min(kMc, m - i0);
        const int64_t row_strips = (rows + kMr - 1) / kMr;
        for (int64_t r = 0; r < row_strips; ++r) {
          pack_a_strip(trans_a, a, lda, i0 + r * kMr, std::min(kMr, rows - r * kMr), k0, kc, packed_a + r * kMr * kKc);
        }
        for (int64_t s = 0; s < strips; ++s) {
          const int64_t j0 = s * kNr;
          for (int64_t r = 0; r < row_strips; ++r) {
            micro_kernel(kc, packed_a + r * kMr * kKc, packed_b + s * kNr * kKc, c + (i0 + r * kMr) * ldc + j0, ldc,
                         std::min(kMr, rows - r * kMr), std::min(kNr, n - j0), alpha, beta, first);
          }
        }
      }
    });
    if (k == 0) break;
  }
}

}  // namespace vitune::cpu
