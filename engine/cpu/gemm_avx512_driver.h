// The blocked, threaded driver of vitune's AVX-512 GEMM kernels (fp32: sgemm_avx512.cpp;
// bf16 operands, fp32 accumulation: bf16gemm_avx512.cpp), blocked for a core with a
// 48 KiB L1d and a 1 MiB L2. A kernel supplies its register tile (Kernel::kMr rows x
// Kernel::kNr columns, kNr = 32), its block of K (Kernel::kKc) and its micro-kernel; the
// driver packs 32-bit elements (floats, or for the bf16 kernel a pair of bf16 in the
// bits of one float) and never looks at their values. K is cut into blocks of about kKc
// (equal sizes, so no short tail), and:
//
//   pack all of op(B), block of K by block, into strips of kNr columns (k-major,
//     zero-padded), shared by the threads
//   the threads take equal contiguous ranges of kMr row strips of op(A); in each,
//   for each group of up to kMcStrips = 16 strips:
//     pack the group's rows of op(A) for all of K (or, where one block of C holds
//       all of B's strips, each block of K just before its one use, or read a
//       transposed A there in place; or, for a row-major A and a product of few B
//       strips, read A in place: reads_a_in_place)
//     for each block of kNcStrips = 8 B strips (a block of C that stays in L2)
//       for each block of K, in order
//         for each B strip   (stays in L1 for the 16 calls)
//           for each A strip (from L2, read 8 times)
//             micro_kernel: the kMr x kNr tile of C += A strip x B strip
//
// Where one block of C holds all of B's strips and K is one block or the rows are few
// (the products of a small ViT), B is not shared: each thread packs each block of K of
// B itself and runs all its groups on it before the next block, so that no thread reads
// packed strips from the other core's cache.
//
// So a B strip is read from L1 by 16 micro-kernel calls, the group's A block of K stays
// in L2 for the 8 B strips, and the C block stays in L2 across the blocks of K: C goes
// to memory once, not once per block of K.
//
// Each element of C is the sum over the blocks of K, in order, of one accumulator chain
// per block: the order depends only on k, never on how the rows are split among
// threads, so the bits are the same for any thread count.
//
// The driver itself runs no wide instruction; the kernels' functions carry their level's
// target attribute (engine/cpu/isa.h). x86 only.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/parallel.h"

namespace vitune::cpu::gemm_driver {

constexpr int64_t kMcStrips = 16;                   // A strips per group
constexpr int64_t kNcStrips = 8;                    // B strips per block of C
constexpr int64_t kSerialFlops = int64_t(1) << 21;  // smaller products run on one thread
constexpr int64_t kInPlaceMaxStrips = 4;            // at most this many B strips read a row-major A in place
constexpr int64_t kMaxRowStripsBPerThread = 32;     // at most this many A strips pack B per thread over blocks of K

// A 64-byte aligned scratch buffer per thread, grown on demand and kept.
inline float* scratch(std::vector<float>& buffer, size_t floats) {
  if (buffer.size() < floats + 16) buffer.resize(floats + 16);
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t(63));
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
template <int kNr>
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
template <int kMr>
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

// Whether a row-major A, rows lda elements apart, is read in place rather than packed by
// a product of col_strips B strips. Packing costs a pass over A that pays back only where
// many B strips reuse the packed strips: on the Fashion-MNIST ViT's products (K of 64 to
// 256; bench/README, "A read in place") reading in place was faster at 2 B strips and
// slower at 6 to 8. Nor in place where kMr of its rows would crowd into fewer than
// kMr / 3 of the L1's 64 sets (lda a multiple of 512 floats, say): they and the B strip
// would evict each other.
template <int kMr>
inline bool reads_a_in_place(int64_t lda, int64_t col_strips) {
  if (col_strips > kInPlaceMaxStrips) return false;
  bool used[64] = {};
  int sets = 0;
  for (int64_t r = 0; r < kMr; ++r) {
    const int64_t set = (r * lda * int64_t(sizeof(float)) / 64) % 64;
    sets += used[set] ? 0 : 1;
    used[set] = true;
  }
  return 3 * sets >= kMr;
}

// A micro-kernel's strip of op(A), kMr rows by kc, one step of k at a time: k-major (row
// r of the step at p[r], the next step lda further on: packed, lda = kMr, or a transposed
// A read in place, whose rows are op(A)'s columns) or a row-major A read in place (row
// r at p[r * lda], the next step one further on; prefetch_next when the next call reads
// the kMr rows after these in place). In place, rows 0, 4 and 8 are
// bases and the others sit lda, 2 lda or 3 lda past one, offsets that x86's
// base + index * scale addressing takes, so the twelve rows cost five registers.
template <bool kInPlace, int kMr>
class AStrip {
  static_assert(kMr <= 12, "in place, rows are reached from three bases four rows apart");

 public:
  AStrip(const float* p, int64_t lda, bool prefetch_next = false)
      : row0_(p), row4_(p + 4 * lda), row8_(p + 8 * lda), lda_(lda), prefetch_next_(prefetch_next) {}

  __attribute__((always_inline)) float at(int r) const {
    if (!kInPlace) return row0_[r];
    const float* base = r < 4 ? row0_ : r < 8 ? row4_ : row8_;
    const int q = r % 4;
    return base[q == 0 ? 0 : q == 1 ? lda_ : q == 2 ? 2 * lda_ : 3 * lda_];
  }
  // Fetches, at step k, what comes later into L1: k-major, the step 8 ahead (where steps
  // are not contiguous, its last element too, which may lie on a line of its own); a
  // row-major A in place, every 16 steps, a line of each row of the next strip (the
  // first pass over a strip reads it from L2 or memory, as packing would have).
  __attribute__((always_inline)) void prefetch(int64_t k) const {
    if (!kInPlace) {
      _mm_prefetch(reinterpret_cast<const char*>(row0_ + 8 * lda_), _MM_HINT_T0);
      if (lda_ != kMr) _mm_prefetch(reinterpret_cast<const char*>(row0_ + 8 * lda_ + kMr - 1), _MM_HINT_T0);
      return;
    }
    if (!prefetch_next_ || k % 16 != 0) return;
    const float* next = row0_ + kMr * lda_;
    for (int r = 0; r < kMr; ++r) _mm_prefetch(reinterpret_cast<const char*>(next + r * lda_), _MM_HINT_T0);
  }

  __attribute__((always_inline)) void next() {
    if (!kInPlace) {
      row0_ += lda_;
      return;
    }
    ++row0_;
    ++row4_;
    ++row8_;
  }

 private:
  const float* row0_;
  const float* row4_;
  const float* row8_;
  int64_t lda_;
  bool prefetch_next_;
};

// The C tile is read at the end of a micro-kernel; fetching it into L2 at the start
// hides the miss behind the multiply-adds (in L1 the A stream would evict it).
__attribute__((always_inline)) VITUNE_TARGET_AVX512 inline void prefetch_c_tile(const float* c, int64_t ldc,
                                                                                int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + cols - 1), _MM_HINT_T1);
  }
}

// C = alpha acc + (first block ? beta C : C), then + bias[0 .. cols) on each row when
// bias is not null (the last block of K), on the rows x cols corner of a kMr x 32 tile
// that exists (C is not read on the first block when beta is 0). With the bias added
// last, C holds the bits of the product followed by a separate bias add.
template <int kMr>
__attribute__((always_inline)) VITUNE_TARGET_AVX512 inline void store_c_tile(const __m512 (&acc)[kMr][2], float* c,
                                                                             int64_t ldc, int rows, int cols,
                                                                             float alpha, float beta, bool first,
                                                                             const float* bias) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  const __mmask16 m1 =
      cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
  const __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 bias1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
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
    if (bias) {
      x0 = _mm512_add_ps(x0, bias0);
      x1 = _mm512_add_ps(x1, bias1);
    }
    _mm512_mask_storeu_ps(cr, m0, x0);
    _mm512_mask_storeu_ps(cr + 16, m1, x1);
  }
}

// Row-major C = alpha op(A) op(B) + beta C with Kernel, whose
//   template <bool kInPlaceA>
//   static void micro_kernel(int64_t kc, AStrip<kInPlaceA, kMr> a, const float* bp,
//       float* c, int64_t ldc, int rows, int cols, float alpha, float beta, bool first,
//       const float* bias, const float* b_next);
// computes the tile of an A strip and a B strip over kc, stores it with store_c_tile
// (bias: the tile's columns of the bias row on the last block of K, else null) and
// meanwhile fetches its slice of the next B strip (2 kc elements from b_next) into L2.
// A bias row (n floats, or null) is added to every row of C after the whole sum.
// Where reads_a_in_place says so, a row-major A is read in place, and a transposed A
// wherever one block of C holds all of B's strips (its rows are already k-major strips,
// lda apart, and each is used once per block of K: packing would only copy them
// closer), but for a last strip of fewer than kMr rows, which is packed (zero-padded).
template <typename Kernel>
void run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
         const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const float* bias) {
  constexpr int kMr = Kernel::kMr, kNr = Kernel::kNr;
  static_assert(kNr == 32, "store_c_tile writes two 16-float vectors per row");
  if (m == 0 || n == 0) return;
  // K is cut into equal blocks of at most kKc (the last one may be shorter), so that no
  // block is left with a short tail; k = 0 still runs one empty block to apply beta.
  const int64_t k_blocks = std::max<int64_t>(1, (k + Kernel::kKc - 1) / Kernel::kKc);
  const int64_t kc_max = (k + k_blocks - 1) / k_blocks;
  const int64_t col_strips = (n + kNr - 1) / kNr;
  const int64_t row_strips = (m + kMr - 1) / kMr;
  const bool serial = 2 * m * n * k < kSerialFlops;
  auto block_k0 = [&](int64_t block) { return block * kc_max; };
  auto block_kc = [&](int64_t block) { return std::min(kc_max, k - block * kc_max); };

  // Where one block of C holds all of B's strips, each block of K of A is used once, so
  // it is packed just before its use into a one-block buffer that stays in L2. If
  // moreover K is one block or the rows are few, each thread packs B itself, a block of
  // K at a time, and runs all its groups on that block before the next: the packed
  // strips it reads are the ones it wrote, in its own L2, and C (at most
  // kMaxRowStripsBPerThread strips of rows) stays in L2 across the blocks. Otherwise all
  // of B is packed once, shared by the threads.
  const bool one_c_block = col_strips <= kNcStrips;
  const bool in_place = trans_a ? one_c_block : reads_a_in_place<kMr>(lda, col_strips);
  const bool b_per_thread = one_c_block && (k_blocks == 1 || row_strips <= kMaxRowStripsBPerThread);
  // Block of K `block`, strip t of B at packed_b + b_offset(block, t) (a thread's own
  // buffer holds one block).
  auto b_offset = [&](int64_t block, int64_t t) {
    return ((b_per_thread ? 0 : block) * col_strips * kc_max + t * block_kc(block)) * kNr;
  };
  auto pack_b = [&](float* packed_b, int64_t block, int64_t t) {
    pack_b_strip<kNr>(trans_b, b, ldb, block_k0(block), block_kc(block), t * kNr, std::min<int64_t>(kNr, n - t * kNr),
                      packed_b + b_offset(block, t));
  };
  static thread_local std::vector<float> b_buffer;
  float* const shared_b = b_per_thread ? nullptr : scratch(b_buffer, size_t(k_blocks * col_strips * kNr * kc_max));
  if (!b_per_thread) {
    parallel_for(k_blocks * col_strips, serial ? k_blocks * col_strips : 4, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) pack_b(shared_b, item / col_strips, item % col_strips);
    });
  }

  // The tiles of row strips [begin, end) and B strips [t_begin, t_end), on one thread.
  auto run_range = [&](int64_t begin, int64_t end, int64_t t_begin, int64_t t_end) {
    static thread_local std::vector<float> a_buffer, own_b_buffer;
    float* const packed_b = b_per_thread ? scratch(own_b_buffer, size_t(col_strips * kNr * kc_max)) : shared_b;
    // A group of up to kMcStrips strips of op(A), packed: block of K `block`, strip s
    // of the group at packed_a + a_offset(block, s).
    const int64_t a_blocks = one_c_block ? 1 : k_blocks;
    float* packed_a = scratch(a_buffer, size_t(a_blocks * kMcStrips * kMr * kc_max));
    auto a_offset = [&](int64_t block, int64_t s) {
      return ((one_c_block ? 0 : block) * kMcStrips * kc_max + s * block_kc(block)) * kMr;
    };
    // The range's groups are as equal as possible: group g is strips [s0, s1), of which
    // those from first_packed on are packed (the ones before are read in place).
    const int64_t groups = (end - begin + kMcStrips - 1) / kMcStrips;
    struct Group {
      int64_t s0, s1, first_packed;
    };
    auto group = [&](int64_t g) {
      const int64_t s0 = begin + (end - begin) * g / groups, s1 = begin + (end - begin) * (g + 1) / groups;
      return Group{s0, s1, in_place ? std::max(s0, std::min(s1, m / kMr)) : s0};
    };
    auto pack_a_block = [&](const Group& r, int64_t block) {
      if (r.first_packed == r.s1) return;
      pack_a_strips<kMr>(trans_a, a, lda, r.first_packed * kMr, std::min(m, r.s1 * kMr) - r.first_packed * kMr,
                         block_k0(block), block_kc(block), packed_a + a_offset(block, r.first_packed - r.s0));
    };
    // The tiles of the group's strips and B strips [t0, t1) over block of K `block`.
    auto multiply_block = [&](const Group& r, int64_t block, int64_t t0, int64_t t1) {
      const int64_t kc = block_kc(block);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t j0 = t * kNr;
        const int cols = int(std::min<int64_t>(kNr, n - j0));
        // The B strip after this one, fetched into L2 a slice per micro-kernel call (a
        // thread's own buffer has no next block: it starts again at t0).
        const float* b_next = packed_b + (t + 1 < t1              ? b_offset(block, t + 1)
                                          : b_per_thread         ? b_offset(block, t0)
                                          : block + 1 < k_blocks ? b_offset(block + 1, t0)
                                                                 : b_offset(0, std::min(t1, col_strips - 1)));
        for (int64_t s = r.s0; s < r.s1; ++s) {
          const int64_t i0 = s * kMr;
          const float* bias_tile = bias && block == k_blocks - 1 ? bias + j0 : nullptr;
          auto multiply = [&](const auto& a_strip) {
            Kernel::micro_kernel(kc, a_strip, packed_b + b_offset(block, t), c + i0 * ldc + j0, ldc,
                                 int(std::min<int64_t>(kMr, m - i0)), cols, alpha, beta, block == 0, bias_tile,
                                 b_next + (s - r.s0) * 2 * kc);
          };
          if (s >= r.first_packed) {
            multiply(AStrip<false, kMr>(packed_a + a_offset(block, s - r.s0), kMr));
          } else if (trans_a) {
            multiply(AStrip<false, kMr>(a + block_k0(block) * lda + i0, lda));
          } else {
            multiply(AStrip<true, kMr>(a + i0 * lda + block_k0(block), lda, s + 1 < r.first_packed));
          }
        }
      }
    };
    if (b_per_thread) {
      for (int64_t block = 0; block < k_blocks; ++block) {
        for (int64_t t = t_begin; t < t_end; ++t) pack_b(packed_b, block, t);
        for (int64_t g = 0; g < groups; ++g) {
          const Group r = group(g);
          pack_a_block(r, block);
          multiply_block(r, block, t_begin, t_end);
        }
      }
      return;
    }
    for (int64_t g = 0; g < groups; ++g) {
      const Group r = group(g);
      if (!one_c_block) {
        for (int64_t block = 0; block < k_blocks; ++block) pack_a_block(r, block);
      }
      for (int64_t t0 = t_begin; t0 < t_end; t0 += kNcStrips) {
        for (int64_t block = 0; block < k_blocks; ++block) {
          if (one_c_block) pack_a_block(r, block);
          multiply_block(r, block, t0, std::min(t_end, t0 + kNcStrips));
        }
      }
    }
  };
  // With B packed per thread, each thread packs all of what the others split: all of B
  // when the rows are split, all of A when B's strips are. So the threads split the
  // longer side, op(B)'s columns where n > m.
  if (b_per_thread && n > m) {
    parallel_for(col_strips, serial ? col_strips : 1,
                 [&](int64_t t_begin, int64_t t_end) { run_range(0, row_strips, t_begin, t_end); });
  } else {
    parallel_for(row_strips, serial ? row_strips : 1,
                 [&](int64_t begin, int64_t end) { run_range(begin, end, 0, col_strips); });
  }
}

}  // namespace vitune::cpu::gemm_driver
