// Multi-head scaled dot-product attention on the host, in timm's fused layout: qkv is
// [B, N, 3*D] = [B, N, 3, heads, dh]. Each (batch, head) pair is one independent task,
// so results do not depend on the thread count. The head's Q, K, V are gathered into
// small contiguous buffers, padded to whole register tiles, and every matrix product
// of the head runs through one register-tiled loop nest written with vector types, in
// which each sum keeps a fixed order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "engine/cpu/check.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/vector_math.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

namespace {

template <typename T>
using Vector64 = cpu::Vector64<T>;
using cpu::Floats;

// A register tile of a product is kTileRows rows by one vector. Tokens and head_dim are
// padded to kPad, a whole number of tiles and of float vectors.
constexpr int64_t kTileRows = 8;
constexpr int64_t kPad = 16;
static_assert(kPad % kTileRows == 0 && kPad % int64_t(sizeof(Floats) / sizeof(float)) == 0 &&
                  kPad % int64_t(sizeof(Floats) / sizeof(double)) == 0,
              "padding must be a whole number of tiles and vectors");

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// dst[r * ld_dst + c] = scale * src[r * ld_src + c] for r < rows, c < cols: a head's
// slice of qkv into its scratch matrix, or back. A row goes in whole 64-byte vectors; one
// that is not a whole number of them ends with the vector that ends at its last element,
// overlapping the one before (the operands never overlap, so the overlap is written
// twice with the same values). Only rows narrower than a vector go element by element.
template <typename T>
__attribute__((always_inline)) inline void copy_block(const T* __restrict src, int64_t ld_src, T* __restrict dst,
                                                      int64_t ld_dst, int64_t rows, int64_t cols, T scale = T(1)) {
  using Row = typename Vector64<T>::type;
  constexpr int64_t width = int64_t(sizeof(Row) / sizeof(T));
  auto copy_vector = [scale](const T* from, T* to) {
    Row v;
    std::memcpy(&v, from, sizeof v);
    v *= scale;
    std::memcpy(to, &v, sizeof v);
  };
  for (int64_t r = 0; r < rows; ++r) {
    const T* __restrict from = src + r * ld_src;
    T* __restrict to = dst + r * ld_dst;
    if (cols < width) {
      for (int64_t c = 0; c < cols; ++c) to[c] = scale * from[c];
      continue;
    }
    int64_t c = 0;
    for (; c + width <= cols; c += width) copy_vector(from + c, to + c);
    if (c < cols) copy_vector(from + cols - width, to + cols - width);
  }
}

// One step of a register transpose of `width` vectors of `width` lanes: for each pair
// of vectors (r, r + kStep) with r & kStep == 0, the lanes l with l & kStep swap with
// the lanes l - kStep of the other, so that blocks of kStep x kStep lanes trade places.
// After the steps 1, 2, 4, ..., width / 2 (in any order), vector r holds lane r of every
// input vector.
template <int64_t kStep, typename Row, size_t... kLane>
__attribute__((always_inline)) inline void transpose_step(Row* v, std::index_sequence<kLane...>) {
  constexpr int64_t width = int64_t(sizeof...(kLane));
  for (int64_t r = 0; r < width; ++r) {
    if (r & kStep) continue;
    const Row low = v[r], high = v[r + kStep];
    // Lane indices address low's lanes as 0 .. width - 1 and high's as width .. 2 width - 1.
    v[r] = __builtin_shufflevector(low, high, ((kLane & kStep) ? width + kLane - kStep : kLane)...);
    v[r + kStep] = __builtin_shufflevector(low, high, ((kLane & kStep) ? width + kLane : kLane + kStep)...);
  }
  if constexpr (kStep * 2 < width) transpose_step<kStep * 2>(v, std::index_sequence<kLane...>());
}

// dst[c * ld_dst + r] = src[r * ld_src + c] for r < rows, c < cols: a transposed copy.
// Blocks of one vector's width of columns go through registers a block of as many rows
// at a time, the rows past `rows` as zeros, so every row of dst must have room for rows
// rounded up to a whole vector; columns past the last whole block go one by one.
template <typename T>
__attribute__((always_inline)) inline void transpose_block(const T* __restrict src, int64_t ld_src,
                                                           T* __restrict dst, int64_t ld_dst, int64_t rows,
                                                           int64_t cols) {
  using Row = typename Vector64<T>::type;
  constexpr int64_t width = int64_t(sizeof(Row) / sizeof(T));
  const int64_t whole = cols / width * width;
  for (int64_t c0 = 0; c0 < whole; c0 += width) {
    for (int64_t r0 = 0; r0 < rows; r0 += width) {
      Row v[width];
      for (int64_t r = 0; r < width; ++r) {
        v[r] = Row{};
        if (r0 + r < rows) std::memcpy(&v[r], src + (r0 + r) * ld_src + c0, sizeof(Row));
      }
      transpose_step<1>(v, std::make_index_sequence<width>());
      for (int64_t c = 0; c < width; ++c) std::memcpy(dst + (c0 + c) * ld_dst + r0, &v[c], sizeof(Row));
    }
  }
  for (int64_t c = whole; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
  }
}

// Sizes of one call: qkv [batch, tokens, 3 * dim], dim = heads * head_dim; tokens and
// head_dim rounded up to whole vectors for the scratch buffers, and tokens to whole
// tiles of rows for the products' rows (the rows past them are never read).
struct AttentionShape : op_checks::AttentionShape {
  int64_t padded_tokens, padded_head_dim, tile_rows;
};

AttentionShape attention_shape(const Tensor& qkv, int heads, const char* op) {
  cpu::check_float(qkv, op);
  const op_checks::AttentionShape s = op_checks::attention_shape(qkv, heads, op);
  return {s, round_up(s.tokens, kPad), round_up(s.head_dim, kPad), round_up(s.tokens, kTileRows)};
}

// acc[r] = sum_{p < k} a(i0 + r, p) b[p * ldb + j0 ...] for r < kTileRows: one register
// tile of a product, one vector wide, with a(i, p) = a[i * lda + p], or a[p * lda + i]
// when kTransposeA. Every element sums over p in order.
template <bool kTransposeA, typename T, typename Row>
__attribute__((always_inline)) inline void tile_sums(const T* a, int64_t lda, const T* b, int64_t ldb, int64_t i0,
                                                     int64_t j0, int64_t k, Row (&acc)[kTileRows]) {
  // Per p: one load of b's row segment and kTileRows broadcast multiply-adds.
  for (Row& row : acc) row = Row{};
  for (int64_t p = 0; p < k; ++p) {
    Row bp;
    std::memcpy(&bp, b + p * ldb + j0, sizeof(Row));
    for (int64_t r = 0; r < kTileRows; ++r) {
      const T ar = kTransposeA ? a[p * lda + i0 + r] : a[(i0 + r) * lda + p];
      acc[r] += ar * bp;
    }
  }
}

// c[i, j] = sum_{p < k} a(i, p) b[p * ldb + j] for i < m, j < n, with m a multiple of
// kTileRows, n of the tile width, and a(i, p) as in tile_sums. Entries of c outside the
// valid rows and columns of a and b (the padding) only ever meet padding, so the valid
// part of c never depends on what the padding holds.
template <bool kTransposeA, typename T>
void tile_product(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m,
                  int64_t n, int64_t k) {
  using Row = typename Vector64<T>::type;
  constexpr int64_t width = int64_t(sizeof(Row) / sizeof(T));
  for (int64_t i0 = 0; i0 < m; i0 += kTileRows) {
    for (int64_t j0 = 0; j0 < n; j0 += width) {
      Row acc[kTileRows];
      tile_sums<kTransposeA>(a, lda, b, ldb, i0, j0, k, acc);
      for (int64_t r = 0; r < kTileRows; ++r) {
        std::memcpy(c + (i0 + r) * ldc + j0, &acc[r], sizeof(Row));
      }
    }
  }
}

// Row reductions run over whole padded rows (a multiple of kPad entries) in vectors:
// partial results per lane, then a halving tree across the lanes, so that no sum waits
// on one add after another; the order depends on the row length alone.
using Doubles = Vector64<double>::type;
typedef float HalfFloats __attribute__((vector_size(32)));
constexpr int64_t kDoubleLanes = int64_t(sizeof(Doubles) / sizeof(double));
static_assert(kPad % (2 * kDoubleLanes) == 0, "padded rows must be a whole number of double vectors");

// x[0 .. 8) as doubles.
inline Doubles widen(const float* x) {
  HalfFloats h;
  std::memcpy(&h, x, sizeof h);
  return __builtin_convertvector(h, Doubles);
}
inline Doubles widen(const double* x) {
  Doubles d;
  std::memcpy(&d, x, sizeof d);
  return d;
}

// Lane 0 of v combined with every other lane by halving, in registers: lane i with lane
// i + width/2, then i + width/4, ...; for a sum of 8 lanes
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
template <int64_t kHalf, typename Row, typename Combine, size_t... kLane>
__attribute__((always_inline)) inline Row combine_halves(Row v, const Combine& combine,
                                                        std::index_sequence<kLane...>) {
  constexpr int64_t width = int64_t(sizeof...(kLane));
  const Row upper = __builtin_shufflevector(v, v, ((int64_t(kLane) + kHalf) % width)...);
  v = combine(v, upper);
  if constexpr (kHalf > 1) {
    return combine_halves<kHalf / 2>(v, combine, std::index_sequence<kLane...>());
  } else {
    return v;
  }
}

template <typename T, typename Row, typename Combine>
__attribute__((always_inline)) inline T fold_lanes(Row v, const Combine& combine) {
  constexpr size_t width = sizeof(Row) / sizeof(T);
  return combine_halves<int64_t(width / 2)>(v, combine, std::make_index_sequence<width>())[0];
}

// sum_j of the lanes of term(j) for j = 0, 8, 16, ... < count: term(j) is the doubles
// of entries j .. j + 7 (a row, or its products with another; the products of two
// floats are exact in double).
template <typename Term>
double row_sum(int64_t count, const Term& term) {
  Doubles even{}, odd{};
  for (int64_t j = 0; j < count; j += 2 * kDoubleLanes) {
    even += term(j);
    odd += term(j + kDoubleLanes);
  }
  return fold_lanes<double>(even + odd, [](Doubles x, Doubles y) { return x + y; });
}

// row[j] = e^(row[j] - max) for j < count, a whole number of float vectors, where
// every row[j] <= max (cpu::exp_nonpositive, within one ulp of exp).
void exp_shifted(float* row, int64_t count, float max) {
  for (int64_t j = 0; j < count; j += cpu::kFloatLanes) {
    cpu::store_floats(row + j, cpu::exp_nonpositive(cpu::load_floats(row + j) - max));
  }
}

// The same for doubles (the finite-difference checks), by std::exp.
void exp_shifted(double* row, int64_t count, double max) {
  for (int64_t j = 0; j < count; ++j) row[j] = std::exp(row[j] - max);
}

// The larger of two vectors, lane by lane.
template <typename Row>
__attribute__((always_inline)) inline Row lane_max(Row current, Row other) {
  return other > current ? other : current;
}

// One tile of kTileRows rows of the scores, S[r, j] = sum_{d < dh} q[r * dh + d]
// k_t[d * nt + j] for every j < nt (each sum in order of d), into scores[r * nt + j],
// with the columns j >= n set to -inf so that the softmax gives them 0; max[r] is then
// the largest S[r, j], j < n.
template <typename T>
void scores_tile(const T* q, int64_t dh, const T* k_t, int64_t nt, int64_t n, T* scores, T (&max)[kTileRows]) {
  using Row = typename Vector64<T>::type;
  constexpr int64_t width = int64_t(sizeof(Row) / sizeof(T));
  const Row none = Row{} - std::numeric_limits<T>::infinity();
  Row lane{}, row_max[kTileRows];
  for (int64_t l = 0; l < width; ++l) lane[l] = T(l);
  for (Row& m : row_max) m = none;
  for (int64_t j0 = 0; j0 < nt; j0 += width) {
    Row acc[kTileRows];
    tile_sums<false>(q, dh, k_t, nt, 0, j0, dh, acc);
    const bool padded = j0 + width > n;
    for (int64_t r = 0; r < kTileRows; ++r) {
      if (padded) acc[r] = lane + T(j0) < T(n) ? acc[r] : none;
      std::memcpy(scores + r * nt + j0, &acc[r], sizeof(Row));
      row_max[r] = lane_max(row_max[r], acc[r]);
    }
  }
  for (int64_t r = 0; r < kTileRows; ++r) max[r] = fold_lanes<T>(row_max[r], lane_max<Row>);
}

// Softmax of each of `count` <= kTileRows rows of ld entries given each row's max, the
// sum in double, written in place and to out[r * n + j] for j < n. A row has padded_n
// entries, those past n -inf, so that they end as 0 and every step runs over whole
// vectors. Each step runs for all the rows before the next, so that the rows' chains of
// dependent steps overlap.
template <typename T>
void softmax_rows(T* rows, int64_t ld, int64_t count, int64_t n, int64_t padded_n, const T (&max)[kTileRows],
                  T* out) {
  T inverse[kTileRows];
  for (int64_t r = 0; r < count; ++r) exp_shifted(rows + r * ld, padded_n, max[r]);
  for (int64_t r = 0; r < count; ++r) {
    const T* row = rows + r * ld;
    inverse[r] = T(1.0 / row_sum(padded_n, [row](int64_t j) { return widen(row + j); }));
  }
  for (int64_t r = 0; r < count; ++r) {
    T* row = rows + r * ld;
    for (int64_t j = 0; j < padded_n; ++j) row[j] *= inverse[r];
    copy_block(row, ld, out + r * n, n, 1, n);
  }
}

// The padded operands of one (batch, head) pair in the forward pass. nt and dp are the
// padded token count and head size.
template <typename T>
struct ForwardScratch {
  std::vector<T> q;       // [nt, dh], times scale (timm scales q before the product)
  std::vector<T> k_t;     // [dh, nt]: K^T
  std::vector<T> v;       // [nt, dp]
  std::vector<T> scores;  // [nt, nt]: S, then P
  std::vector<T> out;     // [nt, dp]: P V

  explicit ForwardScratch(const AttentionShape& s)
      : q(size_t(s.padded_tokens * s.head_dim)),
        k_t(size_t(s.head_dim * s.padded_tokens)),
        v(size_t(s.padded_tokens * s.padded_head_dim)),
        scores(size_t(s.padded_tokens * s.padded_tokens)),
        out(size_t(s.padded_tokens * s.padded_head_dim)) {}
};

// One (batch b, head h) of the forward pass: S = (scale Q) K^T, P = softmax(S) rowwise
// into probs, ctx = P V into the head's columns of ctx.
template <typename T>
void forward_head(const AttentionShape& s, int64_t b, int64_t h, T scale, const T* qkv, T* ctx,
                  T* probs, ForwardScratch<T>& w) {
  const int64_t n = s.tokens, dh = s.head_dim, nt = s.padded_tokens, dp = s.padded_head_dim;
  const T* head = qkv + b * n * 3 * s.dim + h * dh;  // Q of token 0; K at + dim, V at + 2 dim
  copy_block(head, 3 * s.dim, w.q.data(), dh, n, dh, scale);
  transpose_block(head + s.dim, 3 * s.dim, w.k_t.data(), nt, n, dh);
  copy_block(head + 2 * s.dim, 3 * s.dim, w.v.data(), dp, n, dh);
  T* head_probs = probs + (b * s.heads + h) * n * n;
  for (int64_t i = 0; i < n; i += kTileRows) {
    T max[kTileRows];
    scores_tile(w.q.data() + i * dh, dh, w.k_t.data(), nt, n, w.scores.data() + i * nt, max);
    softmax_rows(w.scores.data() + i * nt, nt, std::min(kTileRows, n - i), n, nt, max, head_probs + i * n);
  }
  tile_product<false>(w.scores.data(), nt, w.v.data(), dp, w.out.data(), dp, s.tile_rows, dp, n);
  copy_block(w.out.data(), dp, ctx + b * n * s.dim + h * dh, s.dim, n, dh);
}

// The padded operands of one pair in the backward pass.
template <typename T>
struct BackwardScratch {
  std::vector<T> q;      // [nt, dp], times scale
  std::vector<T> k;      // [nt, dp], times scale
  std::vector<T> v_t;    // [dh, nt]: V^T
  std::vector<T> d_out;  // [nt, dp]: dO, the head's columns of dctx
  std::vector<T> p;      // [nt, nt]: P
  std::vector<T> ds;     // [nt, nt]: dP, then dS
  std::vector<T> grad;   // [nt, dp]: dQ, dK, dV in turn

  explicit BackwardScratch(const AttentionShape& s)
      : q(size_t(s.padded_tokens * s.padded_head_dim)),
        k(q.size()),
        v_t(size_t(s.head_dim * s.padded_tokens)),
        d_out(q.size()),
        p(size_t(s.padded_tokens * s.padded_tokens)),
        ds(p.size()),
        grad(q.size()) {}
};

// Copies the valid [tokens, head_dim] part of grad into dqkv at column offset `part`.
template <typename T>
void scatter_head_grad(const AttentionShape& s, int64_t b, int64_t h, int64_t part,
                       const std::vector<T>& grad, T* dqkv) {
  copy_block(grad.data(), s.padded_head_dim, dqkv + b * s.tokens * 3 * s.dim + part * s.dim + h * s.head_dim,
             3 * s.dim, s.tokens, s.head_dim);
}

// One (batch b, head h) of the backward pass; see attention_backward for the math.
template <typename T>
void backward_head(const AttentionShape& s, int64_t b, int64_t h, T scale, const T* dctx,
                   const T* qkv, const T* probs, T* dqkv, BackwardScratch<T>& w) {
  const int64_t n = s.tokens, dh = s.head_dim, nt = s.padded_tokens, dp = s.padded_head_dim;
  const T* head = qkv + b * n * 3 * s.dim + h * dh;  // Q of token 0; K at + dim, V at + 2 dim
  copy_block(head, 3 * s.dim, w.q.data(), dp, n, dh, scale);
  copy_block(head + s.dim, 3 * s.dim, w.k.data(), dp, n, dh, scale);
  transpose_block(head + 2 * s.dim, 3 * s.dim, w.v_t.data(), nt, n, dh);
  copy_block(dctx + b * n * s.dim + h * dh, s.dim, w.d_out.data(), dp, n, dh);
  copy_block(probs + (b * s.heads + h) * n * n, n, w.p.data(), nt, n, n);
  // dP = dO V^T, then dS = P * (dP - rowsum(dP * P)) row by row, the row sums of a tile
  // of rows first so that they overlap. P and dP are 0 past n, so dS is too (NaN where
  // the row sum is; only rows of dK past n, which are not kept, read those columns).
  tile_product<false>(w.d_out.data(), dp, w.v_t.data(), nt, w.ds.data(), nt, s.tile_rows, nt, dh);
  for (int64_t i0 = 0; i0 < n; i0 += kTileRows) {
    const int64_t rows = std::min(kTileRows, n - i0);
    T c[kTileRows];
    for (int64_t r = 0; r < rows; ++r) {
      const T* ds = w.ds.data() + (i0 + r) * nt;
      const T* p = w.p.data() + (i0 + r) * nt;
      c[r] = T(row_sum(nt, [ds, p](int64_t j) { return widen(ds + j) * widen(p + j); }));
    }
    for (int64_t r = 0; r < rows; ++r) {
      T* ds = w.ds.data() + (i0 + r) * nt;
      const T* p = w.p.data() + (i0 + r) * nt;
      for (int64_t j = 0; j < nt; ++j) ds[j] = p[j] * (ds[j] - c[r]);
    }
  }
  // dQ = dS (scale K), dK = dS^T (scale Q), dV = P^T dO; each sums over tokens in order.
  tile_product<false>(w.ds.data(), nt, w.k.data(), dp, w.grad.data(), dp, s.tile_rows, dp, n);
  scatter_head_grad(s, b, h, 0, w.grad, dqkv);
  tile_product<true>(w.ds.data(), nt, w.q.data(), dp, w.grad.data(), dp, s.tile_rows, dp, n);
  scatter_head_grad(s, b, h, 1, w.grad, dqkv);
  tile_product<true>(w.p.data(), nt, w.d_out.data(), dp, w.grad.data(), dp, s.tile_rows, dp, n);
  scatter_head_grad(s, b, h, 2, w.grad, dqkv);
}

}  // namespace

Tensor attention_forward(const Tensor& qkv, int heads, Tensor& probs) {
  const char* op = "attention_forward";
  const AttentionShape s = attention_shape(qkv, heads, op);
  Tensor ctx({s.batch, s.tokens, s.dim}, qkv.dtype(), qkv.device());
  probs = Tensor({s.batch, s.heads, s.tokens, s.tokens}, qkv.dtype(), qkv.device());
  cpu::dispatch_float(qkv, op, [&](auto zero) {
    using T = decltype(zero);
    const T scale = T(1.0 / std::sqrt(double(s.head_dim)));
    const T* q = qkv.kernel_data<T>();
    T* c = ctx.kernel_data<T>();
    T* p = probs.kernel_data<T>();
    parallel_for_simd(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
      ForwardScratch<T> scratch(s);
      for (int64_t task = begin; task < end; ++task) {
        forward_head(s, task / s.heads, task % s.heads, scale, q, c, p, scratch);
      }
    });
  });
  return ctx;
}

// Backward, per (batch, head) with scale = 1/sqrt(dh), S = scale Q K^T, P = softmax(S)
// rowwise and O = P V:
//   dV = P^T dO                       (O is linear in V)
//   dP = dO V^T                       (O is linear in P)
//   dS = P * (dP - rowsum(dP * P))    (the softmax backward of each row, see softmax.cpp)
//   dQ = scale dS K,  dK = scale dS^T Q   (S is bilinear in Q and K)
// Each lands in dqkv at the offsets its input came from: Q at 0, K at D, V at 2D, plus
// h * dh.
Tensor attention_backward(const Tensor& dctx, const Tensor& qkv, const Tensor& probs, int heads) {
  const char* op = "attention_backward";
  const AttentionShape s = attention_shape(qkv, heads, op);
  cpu::check_host(dctx, op);
  cpu::check_host(probs, op);
  op_checks::check_attention_grads(s, dctx, qkv, probs, op);
  Tensor dqkv(qkv.shape(), qkv.dtype(), qkv.device());
  cpu::dispatch_float(qkv, op, [&](auto zero) {
    using T = decltype(zero);
    const T scale = T(1.0 / std::sqrt(double(s.head_dim)));
    const T* dc = dctx.kernel_data<T>();
    const T* q = qkv.kernel_data<T>();
    const T* p = probs.kernel_data<T>();
    T* dq = dqkv.kernel_data<T>();
    parallel_for_simd(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
      BackwardScratch<T> scratch(s);
      for (int64_t task = begin; task < end; ++task) {
        backward_head(s, task / s.heads, task % s.heads, scale, dc, q, p, dq, scratch);
      }
    });
  });
  return dqkv;
}

}  // namespace vitune::cpu
