// CPU patch extraction for the patch embedding. patchify cuts images [B, C, H, W] into
// non-overlapping p x p patches [B, (H/p)*(W/p), C*p*p], patches in row-major order over
// the patch grid and each flattened in (channel, row, column) order, as a conv weight
// [D, C, p, p] viewed as [D, C*p*p] expects. The patches tile the image exactly, so
// patchify is a permutation of the elements and unpatchify, its adjoint, is its inverse.
#include <cstdint>

#include "engine/cpu/check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

namespace {

using op_checks::PatchGrid;

// Calls move(image_offset, patch_offset) for each row of p pixels of patch `n` (the
// patch index over batch and grid) in the patch's flattening order.
template <typename Move>
void for_each_patch_row(const PatchGrid& g, int64_t n, Move move) {
  const int64_t b = n / g.patches_per_image();
  const int64_t within = n % g.patches_per_image();
  const int64_t top = (within / g.grid_w) * g.patch;
  const int64_t left = (within % g.grid_w) * g.patch;
  int64_t patch_offset = n * g.patch_size();
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t i = 0; i < g.patch; ++i) {
      const int64_t image_offset = ((b * g.channels + c) * g.height + top + i) * g.width + left;
      move(image_offset, patch_offset);
      patch_offset += g.patch;
    }
  }
}

}  // namespace

Tensor patchify(const Tensor& images, int patch) {
  cpu::check_float(images, "patchify");
  const PatchGrid g = op_checks::patch_grid(images.shape(), patch, "patchify");
  Tensor patches({g.batch, g.patches_per_image(), g.patch_size()}, images.dtype(), images.device());
  cpu::dispatch_float(images, "patchify", [&](auto zero) {
    using T = decltype(zero);
    const T* in = images.kernel_data<T>();
    T* out = patches.kernel_data<T>();
    const int64_t p = g.patch;
    parallel_for(g.batch * g.patches_per_image(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        for_each_patch_row(g, n, [&](int64_t image_offset, int64_t patch_offset) {
          for (int64_t j = 0; j < p; ++j) out[patch_offset + j] = in[image_offset + j];
        });
      }
    });
  });
  return patches;
}

// Math: patchify is a permutation P of the elements (every pixel lands in exactly one
// patch slot), so <P a, b> = <a, P^T b> with P^T = P^-1: the gradient of a loss with
// respect to the images is the patch gradient moved back to where each pixel came from.
Tensor unpatchify(const Tensor& patches, const Shape& image_shape, int patch) {
  cpu::check_float(patches, "unpatchify");
  const PatchGrid g = op_checks::unpatchify_grid(patches, image_shape, patch, "unpatchify");
  Tensor images(image_shape, patches.dtype(), patches.device());
  cpu::dispatch_float(patches, "unpatchify", [&](auto zero) {
    using T = decltype(zero);
    const T* in = patches.kernel_data<T>();
    T* out = images.kernel_data<T>();
    const int64_t p = g.patch;
    parallel_for(g.batch * g.patches_per_image(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        for_each_patch_row(g, n, [&](int64_t image_offset, int64_t patch_offset) {
          for (int64_t j = 0; j < p; ++j) out[image_offset + j] = in[patch_offset + j];
        });
      }
    });
  });
  return images;
}

}  // namespace vitune::cpu
