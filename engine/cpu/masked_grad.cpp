// CPU gradient of a linear layer's weight at selected entries only. For y = x W^T with
// x [T, in], dy [T, out] and the entry e = j*in + k of W [out, in]:
//   dW[j, k] = sum_t dy[t, j] * x[t, k].
// The tokens are split into fixed chunks of kTokenChunk, and a chunk into tiles of
// kTokenTile. A task takes whole chunks and reads their rows dy[t, :] and x[t, :] where
// they lie (no transposed copies), a tile at a time. Over a tile, each entry sums its
// terms in the data's type by fused multiply-adds in token order; the tile's sum is
// added to the chunk's double partial sum of that entry, and the partial sums are added
// in chunk order. Tiles and chunks do not depend on the thread count, so neither does
// the result, and every instruction-set level (portable, AVX2, AVX-512) forms the same
// fused multiply-adds in the same order, so neither does it depend on the level. A float
// sum runs over at most kTokenTile terms, so its rounding error is that of a 32-term dot
// product; the tiles' sums are added in double, whose rounding is negligible beside
// float's. The cost
// is O(T * selected), and the scratch is the partial sums (one per chunk and entry) and
// the entries' row and column numbers: the dense [out, in] gradient is never formed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/flop_counter.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

#if VITUNE_X86_LEVELS
#include <immintrin.h>
#endif

namespace vitune::cpu {

namespace {

// Tokens whose terms one partial sum adds.
constexpr int64_t kTokenChunk = 256;

// Entries whose partial sums are updated together, tile by tile.
constexpr int64_t kEntryBlock = 512;

// Tokens whose terms one sum in the data's type adds; their rows, which every block of
// entries reads in turn, stay in L1 for narrow layers (32 (in + out) floats within it),
// else in L2.
constexpr int64_t kTokenTile = 32;

// sum[i] += the sum over the n <= kTokenTile tokens of dy[t, rows[i]] * x[t, cols[i]],
// formed in T by fused multiply-adds in token order, for i in [0, count).
template <typename T>
void accumulate_block(const T* dy, const T* x, int64_t n, int64_t out_features, int64_t in_features,
                      const int32_t* rows, const int32_t* cols, int64_t count, double* sum) {
  for (int64_t i = 0; i < count; ++i) {
    T tile_sum = 0;
    for (int64_t t = 0; t < n; ++t) {
      tile_sum = std::fma(dy[t * out_features + rows[i]], x[t * in_features + cols[i]], tile_sum);
    }
    sum[i] += double(tile_sum);
  }
}

#if VITUNE_X86_LEVELS
// accumulate_block for floats, 16 entries (a group) at a time, with the float sums of
// up to kGroupsInRegisters groups held in registers across the tile's tokens: x by
// permutes of its row held in registers where the row has at most 64 floats (the
// Fashion-MNIST ViT's qkv, proj and fc1; there the permutes take 0.72-0.81x the gathers'
// time, bench/README), else by AVX-512 gathers; dy by a plain load where the group lies
// in 16 consecutive rows, as with one entry per row, else by a gather. Each lane runs
// the plain loop's fused multiply-adds in its order: the bits are the same.
static_assert(kEntryBlock <= 16 * 32, "one bit per group of 16 entries in a uint32_t");

// Groups whose sums (a register each) stay in registers: with the x row (four
// registers) and the groups' column indices this leaves registers for the terms.
constexpr int kGroupsInRegisters = 8;

// The zero-masked forms of the intrinsics: the plain ones start from an undefined
// register, which GCC 12 reports as maybe uninitialized.
VITUNE_TARGET_AVX512 inline __m512 gather(const float* base, __m512i index) {
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, index, base, 4);
}

// Floats 0 .. 7 and 8 .. 15 of v as doubles.
VITUNE_TARGET_AVX512 inline __m512d widen_low(__m512 v) {
  return _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_extractf32x8_ps(0xFF, v, 0));
}
VITUNE_TARGET_AVX512 inline __m512d widen_high(__m512 v) {
  return _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
}

// An x row of at most 64 floats, held in four registers (zero past in_features).
struct NarrowRow {
  __m512 part[4];
};

// The lanes of each of the four registers that lie inside a row of in_features floats.
struct NarrowRowLanes {
  __mmask16 part[4];
};

inline NarrowRowLanes narrow_row_lanes(int64_t in_features) {
  NarrowRowLanes lanes;
  for (int q = 0; q < 4; ++q) {
    const int64_t valid = std::clamp<int64_t>(in_features - 16 * q, 0, 16);
    lanes.part[q] = __mmask16(valid == 16 ? 0xFFFF : (1u << valid) - 1);
  }
  return lanes;
}

VITUNE_TARGET_AVX512 inline NarrowRow load_narrow_row(const float* x_row, const NarrowRowLanes& lanes) {
  NarrowRow row;
  for (int q = 0; q < 4; ++q) row.part[q] = _mm512_maskz_loadu_ps(lanes.part[q], x_row + 16 * q);
  return row;
}

// x_row[index[l]] for the 16 lanes, index < 64, by two permutes across register pairs
// and a blend on bit 5 of the index (`high`): the same values as the gather, with no
// memory access per lane.
VITUNE_TARGET_AVX512 inline __m512 pick(const NarrowRow& row, __m512i index, __mmask16 high) {
  const __m512 low_pair = _mm512_permutex2var_ps(row.part[0], index, row.part[1]);
  const __m512 high_pair = _mm512_permutex2var_ps(row.part[2], index, row.part[3]);
  return _mm512_mask_blend_ps(high, low_pair, high_pair);
}

// For the kGroups groups at rows/cols/sum and the n tokens of a tile, lane l of group g
// (entry i = 16 g + l):
//   sum[i] += double(s),  s = fma(dy[t, rows[i]], x[t, cols[i]], s) for t < n from s = +0,
// accumulate_block's arithmetic. Bit g of `consecutive`: group g lies in 16 consecutive
// rows. kNarrow: x's rows fit four registers.
template <int kGroups, bool kNarrow>
VITUNE_TARGET_AVX512 void accumulate_groups(const float* dy, const float* x, int64_t n, int64_t out_features,
                                            int64_t in_features, const int32_t* rows, const int32_t* cols,
                                            uint32_t consecutive, double* sum) {
  __m512 acc[kGroups];
  __m512i col[kGroups];
  __mmask16 col_high[kGroups];
  const NarrowRowLanes lanes = kNarrow ? narrow_row_lanes(in_features) : NarrowRowLanes{};
#pragma GCC unroll 8
  for (int g = 0; g < kGroups; ++g) {
    acc[g] = _mm512_setzero_ps();
    col[g] = _mm512_loadu_si512(cols + 16 * g);
    col_high[g] = _mm512_test_epi32_mask(col[g], _mm512_set1_epi32(32));
  }
  for (int64_t t = 0; t < n; ++t) {
    const float* dy_row = dy + t * out_features;
    const float* x_row = x + t * in_features;
    NarrowRow x_registers;
    if constexpr (kNarrow) x_registers = load_narrow_row(x_row, lanes);
#pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      const __m512 a = (consecutive >> g) & 1u ? _mm512_loadu_ps(dy_row + rows[16 * g])
                                                : gather(dy_row, _mm512_loadu_si512(rows + 16 * g));
      __m512 b;
      if constexpr (kNarrow) {
        b = pick(x_registers, col[g], col_high[g]);
      } else {
        b = gather(x_row, col[g]);
      }
      acc[g] = _mm512_fmadd_ps(a, b, acc[g]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < kGroups; ++g) {
    _mm512_storeu_pd(sum + 16 * g, _mm512_add_pd(_mm512_loadu_pd(sum + 16 * g), widen_low(acc[g])));
    _mm512_storeu_pd(sum + 16 * g + 8, _mm512_add_pd(_mm512_loadu_pd(sum + 16 * g + 8), widen_high(acc[g])));
  }
}

// The groups in runs of kGroups, then of half as many, down to one: at most one run
// of each smaller size.
template <int kGroups, bool kNarrow>
VITUNE_TARGET_AVX512 void accumulate_whole_groups(const float* dy, const float* x, int64_t n, int64_t out_features,
                                                  int64_t in_features, const int32_t* rows, const int32_t* cols,
                                                  int64_t groups, uint32_t consecutive, double* sum) {
  int64_t g = 0;
  for (; g + kGroups <= groups; g += kGroups) {
    accumulate_groups<kGroups, kNarrow>(dy, x, n, out_features, in_features, rows + 16 * g, cols + 16 * g,
                                        consecutive >> g, sum + 16 * g);
  }
  // Only while groups are left: g < groups <= 32 keeps the shift inside the word.
  if constexpr (kGroups > 1) {
    if (g < groups) {
      accumulate_whole_groups<kGroups / 2, kNarrow>(dy, x, n, out_features, in_features, rows + 16 * g,
                                                    cols + 16 * g, groups - g, consecutive >> g, sum + 16 * g);
    }
  }
}

VITUNE_TARGET_AVX512 void accumulate_block_avx512(const float* dy, const float* x, int64_t n, int64_t out_features,
                                                  int64_t in_features, const int32_t* rows, const int32_t* cols,
                                                  int64_t count, double* sum) {
  const int64_t groups = count / 16, whole = 16 * groups;
  const __m512i steps = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  uint32_t consecutive = 0;  // bit g: the rows of entries 16g .. 16g + 15 are rows[16g] + 0 .. 15
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i expected = _mm512_add_epi32(_mm512_set1_epi32(rows[16 * g]), steps);
    if (_mm512_cmpeq_epi32_mask(_mm512_loadu_si512(rows + 16 * g), expected) == 0xFFFF) consecutive |= 1u << g;
  }
  if (in_features <= 64) {
    accumulate_whole_groups<kGroupsInRegisters, true>(dy, x, n, out_features, in_features, rows, cols, groups,
                                                      consecutive, sum);
  } else {
    accumulate_whole_groups<kGroupsInRegisters, false>(dy, x, n, out_features, in_features, rows, cols, groups,
                                                       consecutive, sum);
  }
  accumulate_block(dy, x, n, out_features, in_features, rows + whole, cols + whole, count - whole, sum + whole);
}
#endif

// Indices must be strictly increasing and inside [0, out * in).
void check_selection(const Tensor& indices, int64_t out_features, int64_t in_features) {
  const int64_t* idx = indices.kernel_data<int64_t>();
  const int64_t limit = out_features * in_features;
  for (int64_t i = 0; i < indices.numel(); ++i) {
    VITUNE_CHECK(idx[i] >= 0 && idx[i] < limit, "masked_weight_grad: index ", idx[i],
                 " at position ", i, " is outside [0, ", limit, ") for a weight [", out_features,
                 ", ", in_features, "]");
    VITUNE_CHECK(i == 0 || idx[i] > idx[i - 1], "masked_weight_grad: indices must be sorted and "
                 "unique, but position ", i, " holds ", idx[i], " after ", idx[i - 1]);
  }
}

}  // namespace

// Math: y[t, j] = sum_k x[t, k] W[j, k], so for a loss L with dy = dL/dy,
//   dL/dW[j, k] = sum_t dL/dy[t, j] * dy[t, j]/dW[j, k] = sum_t dy[t, j] * x[t, k],
// the entry (j, k) of dy^T x, evaluated here only at the selected (j, k).
void masked_weight_grad(const Tensor& dy, const Tensor& x, const Tensor& indices,
                        int64_t in_features, Tensor& accumulate) {
  const char* op = "masked_weight_grad";
  cpu::check_float(dy, op);
  cpu::check_float(x, op);
  cpu::check_float(accumulate, op);
  cpu::check_host(indices, op);
  const op_checks::MaskedGradShape shape =
      op_checks::masked_grad_shape(dy, x, indices, in_features, accumulate, op);
  const int64_t out_features = shape.out_features, tokens = shape.tokens;
  check_selection(indices, out_features, in_features);
  const int64_t selected = indices.numel();
  if (selected == 0 || tokens == 0) return;
  count_flops(2 * tokens * selected);

  const int64_t* idx = indices.kernel_data<int64_t>();
  std::vector<int32_t> rows(static_cast<size_t>(selected)), cols(static_cast<size_t>(selected));
  for (int64_t i = 0; i < selected; ++i) {
    rows[size_t(i)] = int32_t(idx[i] / in_features);
    cols[size_t(i)] = int32_t(idx[i] % in_features);
  }
  const int64_t chunks = (tokens + kTokenChunk - 1) / kTokenChunk;
  std::vector<double> partial(static_cast<size_t>(chunks * selected), 0.0);
  cpu::dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    const T* dy_rows = dy.kernel_data<T>();
    const T* x_rows = x.kernel_data<T>();
    // The plain loop is called directly, not through a pointer, so that each
    // instruction-set level's copy of the body inlines it: its fused multiply-adds are
    // then instructions where the level has them, not calls to the C library's fma.
    bool avx512 = false;
#if VITUNE_X86_LEVELS
    avx512 = std::is_same_v<T, float> && cpu_isa() >= Isa::Avx512;
#endif
    auto block = [avx512](const T* dy_tile, const T* x_tile, int64_t n, int64_t out_features, int64_t in_features,
                          const int32_t* rows, const int32_t* cols, int64_t count, double* sum) {
#if VITUNE_X86_LEVELS
      if constexpr (std::is_same_v<T, float>) {
        if (avx512) {
          return accumulate_block_avx512(dy_tile, x_tile, n, out_features, in_features, rows, cols, count, sum);
        }
      }
#endif
      accumulate_block<T>(dy_tile, x_tile, n, out_features, in_features, rows, cols, count, sum);
    };
    parallel_for_simd(chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const int64_t chunk_end = std::min(tokens, (c + 1) * kTokenChunk);
        for (int64_t t0 = c * kTokenChunk; t0 < chunk_end; t0 += kTokenTile) {
          const int64_t n = std::min(kTokenTile, chunk_end - t0);
          for (int64_t b = 0; b < selected; b += kEntryBlock) {
            block(dy_rows + t0 * out_features, x_rows + t0 * in_features, n, out_features, in_features,
                  rows.data() + b, cols.data() + b, std::min(kEntryBlock, selected - b),
                  partial.data() + c * selected + b);
          }
        }
      }
    });
    T* acc = accumulate.kernel_data<T>();
    parallel_for_simd(selected, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double sum = 0.0;
        for (int64_t c = 0; c < chunks; ++c) sum += partial[size_t(c * selected + i)];
        acc[i] += T(sum);
      }
    });
  });
}

}  // namespace vitune::cpu
