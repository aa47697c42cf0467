// Per-feature sums of |x| over the tokens of each image on a CUDA device, accumulated
// over the images in order (the op's contract is in engine/op_signatures.inc). Two
// kernels, no atomics: one thread per (image, feature) sums the tokens in order -- the
// threads of a warp take neighbouring features, so reads are coalesced -- into a
// [B, F] scratch; then one thread per feature adds the images' sums in image order.
// Every addition is the CPU's, in the CPU's order (double, no products to fuse), so the
// result has the CPU's bits.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

// per_image[b * F + f] = sum over t < T, in order, of |x[b, t, f]|, in double.
template <typename T>
__global__ void image_sums_kernel(const T* x, int64_t batch, int64_t tokens, int64_t features, double* per_image) {
  const int64_t count = batch * features;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / features, f = i % features;
    const T* column = x + b * tokens * features + f;
    double sum = 0;
    for (int64_t t = 0; t < tokens; ++t) sum += fabs(double(column[t * features]));
    per_image[i] = sum;
  }
}

// accumulate[f] += per_image[b * F + f] for b = 0, 1, ..., one addition at a time.
__global__ void add_images_kernel(const double* per_image, int64_t batch, int64_t features, double* accumulate) {
  for (int64_t f = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; f < features;
       f += int64_t(gridDim.x) * blockDim.x) {
    double total = accumulate[f];
    for (int64_t b = 0; b < batch; ++b) total += per_image[b * features + f];
    accumulate[f] = total;
  }
}

}  // namespace

void token_abs_sums_into(const Tensor& x, Tensor& accumulate) {
  const char* op = "token_abs_sums_into";
  check_cuda_float(x, op);
  check_on_cuda(accumulate, op);
  const int device = same_device({&x, &accumulate}, op);
  const op_checks::TokenShape s = op_checks::token_sums_shape(x, accumulate, op);
  if (s.batch == 0 || s.features == 0) return;
  Tensor per_image({s.batch, s.features}, DType::F64, x.device());
  cudaStream_t queue = stream(device);
  dispatch_float(x, op, [&](auto zero) {
    using T = decltype(zero);
    image_sums_kernel<T><<<blocks_for(s.batch * s.features), kThreads, 0, queue>>>(
        x.kernel_data<T>(), s.batch, s.tokens, s.features, per_image.kernel_data<double>());
    check_launch("image_sums_kernel");
  });
  add_images_kernel<<<blocks_for(s.features), kThreads, 0, queue>>>(per_image.kernel_data<double>(), s.batch,
                                                                    s.features, accumulate.kernel_data<double>());
  check_launch("add_images_kernel");
}

}  // namespace vitune::cuda
