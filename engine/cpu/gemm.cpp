// GEMM on the host: OpenBLAS for the products that matter, and the plain triple loop
// that the tests hold it to. OpenBLAS's own threading changes the bits with the thread
// count, so it runs single-threaded and vitune splits the output instead: into panels
// whose width depends only on the shape, each one OpenBLAS call, spread over the pool.
// The same panels are computed whatever the number of threads.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "engine/cpu/bf16gemm_amx.h"
#include "engine/cpu/bf16gemm_avx512.h"
#include "engine/cpu/blas.h"
#include "engine/cpu/check.h"
#include "engine/cpu/gemm_kernel.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/sgemm_avx512.h"
#include "engine/flop_counter.h"
#include "engine/op_checks.h"
#include "engine/ops.h"
#include "engine/parallel.h"

namespace vitune::cpu {

GemmKernel gemm_kernel() {
  static const GemmKernel kernel = [] {
    const char* forced = std::getenv("VITUNE_GEMM");
    if (forced && std::string(forced) == "openblas") return GemmKernel::OpenBlas;
    return cpu_isa() >= Isa::Avx512 ? GemmKernel::Avx512 : GemmKernel::OpenBlas;
  }();
  return kernel;
}

std::string gemm_kernel_name() {
  return gemm_kernel() == GemmKernel::Avx512 ? "vitune AVX-512" : std::string("OpenBLAS ") + blas_core_name();
}

bool bf16_gemm_on_hardware() { return cpu_isa() >= Isa::Avx512Bf16; }

std::string gemm_bf16_kernel_name() {
  if (cpu_isa() >= Isa::Amx) return "vitune AMX BF16";
  return bf16_gemm_on_hardware() ? "vitune AVX-512 BF16" : "emulated (bf16-rounded operands, " + gemm_kernel_name() + ")";
}

namespace {

using op_checks::GemmShape;

// Checks the operands of c = op(a) op(b) for 2-D views and returns M, N, K.
GemmShape gemm_shape(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c,
                     const char* op) {
  cpu::check_float(a, op);
  return op_checks::gemm_shape(trans_a, trans_b, a, b, c, op);
}

template <typename T>
void reference_kernel(bool trans_a, bool trans_b, GemmShape s, T alpha, const T* a, const T* b,
                      T beta, T* c) {
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        T av = trans_a ? a[p * s.m + i] : a[i * s.k + p];
        T bv = trans_b ? b[j * s.k + p] : b[p * s.n + j];
        sum += av * bv;
      }
      c[i * s.n + j] = alpha * sum + (beta == T(0) ? T(0) : beta * c[i * s.n + j]);
    }
  }
}

// Products below kSerialFlops run as one call. Larger ones are cut into an even number
// of panels (so two, four or eight threads get equal shares) of about kTargetPanel rows
// (or columns) of C, at most kMaxPanels, each a multiple of 16 wide.
constexpr int64_t kSerialFlops = int64_t(1) << 21;
constexpr int64_t kTargetPanel = 256;
constexpr int64_t kMaxPanels = 32;

int64_t panel_width(int64_t extent) {
  int64_t panels = 2 * ((extent + 2 * kTargetPanel - 1) / (2 * kTargetPanel));
  panels = std::min(panels, kMaxPanels);
  int64_t width = (extent + panels - 1) / panels;
  return (width + 15) / 16 * 16;
}

template <typename T>
void blas_kernel(bool trans_a, bool trans_b, GemmShape s, T alpha, const T* a, const T* b, T beta,
                 T* c) {
  if (s.m == 0 || s.n == 0) return;
  int64_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n;
#if VITUNE_X86_LEVELS
  if constexpr (std::is_same_v<T, float>) {
    if (cpu::gemm_kernel() == cpu::GemmKernel::Avx512) {
      cpu::sgemm_avx512(trans_a, trans_b, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, s.n);
      return;
    }
  }
#endif
  if (2 * s.m * s.n * s.k < kSerialFlops) {
    blas_gemm(trans_a, trans_b, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, s.n);
    return;
  }
  bool split_rows = s.m >= s.n;
  int64_t extent = split_rows ? s.m : s.n;
  int64_t panel = panel_width(extent);
  int64_t panels = (extent + panel - 1) / panel;
  parallel_for(panels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t first = p * panel, width = std::min(panel, extent - first);
      if (split_rows) {
        // Rows [first, first + width) of C from the same rows of op(A).
        const T* a_rows = trans_a ? a + first : a + first * lda;
        blas_gemm(trans_a, trans_b, width, s.n, s.k, alpha, a_rows, lda, b, ldb, beta, c + first * s.n, s.n);
      } else {
        // Columns [first, first + width) of C from the same columns of op(B).
        const T* b_cols = trans_b ? b + first * ldb : b + first;
        blas_gemm(trans_a, trans_b, s.m, width, s.k, alpha, a, lda, b_cols, ldb, beta, c + first, s.n);
      }
    }
  });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
          Tensor& c) {
  GemmShape s = gemm_shape(trans_a, trans_b, a, b, c, "gemm");
  count_flops(2 * s.m * s.n * s.k);
  cpu::dispatch_float(a, "gemm", [&](auto zero) {
    using T = decltype(zero);
    blas_kernel<T>(trans_a, trans_b, s, T(alpha), a.kernel_data<T>(), b.kernel_data<T>(), T(beta), c.kernel_data<T>());
  });
}

// The AVX-512 kernel adds the bias as it stores each tile; the other paths (f64, OpenBLAS)
// run the product, then add_row_broadcast.
void linear_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y) {
  const char* op = "linear_forward";
  const GemmShape s = gemm_shape(false, true, x, w, y, op);
  cpu::check_host(bias, op);
  op_checks::linear_bias(w, bias, op);
#if VITUNE_X86_LEVELS
  if (x.dtype() == DType::F32 && cpu::gemm_kernel() == cpu::GemmKernel::Avx512) {
    count_flops(2 * s.m * s.n * s.k);
    cpu::sgemm_avx512(false, true, s.m, s.n, s.k, 1.0f, x.kernel_data<float>(), s.k, w.kernel_data<float>(), s.k,
                      0.0f, y.kernel_data<float>(), s.n, bias.kernel_data<float>());
    return;
  }
#endif
  gemm(false, true, 1.0, x, w, 0.0, y);
  add_row_broadcast(y, bias);
}

void gemm_batched(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                  double beta, Tensor& c) {
  const char* op = "gemm_batched";
  cpu::check_float(a, op);
  const int64_t stack = op_checks::gemm_stack_size(a, b, c, op);
  if (stack == 0 || a.numel() + c.numel() == 0) return;
  const GemmShape s = op_checks::gemm_item_shape(trans_a, trans_b, a, b, c, op);
  count_flops(2 * stack * s.m * s.n * s.k);
  cpu::dispatch_float(a, op, [&](auto zero) {
    using T = decltype(zero);
    const T* pa = a.kernel_data<T>();
    const T* pb = b.kernel_data<T>();
    T* pc = c.kernel_data<T>();
    // One product per stack item, each computed whole by one thread (OpenBLAS for the
    // large ones, the plain loop for tiny ones), so the split never changes the bits.
    const bool tiny = 2 * s.m * s.n * s.k < 4096;
    const int64_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n;
    parallel_for(stack, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const T* ai = pa + i * s.m * s.k;
        const T* bi = pb + i * s.k * s.n;
        T* ci = pc + i * s.m * s.n;
        if (tiny) {
          reference_kernel<T>(trans_a, trans_b, s, T(alpha), ai, bi, T(beta), ci);
        } else {
          blas_gemm(trans_a, trans_b, s.m, s.n, s.k, T(alpha), ai, lda, bi, ldb, T(beta), ci, s.n);
        }
      }
    });
  });
}

namespace {

// The hardware bf16 kernel of this CPU's level: AMX tiles, else AVX-512 BF16.
void bf16_kernel(bool trans_a, bool trans_b, const GemmShape& s, float alpha, const float* a, const float* b,
                 float beta, float* c) {
#if VITUNE_X86_LEVELS
  const int64_t lda = trans_a ? s.m : s.k, ldb = trans_b ? s.k : s.n;
  if (cpu_isa() >= Isa::Amx) return bf16gemm_amx(trans_a, trans_b, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, s.n);
  bf16gemm_avx512(trans_a, trans_b, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, s.n);
#endif
}

}  // namespace

// bf16 autocast's products: the AMX or AVX-512 BF16 kernel where the CPU's level has it,
// else the exact emulation (operands rounded by round_to_bf16, then the fp32 kernel). All
// multiply the same bf16 values and accumulate in fp32; they differ in the order of the
// fp32 sums.
void gemm_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
               Tensor& c) {
  if (!bf16_gemm_on_hardware()) {
    gemm(trans_a, trans_b, alpha, round_to_bf16(a), round_to_bf16(b), beta, c);
    return;
  }
  VITUNE_CHECK(a.dtype() == DType::F32, "gemm_bf16: expected f32 operands, got ", a.str());
  const GemmShape s = gemm_shape(trans_a, trans_b, a, b, c, "gemm_bf16");
  count_flops(2 * s.m * s.n * s.k);
  bf16_kernel(trans_a, trans_b, s, float(alpha), a.kernel_data<float>(), b.kernel_data<float>(), float(beta),
              c.kernel_data<float>());
}

void gemm_batched_bf16(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                       double beta, Tensor& c) {
  if (!bf16_gemm_on_hardware()) {
    gemm_batched(trans_a, trans_b, alpha, round_to_bf16(a), round_to_bf16(b), beta, c);
    return;
  }
  const char* op = "gemm_batched_bf16";
  VITUNE_CHECK(a.dtype() == DType::F32, op, ": expected f32 operands, got ", a.str());
  const int64_t stack = op_checks::gemm_stack_size(a, b, c, op);
  if (stack == 0 || a.numel() + c.numel() == 0) return;
  const GemmShape s = op_checks::gemm_item_shape(trans_a, trans_b, a, b, c, op);
  count_flops(2 * stack * s.m * s.n * s.k);
  const float* pa = a.kernel_data<float>();
  const float* pb = b.kernel_data<float>();
  float* pc = c.kernel_data<float>();
  // One product per stack item, each computed whole by one thread.
  parallel_for(stack, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      bf16_kernel(trans_a, trans_b, s, float(alpha), pa + i * s.m * s.k, pb + i * s.k * s.n, float(beta),
                  pc + i * s.m * s.n);
    }
  });
}

}  // namespace vitune::cpu

namespace vitune::ops {

void gemm_reference(bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                    double beta, Tensor& c) {
  VITUNE_CHECK(a.ndim() == 2 && c.ndim() == 2, "gemm_reference: expects 2-D a and c, got ", a.str(),
               " and ", c.str());
  cpu::GemmShape s = cpu::gemm_shape(trans_a, trans_b, a, b, c, "gemm_reference");
  cpu::dispatch_float(a, "gemm_reference", [&](auto zero) {
    using T = decltype(zero);
    cpu::reference_kernel<T>(trans_a, trans_b, s, T(alpha), a.kernel_data<T>(), b.kernel_data<T>(), T(beta), c.kernel_data<T>());
  });
}

}  // namespace vitune::ops
