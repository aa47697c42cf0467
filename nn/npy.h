// NumPy's .npy array format: a magic string, a version, a Python-dict header (descr,
// fortran_order, shape) padded to an alignment, then the raw array bytes in C order.
#pragma once

#include <cstddef>
#include <string>

#include "engine/tensor.h"

namespace vitune::nn {

// Parses one .npy file held in `bytes` into an owned tensor. Little-endian (or
// byte-order-free) f4, f8, i4, i8, u1 and f2 arrays in C order are supported;
// `what` names the array in error messages.
Tensor parse_npy(const std::string& bytes, const std::string& what);

// The same for the `size` bytes at `bytes`, such as an entry of a mapped archive.
Tensor parse_npy(const unsigned char* bytes, size_t size, const std::string& what);

}  // namespace vitune::nn
