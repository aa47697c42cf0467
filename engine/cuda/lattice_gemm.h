// Row-major matrix products over a two-level batch -- a lattice of matrices, matrix
// (o, i) of an operand starting at data + o * outer + i * inner -- in one cuBLAS call.
// Attention needs it: the (batch item, head) blocks of the fused qkv layout are not one
// arithmetic progression of addresses (engine/cuda/attention.cu works out why), so one
// stride cannot reach them all. Include only from .cu files.
#pragma once

#include <cstdint>

namespace vitune::cuda {

// One operand of the lattice: its matrix (0, 0), its leading dimension (elements
// between rows as stored) and the distances between neighbouring matrices. Pointer is
// const T* for the inputs, T* for the output.
template <typename Pointer>
struct Lattice {
  Pointer data;
  int64_t ld;
  int64_t outer;  // from matrix (o, i) to (o + 1, i)
  int64_t inner;  // from matrix (o, i) to (o, i + 1)
};
template <typename T>
using LatticeOperand = Lattice<const T*>;
template <typename T>
using LatticeOutput = Lattice<T*>;

// For every o < outer_count and i < inner_count, with row-major matrices as in
// row_major_gemm (cublas_gemm.h): C_oi = alpha op(A_oi) op(B_oi) + beta C_oi, op(A) [m, k],
// op(B) [k, n], C [m, n]; k must be positive. One call: cuBLAS's strided-batched GEMM
// when every operand's matrices follow each other at one stride (outer = inner_count *
// inner, or a single row or column of the lattice), else its pointer-array batched GEMM
// over the outer_count * inner_count matrix addresses, which one kernel writes into a
// scratch tensor on the device. T is float or double.
template <typename T>
void lattice_gemm(int device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  LatticeOperand<T> a, LatticeOperand<T> b, T beta, LatticeOutput<T> c, int64_t outer_count,
                  int64_t inner_count, const char* op);

}  // namespace vitune::cuda
