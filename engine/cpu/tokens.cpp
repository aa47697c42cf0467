// Token bookkeeping of the ViT: the cls token in front of the patch tokens, and the
// cls token picked out again for the head. Pure copies, parallel over the batch.
#include <cstring>

#include "engine/cpu/check.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

// Copies `count` rows of `row_bytes` from each of `batch` sequences: destination row
// offset `to`, source row offset `from`, with the given rows per sequence.
void copy_token_rows(const Tensor& src, int64_t src_tokens, int64_t from, Tensor& dst,
                     int64_t dst_tokens, int64_t to, int64_t count) {
  int64_t batch = dst.dim(0);
  size_t row_bytes = size_t(dst.dim(-1)) * dtype_size(dst.dtype());
  const char* s = static_cast<const char*>(src.kernel_raw());
  char* d = static_cast<char*>(dst.kernel_raw());
  parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      std::memcpy(d + size_t(b * dst_tokens + to) * row_bytes,
                  s + size_t(b * src_tokens + from) * row_bytes, size_t(count) * row_bytes);
    }
  });
}

void check_sequence(const Tensor& x, const char* op) {
  cpu::check_float(x, op);
  VITUNE_CHECK(x.ndim() == 3, op, ": expected a [B, N, D] tensor, got ", x.str());
}

}  // namespace

Tensor prepend_token(const Tensor& token, const Tensor& x) {
  check_sequence(x, "prepend_token");
  VITUNE_CHECK(token.dtype() == x.dtype() && token.numel() == x.dim(2), "prepend_token: token ",
               token.str(), " for sequences ", x.str());
  int64_t batch = x.dim(0), n = x.dim(1), d = x.dim(2);
  Tensor out({batch, n + 1, d}, x.dtype(), x.device());
  Tensor tokens({batch, 1, d}, x.dtype(), x.device());
  for (int64_t b = 0; b < batch; ++b) tokens.rows(b, b + 1).copy_from(token.reshape({1, 1, d}));
  copy_token_rows(tokens, 1, 0, out, n + 1, 0, 1);
  copy_token_rows(x, n, 0, out, n + 1, 1, n);
  return out;
}

Tensor drop_first_token(const Tensor& x) {
  check_sequence(x, "drop_first_token");
  VITUNE_CHECK(x.dim(1) >= 1, "drop_first_token: no token in ", x.str());
  Tensor out({x.dim(0), x.dim(1) - 1, x.dim(2)}, x.dtype(), x.device());
  copy_token_rows(x, x.dim(1), 1, out, x.dim(1) - 1, 0, x.dim(1) - 1);
  return out;
}

Tensor select_token(const Tensor& x, int64_t index) {
  check_sequence(x, "select_token");
  VITUNE_CHECK(index >= 0 && index < x.dim(1), "select_token: token ", index, " of ", x.str());
  Tensor out({x.dim(0), 1, x.dim(2)}, x.dtype(), x.device());
  copy_token_rows(x, x.dim(1), index, out, 1, 0, 1);
  return out.reshape({x.dim(0), x.dim(2)});
}

Tensor place_token(const Tensor& y, int64_t tokens, int64_t index) {
  cpu::check_float(y, "place_token");
  VITUNE_CHECK(y.ndim() == 2 && index >= 0 && index < tokens, "place_token: ", y.str(), " at token ",
               index, " of ", tokens);
  Tensor out = Tensor::zeros({y.dim(0), tokens, y.dim(1)}, y.dtype(), y.device());
  copy_token_rows(y.reshape({y.dim(0), 1, y.dim(1)}), 1, 0, out, tokens, index, 1);
  return out;
}

}  // namespace vitune::cpu
