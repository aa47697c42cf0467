// OpenBLAS behind the names of blas.h.
#include "engine/cpu/blas.h"

#include <cblas.h>

namespace vitune {

void blas_set_num_threads(int n) { openblas_set_num_threads(n); }

const char* blas_core_name() { return openblas_get_corename(); }

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
               int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta, c,
              blasint(ldc));
}

void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
               int64_t ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, a, blasint(lda), b, blasint(ldb), beta, c,
              blasint(ldc));
}

}  // namespace vitune
