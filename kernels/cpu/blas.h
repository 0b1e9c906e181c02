// Thin wrappers over the OpenBLAS calls the CPU kernels use, so that only
// blas.cpp includes <cblas.h> and every index conversion is checked once.
#pragma once

#include <cstdint>
#include <string>

namespace devmap::cpu {

// C[m,n] = op(A)[m,k] * op(B)[k,n] + beta * C, all row-major with leading
// dimensions lda, ldb, ldc (in elements, of the stored, untransposed
// matrices). beta 0 overwrites C (it is not read), beta 1 accumulates.
// Runs entirely in the calling thread: OpenBLAS is told to use one thread
// (the first call does it, and set_cpu_threads), so the CPU kernels may call
// sgemm from several pool threads at once on disjoint outputs, and the
// result bits depend only on the inputs and the shapes.
// Tells OpenBLAS to compute in the calling thread (process-wide).
void pin_blas_to_one_thread();

// OpenBLAS's build and the core it picked on this CPU (it follows
// OPENBLAS_CORETYPE where set; devmap never sets it), e.g.
// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64 core Zen".
std::string blas_description();
// The core alone ("Cooperlake", "Haswell").
std::string blas_core_name();
// "OpenBLAS 0.3.21 core Cooperlake".
std::string blas_short_description();

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace devmap::cpu
