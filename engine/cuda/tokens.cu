// Token bookkeeping of the ViT on a CUDA device: the cls token in front of the patch
// tokens, and the cls token picked out again for the head. Pure copies: one kernel
// copies a range of token rows of every sequence, one thread per element.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// For every sequence b < batch and every r < count, d < dim:
//   dst[(b * dst_tokens + to + r) * dim + d] = src[b * src_batch_stride + (from + r) * dim + d]
// (src_batch_stride 0 repeats one source sequence, e.g. the cls token, for all b).
template <typename T>
__global__ void copy_token_rows_kernel(const T* src, int64_t src_batch_stride, int64_t from, T* dst,
                                       int64_t dst_tokens, int64_t to, int64_t batch, int64_t count, int64_t dim) {
  const int64_t total = batch * count * dim;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = e / (count * dim);
    const int64_t r = (e / dim) % count;
    const int64_t d = e % dim;
    dst[(b * dst_tokens + to + r) * dim + d] = src[b * src_batch_stride + (from + r) * dim + d];
  }
}

// Copies rows [from, from + count) of each source sequence to rows [to, to + count) of
// the same sequence of dst [batch, dst_tokens, dim]; src_tokens rows per source
// sequence, or 0 for one sequence shared by all.
void copy_token_rows(const Tensor& src, int64_t src_tokens, int64_t from, Tensor& dst, int64_t dst_tokens,
                     int64_t to, int64_t count, const char* op) {
  const int64_t batch = dst.dim(0), dim = dst.dim(-1);
  const int64_t total = batch * count * dim;
  if (total == 0) return;
  cudaStream_t s = stream(dst.device().index);
  dispatch_float(dst, op, [&](auto zero) {
    using T = decltype(zero);
    copy_token_rows_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(
        src.kernel_data<T>(), src_tokens * dim, from, dst.kernel_data<T>(), dst_tokens, to, batch, count, dim);
    check_launch("copy_token_rows_kernel");
  });
}

void check_sequence(const Tensor& x, const char* op) {
  check_cuda_float(x, op);
  VITUNE_CHECK(x.ndim() == 3, op, ": expected a [B, N, D] tensor, got ", x.str());
}

}  // namespace

Tensor prepend_token(const Tensor& token, const Tensor& x) {
  check_sequence(x, "prepend_token");
  check_on_cuda(token, "prepend_token");
  same_device({&token, &x}, "prepend_token");
  VITUNE_CHECK(token.dtype() == x.dtype() && token.numel() == x.dim(2), "prepend_token: token ",
               token.str(), " for sequences ", x.str());
  int64_t batch = x.dim(0), n = x.dim(1), d = x.dim(2);
  Tensor out({batch, n + 1, d}, x.dtype(), x.device());
  copy_token_rows(token, 0, 0, out, n + 1, 0, 1, "prepend_token");
  copy_token_rows(x, n, 0, out, n + 1, 1, n, "prepend_token");
  return out;
}

Tensor drop_first_token(const Tensor& x) {
  check_sequence(x, "drop_first_token");
  VITUNE_CHECK(x.dim(1) >= 1, "drop_first_token: no token in ", x.str());
  Tensor out({x.dim(0), x.dim(1) - 1, x.dim(2)}, x.dtype(), x.device());
  copy_token_rows(x, x.dim(1), 1, out, x.dim(1) - 1, 0, x.dim(1) - 1, "drop_first_token");
  return out;
}

Tensor select_token(const Tensor& x, int64_t index) {
  check_sequence(x, "select_token");
  VITUNE_CHECK(index >= 0 && index < x.dim(1), "select_token: token ", index, " of ", x.str());
  Tensor out({x.dim(0), 1, x.dim(2)}, x.dtype(), x.device());
  copy_token_rows(x, x.dim(1), index, out, 1, 0, 1, "select_token");
  return out.reshape({x.dim(0), x.dim(2)});
}

Tensor place_token(const Tensor& y, int64_t tokens, int64_t index) {
  check_cuda_float(y, "place_token");
  VITUNE_CHECK(y.ndim() == 2 && index >= 0 && index < tokens, "place_token: ", y.str(), " at token ",
               index, " of ", tokens);
  Tensor out = Tensor::zeros({y.dim(0), tokens, y.dim(1)}, y.dtype(), y.device());
  copy_token_rows(y, 1, 0, out, tokens, index, 1, "place_token");
  return out;
}

}  // namespace vitune::cuda
