// The bf16 GEMM of bf16gemm_amx.h. An AMX tile register holds 16 rows of 64 bytes, and
// TDPBF16PS multiplies an A tile of 16 rows x 16 pairs of bf16 (32 k) by a B tile of 16
// pairs x 16 columns (each column's pair in one 32-bit word), adding the 16 x 16 fp32
// results into a C tile: 8,192 multiply-adds per instruction. So:
//
//   op(A) is rounded to bf16 and paired along k (two consecutive k in one word, the lower
//     k in the low half, as for the AVX-512 BF16 kernel) into rows: row i holds its pairs
//     in order, zero-padded to whole tiles of 16 pairs; rows are padded to a multiple of 32;
//   op(B) likewise into blocks of 32 columns: block q holds, pair after pair, the words
//     of its 32 columns, so that a B tile is 16 consecutive rows of 128 bytes, read 64 at
//     a time (where k runs across the operand's rows in memory, as for a transposed A or
//     B, the words are formed 16 x 16 at a time and transposed in registers);
//   each 32 x 32 block of C is 2 x 2 C tiles, accumulated over all pairs, 16 at a time,
//     from two A tiles and two B tiles, then stored to scratch and combined with C.
//
// Columns are taken 256 at a time (a group of 8 B blocks: at K = 768 about 400 KiB, in
// L2) and the row blocks of a group are spread over the threads. An element of C is one
// tile accumulator's sum over the pairs in order, whatever thread computes it, so the
// bits are the same for any thread count.
//
// Every function that runs tile instructions carries VITUNE_TARGET_AMX, and gemm.cpp
// calls bf16gemm_amx only where cpu_isa() reaches Isa::Amx (engine/cpu/isa.cpp also asks
// Linux for the tile state). The file is compiled on x86 only.
#include "engine/cpu/bf16gemm_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "engine/cpu/bf16_bits.h"
#include "engine/cpu/isa.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

constexpr int64_t kTile = 16;          // rows of a tile; 16 words (64 bytes) per row
constexpr int64_t kBlock = 2 * kTile;  // a block of C is 2 x 2 tiles
constexpr int64_t kGroupBlocks = 8;    // column blocks per group: 256 columns

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The paired operands. op(A) (m x k): word (i, p) at a[i * pairs + p] for i < rows, the
// padded m. op(B) (k x n): word (p, j) at b[(j / kBlock) * pairs * kBlock + p * kBlock +
// j % kBlock] for j < cols, the padded n. pairs is ceil(k / 2) padded to whole tiles.
struct PairedOperands {
  int64_t rows, cols, pairs;
  uint32_t* a;
  uint32_t* b;
  int64_t b_index(int64_t p, int64_t j) const { return (j / kBlock) * pairs * kBlock + p * kBlock + j % kBlock; }
};

// Vector forms of bf16_bits.h, for the transposing packs: 16 words at a time. (The
// zero-masked forms of the intrinsics, all lanes on: the plain ones start from an
// undefined register, which GCC 12 reports as maybe uninitialized.)
// The bits of the bf16 values nearest to v (low 16 bits zero), as bf16_rounded_bits.
VITUNE_TARGET_AVX512 inline __m512i rounded_bits(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_maskz_srli_epi32(0xFFFF, bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd),
                                           _mm512_set1_epi32(int32_t(0xffff0000u)));
  const __m512i quiet_nan = _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(int32_t(0xffff0000u))),
                                            _mm512_set1_epi32(0x00400000));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(nan, rounded, quiet_nan);
}

// bf16_pair of 16 lanes: `low` rounded in the low halves, `high` in the high halves.
VITUNE_TARGET_AVX512 inline __m512i pair_words(__m512 low, __m512 high) {
  return _mm512_or_si512(_mm512_maskz_srli_epi32(0xFFFF, rounded_bits(low), 16), rounded_bits(high));
}

// The 16 words of 32 consecutive floats x[0..32): word q pairs x[2q] and x[2q + 1].
VITUNE_TARGET_AVX512 inline __m512i pair_consecutive(const float* x) {
  const __m512 first = _mm512_loadu_ps(x), second = _mm512_loadu_ps(x + 16);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  return pair_words(_mm512_permutex2var_ps(first, even, second), _mm512_permutex2var_ps(first, odd, second));
}

// Stores the transpose of a 16 x 16 block of words: column c of `rows` (word c of every
// row, in row order) goes to out + c * stride. Unpacks of 32- and 64-bit elements gather
// each 128-bit lane's columns, then two rounds of lane shuffles put the lanes in place.
VITUNE_TARGET_AVX512 inline void store_transposed(const __m512i (&rows)[16], uint32_t* out, int64_t stride) {
  __m512i t[16], r[16];
  for (int g = 0; g < 16; g += 4) {  // rows g .. g + 3
    t[g] = _mm512_maskz_unpacklo_epi32(0xFFFF, rows[g], rows[g + 1]);
    t[g + 1] = _mm512_maskz_unpackhi_epi32(0xFFFF, rows[g], rows[g + 1]);
    t[g + 2] = _mm512_maskz_unpacklo_epi32(0xFFFF, rows[g + 2], rows[g + 3]);
    t[g + 3] = _mm512_maskz_unpackhi_epi32(0xFFFF, rows[g + 2], rows[g + 3]);
    // r[g + c], lane l: column 4l + c of rows g .. g + 3
    r[g] = _mm512_maskz_unpacklo_epi64(0xFF, t[g], t[g + 2]);
    r[g + 1] = _mm512_maskz_unpackhi_epi64(0xFF, t[g], t[g + 2]);
    r[g + 2] = _mm512_maskz_unpacklo_epi64(0xFF, t[g + 1], t[g + 3]);
    r[g + 3] = _mm512_maskz_unpackhi_epi64(0xFF, t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    t[c] = _mm512_maskz_shuffle_i32x4(0xFFFF, r[c], r[4 + c], 0x88);      // lanes 0, 2 of rows 0-3, then of rows 4-7
    t[4 + c] = _mm512_maskz_shuffle_i32x4(0xFFFF, r[c], r[4 + c], 0xdd);  // lanes 1, 3
    t[8 + c] = _mm512_maskz_shuffle_i32x4(0xFFFF, r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_maskz_shuffle_i32x4(0xFFFF, r[8 + c], r[12 + c], 0xdd);
  }
  for (int c = 0; c < 4; ++c) {
    _mm512_storeu_si512(out + c * stride, _mm512_maskz_shuffle_i32x4(0xFFFF, t[c], t[8 + c], 0x88));
    _mm512_storeu_si512(out + (8 + c) * stride, _mm512_maskz_shuffle_i32x4(0xFFFF, t[c], t[8 + c], 0xdd));
    _mm512_storeu_si512(out + (4 + c) * stride, _mm512_maskz_shuffle_i32x4(0xFFFF, t[4 + c], t[12 + c], 0x88));
    _mm512_storeu_si512(out + (12 + c) * stride, _mm512_maskz_shuffle_i32x4(0xFFFF, t[4 + c], t[12 + c], 0xdd));
  }
}

// The 16 x 16 block of op(A)'s words at pairs p0.., rows i0.. from A stored k rows of m
// (pair p from rows 2p and 2p + 1), written to rows i0.. of the paired A.
VITUNE_TARGET_AVX512 void pair_a_block(const float* a, int64_t lda, int64_t p0, int64_t i0, uint32_t* out,
                                       int64_t pairs) {
  __m512i block[16];
  for (int64_t q = 0; q < 16; ++q) {
    const float* low = a + 2 * (p0 + q) * lda + i0;
    block[q] = pair_words(_mm512_loadu_ps(low), _mm512_loadu_ps(low + lda));
  }
  store_transposed(block, out + i0 * pairs + p0, pairs);
}

// The 16 x 16 block of op(B)'s words at columns j0.., pairs p0.. from B stored n rows of
// k, written to `out`, the paired B's word (p0, j0), rows of `stride` words apart.
VITUNE_TARGET_AVX512 void pair_b_block(const float* b, int64_t ldb, int64_t j0, int64_t p0, uint32_t* out,
                                       int64_t stride) {
  __m512i block[16];
  for (int64_t q = 0; q < 16; ++q) block[q] = pair_consecutive(b + (j0 + q) * ldb + 2 * p0);
  store_transposed(block, out, stride);
}

// Rounds and pairs op(A) (trans_a: A is k rows of m, else m rows of k) into `to`.
void pair_a(bool trans_a, const float* a, int64_t lda, int64_t m, int64_t k, const PairedOperands& to) {
  if (!trans_a) {  // k along A's rows: each row of pairs from one row of A
    parallel_for(to.rows, 16, [&](int64_t begin, int64_t end) {
      run_at_isa(Isa::Avx512, [&] {
        for (int64_t i = begin; i < end; ++i) {
          uint32_t* out = to.a + i * to.pairs;
          const float* row = i < m ? a + i * lda : nullptr;
          const int64_t full = row ? k / 2 : 0;
          for (int64_t p = 0; p < full; ++p) out[p] = bf16_pair(row[2 * p], row[2 * p + 1]);
          int64_t p = full;
          if (row && k % 2 == 1) out[p++] = bf16_pair(row[k - 1], 0.0f);
          for (; p < to.pairs; ++p) out[p] = 0u;
        }
      });
    });
    return;
  }
  // k across A's rows: pair p from rows 2p and 2p + 1, written down column p; blocks of
  // 16 pairs x 16 rows whole in A as 16 vectors, transposed into place.
  parallel_for(to.pairs / kTile, 1, [&](int64_t begin, int64_t end) {
    run_at_isa(Isa::Avx512, [&] {
      for (int64_t p0 = begin * kTile; p0 < end * kTile; p0 += kTile) {
        const int64_t whole_rows = 2 * p0 + 2 * kTile <= k ? m / kTile * kTile : 0;
        for (int64_t i0 = 0; i0 < whole_rows; i0 += kTile) pair_a_block(a, lda, p0, i0, to.a, to.pairs);
        for (int64_t p = p0; p < p0 + kTile; ++p) {  // the rest of these 16 columns
          uint32_t* column = to.a + p;                // word (i, p) at column[i * to.pairs]
          const int64_t filled = 2 * p < k ? m : 0, first = std::min(whole_rows, filled);
          const float* low = filled > 0 ? a + 2 * p * lda : nullptr;
          const float* high = 2 * p + 1 < k ? a + (2 * p + 1) * lda : nullptr;
          for (int64_t i = first; i < filled; ++i) column[i * to.pairs] = bf16_pair(low[i], high ? high[i] : 0.0f);
          for (int64_t i = filled; i < to.rows; ++i) column[i * to.pairs] = 0u;
        }
      }
    });
  });
}

// Rounds and pairs op(B) (trans_b: B is n rows of k, else k rows of n) into `to`.
void pair_b(bool trans_b, const float* b, int64_t ldb, int64_t n, int64_t k, const PairedOperands& to) {
  if (!trans_b) {  // k across B's rows: pair p from rows 2p and 2p + 1, along them
    parallel_for(to.pairs, 16, [&](int64_t begin, int64_t end) {
      run_at_isa(Isa::Avx512, [&] {
        for (int64_t p = begin; p < end; ++p) {
          const float* low = 2 * p < k ? b + 2 * p * ldb : nullptr;
          const float* high = 2 * p + 1 < k ? b + (2 * p + 1) * ldb : nullptr;
          for (int64_t j0 = 0; j0 < to.cols; j0 += kBlock) {
            uint32_t* out = to.b + to.b_index(p, j0);
            const int64_t valid = low ? std::clamp<int64_t>(n - j0, 0, kBlock) : 0;
            if (high) {
              for (int64_t q = 0; q < valid; ++q) out[q] = bf16_pair(low[j0 + q], high[j0 + q]);
            } else {
              for (int64_t q = 0; q < valid; ++q) out[q] = bf16_pair(low[j0 + q], 0.0f);
            }
            for (int64_t q = valid; q < kBlock; ++q) out[q] = 0u;
          }
        }
      });
    });
    return;
  }
  // k along B's rows: column j of op(B) from row j of B, written down the pairs; blocks
  // of 16 columns x 16 pairs whole in B as 16 vectors, transposed into place.
  parallel_for(to.cols / kTile, 1, [&](int64_t begin, int64_t end) {
    run_at_isa(Isa::Avx512, [&] {
      for (int64_t j0 = begin * kTile; j0 < end * kTile; j0 += kTile) {
        const int64_t whole_pairs = j0 + kTile <= n ? k / (2 * kTile) * kTile : 0;
        for (int64_t p0 = 0; p0 < whole_pairs; p0 += kTile) {
          pair_b_block(b, ldb, j0, p0, to.b + to.b_index(p0, j0), kBlock);
        }
        for (int64_t j = j0; j < j0 + kTile; ++j) {     // the rest of these 16 columns
          uint32_t* column = to.b + to.b_index(0, j);  // word (p, j) at column[p * kBlock]
          const float* row = j < n ? b + j * ldb : nullptr;
          const int64_t full = row ? k / 2 : 0;
          for (int64_t p = whole_pairs; p < full; ++p) column[p * kBlock] = bf16_pair(row[2 * p], row[2 * p + 1]);
          int64_t p = std::max(full, whole_pairs);
          if (row && k % 2 == 1) column[kBlock * p++] = bf16_pair(row[k - 1], 0.0f);
          for (; p < to.pairs; ++p) column[p * kBlock] = 0u;
        }
      }
    });
  });
}

// The tile configuration that LDTILECFG reads (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate a block's 2 x 2 C tiles, 4-5 hold its two A tiles and 6-7 its two
// B tiles: each 16 rows of 64 bytes. (GCC's _tile_loadconfig tells the compiler that it
// reads 8 bytes only, so the stores to the rest of the configuration could be dropped;
// the operand here is the whole object.)
VITUNE_TARGET_AMX void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = kTile;
    config.bytes_per_row[t] = 64;
  }
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}

VITUNE_TARGET_AMX void release_tiles() { _tile_release(); }

// block (kBlock x kBlock floats, row-major) = the product of row block i0 of A and
// column block j0 of B over all pairs. The A tiles' 32 rows lie a row of pairs apart, a
// pattern the hardware prefetchers follow poorly: each step asks for the rows two steps
// ahead (about a fifth off the ViT-B/16 products); B's rows are consecutive.
VITUNE_TARGET_AMX void multiply_block(const PairedOperands& x, int64_t i0, int64_t j0, float* block) {
  const uint32_t* a = x.a + i0 * x.pairs;
  const uint32_t* b = x.b + x.b_index(0, j0);
  const int64_t a_stride = x.pairs * 4, b_stride = kBlock * 4;
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t p = 0; p < x.pairs; p += kTile) {
    for (int64_t r = 0; r < kBlock; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(a + r * x.pairs + p + 2 * kTile), _MM_HINT_T0);
    }
    _tile_loadd(4, a + p, a_stride);
    _tile_loadd(5, a + kTile * x.pairs + p, a_stride);
    _tile_loadd(6, b + p * kBlock, b_stride);
    _tile_loadd(7, b + p * kBlock + kTile, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, block, kBlock * 4);
  _tile_stored(1, block + kTile, kBlock * 4);
  _tile_stored(2, block + kTile * kBlock, kBlock * 4);
  _tile_stored(3, block + kTile * kBlock + kTile, kBlock * 4);
}

// C = alpha block + beta C on the part of the block inside C (C unread when beta is 0),
// as the fp32 kernel's store: alpha * acc, then + beta * C by a fused multiply-add.
VITUNE_TARGET_AMX void combine_block(const float* block, int64_t rows, int64_t cols, float alpha, float beta,
                                     float* c, int64_t ldc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* acc = block + r * kBlock;
    float* out = c + r * ldc;
    if (beta == 0.0f) {
      for (int64_t q = 0; q < cols; ++q) out[q] = alpha * acc[q];
    } else {
      for (int64_t q = 0; q < cols; ++q) out[q] = __builtin_fmaf(beta, out[q], alpha * acc[q]);
    }
  }
}

}  // namespace

void bf16gemm_amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  PairedOperands x{round_up(m, kBlock), round_up(n, kBlock), round_up(std::max<int64_t>((k + 1) / 2, 1), kTile),
                   nullptr, nullptr};
  // Scratch kept per thread and only ever grown (every word is written before it is
  // read, so a smaller product leaves the rest alone).
  static thread_local std::vector<uint32_t> a_buffer, b_buffer;
  if (a_buffer.size() < size_t(x.rows * x.pairs)) a_buffer.resize(size_t(x.rows * x.pairs));
  if (b_buffer.size() < size_t(x.cols * x.pairs)) b_buffer.resize(size_t(x.cols * x.pairs));
  x.a = a_buffer.data();
  x.b = b_buffer.data();
  pair_a(trans_a, a, lda, m, k, x);
  pair_b(trans_b, b, ldb, n, k, x);
  const int64_t row_blocks = x.rows / kBlock, col_blocks = x.cols / kBlock;
  for (int64_t g0 = 0; g0 < col_blocks; g0 += kGroupBlocks) {
    const int64_t g1 = std::min(col_blocks, g0 + kGroupBlocks);
    parallel_for(row_blocks, 1, [&](int64_t begin, int64_t end) {
      configure_tiles();
      alignas(64) float block[kBlock * kBlock];
      for (int64_t rb = begin; rb < end; ++rb) {
        for (int64_t cb = g0; cb < g1; ++cb) {
          const int64_t i0 = rb * kBlock, j0 = cb * kBlock;
          multiply_block(x, i0, j0, block);
          combine_block(block, std::min(kBlock, m - i0), std::min(kBlock, n - j0), alpha, beta, c + i0 * ldc + j0,
                        ldc);
        }
      }
      release_tiles();
    });
  }
}

}  // namespace vitune::cpu
