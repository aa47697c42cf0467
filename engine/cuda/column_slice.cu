// A block of columns of a matrix copied out as a dense matrix on a CUDA device (the op's
// contract is in engine/op_signatures.inc): one thread per element of the output, any
// dtype moved as words of its width.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// out[r, c] = in[r, first + c] for r < rows, c < count.
template <typename W>
__global__ void column_slice_kernel(const W* in, int64_t rows, int64_t cols, int64_t first, int64_t count, W* out) {
  const int64_t total = rows * count;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / count, c = i % count;
    out[i] = in[r * cols + first + c];
  }
}

}  // namespace

Tensor column_slice(const Tensor& x, int64_t first, int64_t count) {
  const char* op = "column_slice";
  check_on_cuda(x, op);
  const op_checks::Columns s = op_checks::column_slice_shape(x, first, count, op);
  Tensor out({s.rows, count}, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  cudaStream_t queue = stream(x.device().index);
  op_checks::dispatch_width(x.dtype(), [&](auto zero) {
    using W = decltype(zero);
    column_slice_kernel<W><<<blocks_for(out.numel()), kThreads, 0, queue>>>(
        static_cast<const W*>(x.kernel_raw()), s.rows, s.cols, first, count, static_cast<W*>(out.kernel_raw()));
    check_launch("column_slice_kernel");
  });
  return out;
}

}  // namespace vitune::cuda
