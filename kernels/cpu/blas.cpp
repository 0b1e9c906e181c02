#include "kernels/cpu/blas.h"

#include <cblas.h>

#include <array>
#include <atomic>
#include <cassert>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/onednn_runtime.h"

namespace devmap::cpu {
namespace {

blasint blas_int(int64_t v) {
  assert(v >= 0 && v <= std::numeric_limits<blasint>::max() && "matrix dimension too large for this BLAS");
  return static_cast<blasint>(v);
}

dnnl_dim_t dnnl_int(int64_t v) {
  assert(v >= 0 && "negative matrix dimension");
  return static_cast<dnnl_dim_t>(v);
}

// -1: none forced (a ScopedGemmLibrary sets a library's value).
std::atomic<int> forced{-1};

// The process's choice per GemmUse, made once (sgemm asks on every call).
GemmLibrary process_gemm_library(GemmUse use) {
  static const std::array<GemmLibrary, 2> chosen = [] {
    const std::optional<GemmLibrary> forced_by_environment = gemm_library_from_environment();
    const CpuPath path = active_cpu_path();
    const std::string core = blas_core_name();
    std::array<GemmLibrary, 2> c{};
    for (GemmUse u : {GemmUse::kGeneral, GemmUse::kDenseGradient})
      c[static_cast<size_t>(u)] = forced_by_environment ? *forced_by_environment : gemm_library_for(u, path, core);
    return c;
  }();
  return chosen[static_cast<size_t>(use)];
}

std::string library_kernel_name(GemmLibrary library) {
  return library == GemmLibrary::kOpenBlas ? "openblas:" + blas_core_name() : "onednn:" + onednn_isa_name();
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

GemmLibrary gemm_library(GemmUse use) {
  const int f = forced.load(std::memory_order_relaxed);
  return f >= 0 ? static_cast<GemmLibrary>(f) : process_gemm_library(use);
}

bool gemm_library_forced() {
  static const bool by_environment = gemm_library_from_environment().has_value();
  return by_environment || forced.load(std::memory_order_relaxed) >= 0;
}

std::string gemm_kernel_name(GemmUse use) {
  return library_kernel_name(gemm_library(use));
}

std::string describe_gemm_library() {
  const GemmLibrary library = gemm_library();
  const std::string what =
      library == GemmLibrary::kOpenBlas ? blas_short_description() : "oneDNN sgemm, " + onednn_isa_name();
  const CpuPath core_path = openblas_core_path(blas_core_name());
  std::string why;
  if (gemm_library_from_environment())
    why = std::string(kGemmVariable) + "=" + gemm_library_name(library);
  else if (library == GemmLibrary::kOpenBlas)
    why = std::string("its core runs the ") + cpu_path_name(core_path) + " path";
  else
    why = "OpenBLAS's core " + blas_core_name() + " runs " + cpu_path_name(core_path) + ", not the " +
          cpu_path_name(active_cpu_path()) + " path";
  std::string text = what + " (" + why + ")";
  if (const GemmLibrary gradients = gemm_library(GemmUse::kDenseGradient); gradients != library)
    text += "; dense gradients in " + library_kernel_name(gradients);
  return text;
}

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm_in(gemm_library(), trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void sgemm_in(GemmLibrary library, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (library == GemmLibrary::kOneDnn) {
    onednn_single_threaded();
    onednn_engine();  // caps the instruction set before the first sgemm generates code
    const dnnl_status_t status =
        dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', dnnl_int(m), dnnl_int(n), dnnl_int(k), 1.0f, a,
                   dnnl_int(lda), b, dnnl_int(ldb), beta, c, dnnl_int(ldc));
    if (status != dnnl_success)
      throw_runtime("dnnl_sgemm refused a " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                    " GEMM (status " + std::to_string(static_cast<int>(status)) + ")");
    return;
  }
  // The kernels run GEMMs on their own pool threads: OpenBLAS must compute in
  // the calling thread (set once, before the first GEMM of the process).
  static const bool pinned = (pin_blas_to_one_thread(), true);
  (void)pinned;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, blas_int(m),
              blas_int(n), blas_int(k), 1.0f, a, blas_int(lda), b, blas_int(ldb), beta, c, blas_int(ldc));
}

void warm_up_gemms() {
  if (gemm_library() != GemmLibrary::kOneDnn && gemm_library(GemmUse::kDenseGradient) != GemmLibrary::kOneDnn) return;
  constexpr int64_t kSide = 64;  // large enough for the JIT kernels (tiny GEMMs take another path)
  std::vector<float> a(kSide * kSide, 1.0f), c(kSide * kSide);
  sgemm_in(GemmLibrary::kOneDnn, false, false, kSide, kSide, kSide, a.data(), kSide, a.data(), kSide, 0.0f, c.data(),
           kSide);
}

ScopedGemmLibrary::ScopedGemmLibrary(GemmLibrary library) : previous_(forced.exchange(static_cast<int>(library))) {}

ScopedGemmLibrary::~ScopedGemmLibrary() {
  forced.store(previous_);
}

}  // namespace devmap::cpu
