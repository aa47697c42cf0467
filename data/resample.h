// Resampling a rectangle of an image to a new size with PyTorch's F.interpolate
// semantics for align_corners=False and no antialiasing: output pixel x samples the
// source at (x + 0.5) * in / out - 0.5.
//  - bilinear: the source position is clamped below at 0; the two neighbours are
//    weighted linearly, the right one repeating the last pixel at the border.
//  - bicubic: Keys' cubic convolution with a = -0.75 over four neighbours, indices
//    clamped to the rectangle; values are not clamped, so they may leave [0, 1].
// The rectangle is treated as a separate image (its borders are where clamping
// happens), which is what resizing a crop means. Separable: rows, then columns.
#pragma once

#include "data/float_image.h"

namespace vitune::data {

enum class Interpolation { Bilinear, Bicubic };

// "bilinear" or "bicubic".
const char* interpolation_name(Interpolation interpolation);

// A rectangle of an image: rows [top, top + height), columns [left, left + width).
struct Region {
  int top = 0;
  int left = 0;
  int height = 0;
  int width = 0;
};

// The region of `source` resized to out_height x out_width, every channel.
FloatImage resample(const FloatImage& source, const Region& region, int out_height, int out_width,
                    Interpolation interpolation);

}  // namespace vitune::data
