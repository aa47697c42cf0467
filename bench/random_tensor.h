// The random operands of the benchmarks that time single ops: host f32 tensors of
// standard normal draws.
#pragma once

#include <cstdint>

#include "engine/random.h"
#include "engine/tensor.h"

namespace vitune::bench {

// A host f32 tensor of `shape` filled with N(0, 1) draws from (seed, stream).
inline Tensor random_normal_tensor(const Shape& shape, uint64_t seed, uint64_t stream = 0) {
  Tensor t(shape, DType::F32, Device::cpu());
  fill_normal(t, seed, stream, 0.0, 1.0);
  return t;
}

}  // namespace vitune::bench
