// OpenBLAS behind the names of blas.h.
#include "engine/cpu/blas.h"

#include <cblas.h>

namespace vitune {

namespace {

// OpenBLAS runs on one thread: vitune spreads GEMM panels over its own pool, whose
// split does not change the bits (OpenBLAS's own threading does). Set once, before the
// first product.
void use_one_openblas_thread() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

}  // namespace

const char* blas_core_name() { return openblas_get_corename(); }

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc) {
  use_one_openblas_thread();
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta, c,
              blasint(ldc));
}

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
               int64_t ldc) {
  use_one_openblas_thread();
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta, c,
              blasint(ldc));
}

}  // namespace vitune
