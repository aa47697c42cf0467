// Which kernel runs fp32 GEMMs: vitune's own AVX-512 kernel where cpu_isa()
// (engine/cpu/isa.h) reaches AVX-512, else OpenBLAS (f64 always uses OpenBLAS).
// VITUNE_GEMM=openblas forces OpenBLAS, for comparison; its kernel family follows
// OPENBLAS_CORETYPE. A new kernel gets a value here, a test of the level it needs in
// gemm_kernel() and a branch where gemm.cpp calls the kernels.
#pragma once

#include "engine/devices.h"

namespace vitune::cpu {

enum class GemmKernel { OpenBlas, Avx512 };

GemmKernel gemm_kernel();
// gemm_kernel_name(), for logs and benches, is declared in engine/devices.h.

// Whether bf16 autocast's products run on vitune's AVX-512 BF16 kernel (where cpu_isa()
// reaches Avx512Bf16) rather than the exact emulation; gemm_bf16_kernel_name() names it.
bool bf16_gemm_on_hardware();

}  // namespace vitune::cpu
