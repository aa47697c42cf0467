// Resampling a learned position embedding to another grid, as timm's
// resample_abs_pos_embed does: the prefix tokens (class, registers, distillation) are
// kept, the patch part is read as a grid and resized with PyTorch's bicubic
// interpolation (align_corners false), by default antialiased as timm's
// checkpoint_filter_fn asks (F.interpolate(antialias=True): Keys' cubic with A = -0.5,
// stretched by the scale when shrinking, weights renormalised inside the grid), or
// without (A = -0.75, borders clamped).
#pragma once

#include "engine/tensor.h"

namespace vitune::nn {

// pos [1, prefix + g*g, D] (any float dtype, on the host) -> f32 [1, prefix + new_grid^2, D].
Tensor resample_pos_embed(const Tensor& pos, int prefix_tokens, int new_grid, bool antialias = true);

}  // namespace vitune::nn
