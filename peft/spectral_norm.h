// The spectral norm (largest singular value) of a matrix by power iteration in double.
#pragma once

#include "engine/tensor.h"

namespace vitune::peft {

// sigma_max(matrix) for a 2-D float tensor [rows, cols], by power iteration on
// matrix^T matrix in double from a fixed pseudo-random start vector, stopped when the
// estimate changes by at most `relative_tolerance` of itself between two iterations.
// The iterates approach sigma_max from below. Throws when the matrix is not 2-D float,
// holds a non-finite value, or the iteration has not settled after 100000 steps. The
// matrix may be on any device; the iteration runs on the host.
double spectral_norm(const Tensor& matrix, double relative_tolerance = 1e-6);

}  // namespace vitune::peft
