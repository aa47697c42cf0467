// CUDA patch extraction for the patch embedding, as on the CPU: patchify cuts images
// [B, C, H, W] into non-overlapping p x p patches [B, (H/p)*(W/p), C*p*p], patches in
// row-major order over the patch grid and each flattened in (channel, row, column)
// order. The patches tile the image exactly, so each element of the patches has one
// pixel: patchify gathers it and unpatchify, the adjoint (and inverse), puts it back.
// One thread per element of the patches.
#include <cstdint>

#include "engine/cuda/cuda_context.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cuda {

namespace {

using op_checks::PatchGrid;

// The offset in the images of element e of the patches (flat over [B, patches, C*p*p]).
__device__ int64_t image_offset(const PatchGrid& g, int64_t e) {
  const int64_t n = e / g.patch_size();       // patch over batch and grid
  const int64_t within_patch = e % g.patch_size();
  const int64_t c = within_patch / (g.patch * g.patch);
  const int64_t i = (within_patch / g.patch) % g.patch;
  const int64_t j = within_patch % g.patch;
  const int64_t b = n / g.patches_per_image();
  const int64_t within_image = n % g.patches_per_image();
  const int64_t top = (within_image / g.grid_w) * g.patch;
  const int64_t left = (within_image % g.grid_w) * g.patch;
  return ((b * g.channels + c) * g.height + top + i) * g.width + left + j;
}

template <typename T>
__global__ void patchify_kernel(PatchGrid g, const T* images, T* patches, int64_t count) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += int64_t(gridDim.x) * blockDim.x) {
    patches[e] = images[image_offset(g, e)];
  }
}

template <typename T>
__global__ void unpatchify_kernel(PatchGrid g, const T* patches, T* images, int64_t count) {
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += int64_t(gridDim.x) * blockDim.x) {
    images[image_offset(g, e)] = patches[e];
  }
}

}  // namespace

Tensor patchify(const Tensor& images, int patch) {
  check_cuda_float(images, "patchify");
  const PatchGrid g = op_checks::patch_grid(images.shape(), patch, "patchify");
  Tensor patches({g.batch, g.patches_per_image(), g.patch_size()}, images.dtype(), images.device());
  const int64_t count = patches.numel();
  if (count == 0) return patches;
  cudaStream_t s = stream(images.device().index);
  dispatch_float(images, "patchify", [&](auto zero) {
    using T = decltype(zero);
    patchify_kernel<T><<<blocks_for(count), kThreads, 0, s>>>(g, images.kernel_data<T>(), patches.kernel_data<T>(), count);
    check_launch("patchify_kernel");
  });
  return patches;
}

// Math: patchify is a permutation P of the elements (every pixel lands in exactly one
// patch slot), so <P a, b> = <a, P^T b> with P^T = P^-1: the gradient of a loss with
// respect to the images is the patch gradient moved back to where each pixel came from.
Tensor unpatchify(const Tensor& patches, const Shape& image_shape, int patch) {
  check_cuda_float(patches, "unpatchify");
  const PatchGrid g = op_checks::unpatchify_grid(patches, image_shape, patch, "unpatchify");
  Tensor images(image_shape, patches.dtype(), patches.device());
  const int64_t count = patches.numel();
  if (count == 0) return images;
  cudaStream_t s = stream(patches.device().index);
  dispatch_float(patches, "unpatchify", [&](auto zero) {
    using T = decltype(zero);
    unpatchify_kernel<T><<<blocks_for(count), kThreads, 0, s>>>(g, patches.kernel_data<T>(), images.kernel_data<T>(), count);
    check_launch("unpatchify_kernel");
  });
  return images;
}

}  // namespace vitune::cuda
