#include "kernels/cpu/blas.h"

#include <cblas.h>

#include <cassert>
#include <limits>

namespace devmap::cpu {
namespace {

blasint blas_int(int64_t v) {
  assert(v >= 0 && v <= std::numeric_limits<blasint>::max() && "matrix dimension too large for this BLAS");
  return static_cast<blasint>(v);
}

}  // namespace

void pin_blas_to_one_thread() {
  openblas_set_num_threads(1);
}

std::string blas_description() {
  return std::string(openblas_get_config()) + " core " + openblas_get_corename();
}

std::string blas_core_name() {
  return openblas_get_corename();
}

std::string blas_short_description() {
  const std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  const size_t end = config.find(' ', config.find(' ') + 1);
  return config.substr(0, end) + " core " + blas_core_name();
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // The kernels run GEMMs on their own pool threads: OpenBLAS must compute in
  // the calling thread (set once, before the first GEMM of the process).
  static const bool pinned = (pin_blas_to_one_thread(), true);
  (void)pinned;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(m),
              blas_int(n), blas_int(k), 1.0f, a, blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
}

}  // namespace devmap::cpu
