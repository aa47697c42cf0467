// The AVX-512 fp32 GEMM of sgemm_avx512.h, blocked for a core with a 48 KiB L1d, a
// 1 MiB L2 and two 512-bit FMA pipes (4 cycles latency). K is cut into blocks of about
// kKc = 256 (equal sizes, so no short tail), and:
//
//   pack all of op(B), block of K by block, into strips of kNr = 32 columns (k-major,
//     zero-padded), shared by the threads
//   the threads take equal contiguous ranges of kMr = 12 row strips of op(A); in each,
//   for each group of up to kMcStrips = 16 strips (192 rows):
//     pack the group's rows of op(A) for all of K
//     for each block of kNcStrips = 8 B strips (a 192 x 256 block of C: 192 KiB, in L2)
//       for each block of K, in order
//         for each B strip   (256 x 32 floats: 32 KiB, stays in L1 for the 16 calls)
//           for each A strip (256 x 12 floats: 12 KiB, from L2, read 8 times)
//             micro_kernel: the 12 x 32 tile of C += A strip x B strip
//
// So a B strip is read from L1 by 16 micro-kernel calls, the group's A block of K (192
// KiB) stays in L2 for the 8 B strips, and the C block stays in L2 across the blocks of
// K: C goes to memory once, not once per block of K. The micro-kernel keeps the 12 x 32
// tile in 24 accumulators; each step of k loads two vectors of the B strip and
// broadcasts 12 floats of the A strip from memory: 24 FMAs for 14 loads, so the two
// FMA pipes, not the loads, set the pace, and 24 independent chains hide the latency.
// 12 rows also split the 1576 rows of a ViT batch (8 x 197 tokens) into 132 strips,
// an equal share for 2 or 4 threads.
//
// Each element of C is the sum over the blocks of K, in order, of one accumulator chain
// per block: the order depends only on k, never on how the rows are split among
// threads, so the bits are the same for any thread count.
//
// Every function that runs on the way carries VITUNE_TARGET_AVX512 (engine/cpu/isa.h):
// the file is compiled for the baseline like the rest, and gemm.cpp calls sgemm_avx512
// only where cpu_isa() reaches AVX-512. The file is compiled on x86 only.
#include "engine/cpu/sgemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

constexpr int kMr = 12;            // rows of the register tile (broadcasts from A)
constexpr int kNr = 32;            // columns: two 16-float vectors of B
constexpr int64_t kKc = 256;       // K per block: a B strip of kKc x kNr floats is 32 KiB, in L1
constexpr int64_t kMcStrips = 16;  // A strips per group: 192 rows, 192 KiB per block of K, in L2
constexpr int64_t kNcStrips = 8;   // B strips per block of C: 192 x 256 floats, in L2
constexpr int64_t kPrefetchA = 8 * kMr;            // prefetch the A strip 8 steps of k ahead
constexpr int64_t kSerialFlops = int64_t(1) << 21;  // smaller products run on one thread

// acc (12 x 32) = sum over kc of a column of the A strip times a row of the B strip; then
// C = alpha acc + (first block ? beta C : C) on the rows x cols corner that exists
// (C is not read on the first block when beta is 0). Meanwhile fetches 2 kc floats from
// b_next into L2: a slice of the B strip that comes next.
VITUNE_TARGET_AVX512 void micro_kernel(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc,
                                       int rows, int cols, float alpha, float beta, bool first,
                                       const float* b_next) {
  // The C tile is read at the end; fetching it into L2 now hides the miss behind the
  // FMAs (in L1 the A stream would evict it before the end).
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + cols - 1), _MM_HINT_T1);
  }
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(bp);
    const __m512 b1 = _mm512_load_ps(bp + 16);
    _mm_prefetch(reinterpret_cast<const char*>(ap + kPrefetchA), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b_next + 2 * k), _MM_HINT_T1);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 av = _mm512_set1_ps(ap[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
    ap += kMr;
    bp += kNr;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 =
      cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) {
    if (r >= rows) break;
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

// out[k * width + q] = src[q * ld + k] for q < h, k < kc, and 0 for h <= q < width:
// a strip of h rows of a row-major matrix, packed k-major. Full strips go through 4 x 4
// in-register transposes.
template <int width>
VITUNE_TARGET_AVX512 void pack_transposed(const float* src, int64_t ld, int64_t h, int64_t kc, float* out) {
  if (h < width) {
    std::fill(out, out + kc * width, 0.0f);
    for (int64_t q = 0; q < h; ++q) {
      for (int64_t k = 0; k < kc; ++k) out[k * width + q] = src[q * ld + k];
    }
    return;
  }
  const int64_t kc4 = kc / 4 * 4;
  for (int64_t q = 0; q < width; q += 4) {
    const float* s = src + q * ld;
    for (int64_t k = 0; k < kc4; k += 4) {
      __m128 r0 = _mm_loadu_ps(s + k), r1 = _mm_loadu_ps(s + ld + k);
      __m128 r2 = _mm_loadu_ps(s + 2 * ld + k), r3 = _mm_loadu_ps(s + 3 * ld + k);
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      float* o = out + k * width + q;
      _mm_storeu_ps(o, r0);
      _mm_storeu_ps(o + width, r1);
      _mm_storeu_ps(o + 2 * width, r2);
      _mm_storeu_ps(o + 3 * width, r3);
    }
    for (int64_t k = kc4; k < kc; ++k) {
      for (int64_t i = 0; i < 4; ++i) out[k * width + q + i] = s[i * ld + k];
    }
  }
}

// out[k * width + q] = src[k * ld + q] for q < h, k < kc, and 0 for h <= q < width:
// h columns of a row-major matrix, packed k-major (a row copy per k).
template <int width>
VITUNE_TARGET_AVX512 void pack_direct(const float* src, int64_t ld, int64_t h, int64_t kc, float* out) {
  if (h == width) {
    for (int64_t k = 0; k < kc; ++k) std::memcpy(out + k * width, src + k * ld, width * sizeof(float));
    return;
  }
  for (int64_t k = 0; k < kc; ++k) {
    std::memcpy(out + k * width, src + k * ld, size_t(h) * sizeof(float));
    std::fill(out + k * width + h, out + (k + 1) * width, 0.0f);
  }
}

// Packs op(B)[k0 .. k0+kc, j0 .. j0+w) as a k-major strip of kNr columns.
VITUNE_TARGET_AVX512 void pack_b_strip(bool trans_b, const float* b, int64_t ldb, int64_t k0, int64_t kc,
                                       int64_t j0, int64_t w, float* out) {
  if (trans_b) {
    pack_transposed<kNr>(b + j0 * ldb + k0, ldb, w, kc, out);
  } else {
    pack_direct<kNr>(b + k0 * ldb + j0, ldb, w, kc, out);
  }
}

// Packs op(A)[i0 .. i0+h, k0 .. k0+kc) as consecutive k-major strips of kMr rows, each
// kMr * kc floats. For a transposed A, whose rows of op(A) are columns in memory, the
// strips are filled together, one row of A after another, so each is read once.
VITUNE_TARGET_AVX512 void pack_a_strips(bool trans_a, const float* a, int64_t lda, int64_t i0, int64_t h,
                                        int64_t k0, int64_t kc, float* out) {
  const int64_t strips = (h + kMr - 1) / kMr, strip_floats = kMr * kc;
  if (!trans_a) {
    for (int64_t s = 0; s < strips; ++s) {
      pack_transposed<kMr>(a + (i0 + s * kMr) * lda + k0, lda, std::min<int64_t>(kMr, h - s * kMr), kc,
                           out + s * strip_floats);
    }
    return;
  }
  const int64_t full = h / kMr, tail = h - full * kMr;
  for (int64_t k = 0; k < kc; ++k) {
    const float* row = a + (k0 + k) * lda + i0;
    for (int64_t s = 0; s < full; ++s) {
      std::memcpy(out + s * strip_floats + k * kMr, row + s * kMr, kMr * sizeof(float));
    }
    if (tail > 0) {
      float* o = out + full * strip_floats + k * kMr;
      std::memcpy(o, row + full * kMr, size_t(tail) * sizeof(float));
      std::fill(o + tail, o + kMr, 0.0f);
    }
  }
}

// A 64-byte aligned scratch buffer per thread, grown on demand and kept.
float* scratch(std::vector<float>& buffer, size_t floats) {
  if (buffer.size() < floats + 16) buffer.resize(floats + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t(63));
}

}  // namespace

void sgemm_avx512(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // K is cut into equal blocks of at most kKc (the last one may be shorter), so that no
  // block is left with a short tail; k = 0 still runs one empty block to apply beta.
  const int64_t k_blocks = std::max<int64_t>(1, (k + kKc - 1) / kKc);
  const int64_t kc_max = (k + k_blocks - 1) / k_blocks;
  const int64_t col_strips = (n + kNr - 1) / kNr;
  const int64_t row_strips = (m + kMr - 1) / kMr;
  const bool serial = 2 * m * n * k < kSerialFlops;
  auto block_k0 = [&](int64_t block) { return block * kc_max; };
  auto block_kc = [&](int64_t block) { return std::min(kc_max, k - block * kc_max); };

  // All of op(B), packed once: block of K `block`, strip t at packed_b + b_offset(block, t).
  static thread_local std::vector<float> b_buffer;
  float* packed_b = scratch(b_buffer, size_t(k_blocks * col_strips * kNr * kc_max));
  auto b_offset = [&](int64_t block, int64_t t) {
    return (block * col_strips * kc_max + t * block_kc(block)) * kNr;
  };
  parallel_for(k_blocks * col_strips, serial ? k_blocks * col_strips : 4, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t block = item / col_strips, t = item % col_strips;
      pack_b_strip(trans_b, b, ldb, block_k0(block), block_kc(block), t * kNr,
                   std::min<int64_t>(kNr, n - t * kNr), packed_b + b_offset(block, t));
    }
  });

  parallel_for(row_strips, serial ? row_strips : 1, [&](int64_t begin, int64_t end) {
    // A group of up to kMcStrips strips of op(A), packed for all of K: block of K
    // `block`, strip s of the group at packed_a + a_offset(block, s).
    static thread_local std::vector<float> a_buffer;
    float* packed_a = scratch(a_buffer, size_t(k_blocks * kMcStrips * kMr * kc_max));
    auto a_offset = [&](int64_t block, int64_t s) {
      return (block * kMcStrips * kc_max + s * block_kc(block)) * kMr;
    };
    // The range's groups are as equal as possible.
    const int64_t groups = (end - begin + kMcStrips - 1) / kMcStrips;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t s0 = begin + (end - begin) * g / groups, s1 = begin + (end - begin) * (g + 1) / groups;
      for (int64_t block = 0; block < k_blocks; ++block) {
        pack_a_strips(trans_a, a, lda, s0 * kMr, std::min(m, s1 * kMr) - s0 * kMr, block_k0(block),
                      block_kc(block), packed_a + a_offset(block, 0));
      }
      for (int64_t t0 = 0; t0 < col_strips; t0 += kNcStrips) {
        const int64_t t1 = std::min(col_strips, t0 + kNcStrips);
        for (int64_t block = 0; block < k_blocks; ++block) {
          const int64_t kc = block_kc(block);
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t j0 = t * kNr;
            const int cols = int(std::min<int64_t>(kNr, n - j0));
            // The B strip after this one, fetched into L2 a slice per micro-kernel call.
            const float* b_next = packed_b + (t + 1 < t1              ? b_offset(block, t + 1)
                                              : block + 1 < k_blocks ? b_offset(block + 1, t0)
                                                                     : b_offset(0, std::min(t1, col_strips - 1)));
            for (int64_t s = s0; s < s1; ++s) {
              const int64_t i0 = s * kMr;
              micro_kernel(kc, packed_a + a_offset(block, s - s0), packed_b + b_offset(block, t),
                           c + i0 * ldc + j0, ldc, int(std::min<int64_t>(kMr, m - i0)), cols, alpha, beta,
                           block == 0, b_next + (s - s0) * 2 * kc);
            }
          }
        }
      }
    }
  });
}

}  // namespace vitune::cpu
