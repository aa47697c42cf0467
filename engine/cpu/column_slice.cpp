// A block of columns of a matrix copied out as a dense matrix of its own (the slices of
// plasticity's Gram matrices, peft/plasticity_pairs.cpp).
#include <cstring>

#include "engine/cpu/check.h"
#include "engine/op_checks.h"
#include "engine/ops.h"

namespace vitune::cpu {

Tensor column_slice(const Tensor& x, int64_t first, int64_t count) {
  const char* op = "column_slice";
  check_host(x, op);
  const op_checks::Columns s = op_checks::column_slice_shape(x, first, count, op);
  Tensor out = Tensor::like(x, {s.rows, count});
  const size_t width = dtype_size(x.dtype());
  if (out.nbytes() == 0) return out;
  const char* in = static_cast<const char*>(x.kernel_raw());
  char* to = static_cast<char*>(out.kernel_raw());
  for (int64_t r = 0; r < s.rows; ++r) {
    std::memcpy(to + size_t(r * count) * width, in + size_t(r * s.cols + first) * width, size_t(count) * width);
  }
  return out;
}

}  // namespace vitune::cpu
