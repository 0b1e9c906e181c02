// The GEMM library rule: OpenBLAS where its core runs the CPU path, oneDNN
// where it does not and for the dense gradients, and DEVMAP_GEMM's errors.
#include "core/exec/gemm_library.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/base/error.h"
#include "tests/support/scoped_env.h"

namespace devmap {
namespace {

TEST(GemmLibrary, OpenBlasCoresMapToThePathTheyRun) {
  EXPECT_EQ(openblas_core_path("SkylakeX"), CpuPath::kAvx512);
  EXPECT_EQ(openblas_core_path("Cooperlake"), CpuPath::kAvx512);
  EXPECT_EQ(openblas_core_path("SapphireRapids"), CpuPath::kAvx512);
  EXPECT_EQ(openblas_core_path("Haswell"), CpuPath::kAvx2);
  EXPECT_EQ(openblas_core_path("Zen"), CpuPath::kAvx2);
  EXPECT_EQ(openblas_core_path("Prescott"), CpuPath::kBaseline);
  EXPECT_EQ(openblas_core_path("Sandybridge"), CpuPath::kBaseline);
}

TEST(GemmLibrary, OpenBlasOnlyWhereItsCoreRunsThePath) {
  constexpr GemmUse g = GemmUse::kGeneral;
  EXPECT_EQ(gemm_library_for(g, CpuPath::kAvx512, "Cooperlake"), GemmLibrary::kOpenBlas);
  // OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU: the GEMMs follow the CPU.
  EXPECT_EQ(gemm_library_for(g, CpuPath::kAvx512, "Haswell"), GemmLibrary::kOneDnn);
  // DEVMAP_CPU_PATH=avx2 under an AVX-512 core: the GEMMs follow the path.
  EXPECT_EQ(gemm_library_for(g, CpuPath::kAvx2, "SkylakeX"), GemmLibrary::kOneDnn);
  EXPECT_EQ(gemm_library_for(g, CpuPath::kAvx2, "Zen"), GemmLibrary::kOpenBlas);
  EXPECT_EQ(gemm_library_for(g, CpuPath::kBaseline, "Haswell"), GemmLibrary::kOneDnn);
  EXPECT_EQ(gemm_library_for(g, CpuPath::kBaseline, "Prescott"), GemmLibrary::kOpenBlas);
  for (const char* core : {"Cooperlake", "Haswell", "Prescott"})
    for (CpuPath p : kCpuPaths)
      EXPECT_EQ(gemm_library_for(GemmUse::kDenseGradient, p, core), GemmLibrary::kOneDnn) << core;
}

TEST(GemmLibrary, TheVariableForcesOneLibraryOrSaysWhatItTakes) {
  for (const char* unset : {static_cast<const char*>(nullptr), "", "auto"}) {
    test::ScopedEnv v(kGemmVariable, unset);
    EXPECT_EQ(gemm_library_from_environment(), std::nullopt);
  }
  {
    test::ScopedEnv v(kGemmVariable, "onednn");
    EXPECT_EQ(gemm_library_from_environment(), GemmLibrary::kOneDnn);
  }
  {
    test::ScopedEnv v(kGemmVariable, "openblas");
    EXPECT_EQ(gemm_library_from_environment(), GemmLibrary::kOpenBlas);
  }
  test::ScopedEnv v(kGemmVariable, "mkl");
  try {
    gemm_library_from_environment();
    FAIL() << "DEVMAP_GEMM=mkl was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()),
              "DEVMAP_GEMM=mkl is not a GEMM library: use auto (OpenBLAS where its core runs the CPU path, else "
              "oneDNN), openblas or onednn");
  }
}

}  // namespace
}  // namespace devmap
