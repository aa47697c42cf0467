// Validation of i64 index tensors that live on a CUDA device, for the ops that must
// refuse a bad index with an Error as their CPU versions do (gather, scatter,
// masked_weight_grad). One kernel finds the first offending position on the device;
// only that position (and, on failure, the values around it) is copied back.
#pragma once

#include <cstdint>

#include "engine/tensor.h"

namespace vitune::cuda {

// The first position i of `indices` (i64, on CUDA device `device`) where
// indices[i] is outside [0, limit), or, when `strictly_increasing`, where
// indices[i] <= indices[i - 1]; -1 when there is none. Waits for the device.
int64_t first_bad_index(const Tensor& indices, int64_t limit, bool strictly_increasing);

// indices[position], copied to the host (for the error message).
int64_t index_at(const Tensor& indices, int64_t position);

}  // namespace vitune::cuda
