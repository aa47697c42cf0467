// Which kernel runs fp32 GEMMs: vitune's own AVX-512 kernel where the CPU has AVX-512,
// else OpenBLAS (f64 always uses OpenBLAS). VITUNE_GEMM=openblas forces OpenBLAS, for
// comparison; its kernel family follows OPENBLAS_CORETYPE.
#pragma once

#include <string>

namespace vitune::cpu {

enum class GemmKernel { OpenBlas, Avx512 };

GemmKernel gemm_kernel();
// "vitune AVX-512" or "OpenBLAS Haswell", for logs and benches.
std::string gemm_kernel_name();

}  // namespace vitune::cpu
