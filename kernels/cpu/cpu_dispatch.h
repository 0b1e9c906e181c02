// One CPU kernel body compiled for every CpuPath (core/exec/cpu_path.h) and run
// on the active one. Write the body as an always-inline function NAME_body
// (everything it inlines is compiled for the caller's instruction set), then
//   DEVMAP_CPU_PATH_DISPATCH(void, NAME, (int a, float* b), (a, b))
// defines NAME(int a, float* b), which calls the AVX-512, AVX2 or baseline
// build of the body as active_cpu_path() says. The project compiles with
// -ffp-contract=off, so no build fuses a multiply and an add: a body
// written with the same operations in the same order gives the same bits
// on every path (OpenBLAS, which follows its own choice of core, may not).
#pragma once

#include <string>

#include "core/exec/cpu_path.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define DEVMAP_AVX512_ISA "avx2,fma,avx512f,avx512vl,avx512bw,avx512dq"
#define DEVMAP_TARGET_AVX512 __attribute__((target(DEVMAP_AVX512_ISA)))
#define DEVMAP_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define DEVMAP_TARGET_AVX512
#define DEVMAP_TARGET_AVX2
#endif

// For bodies and what they call: inlined, so compiled for the caller's path.
#define DEVMAP_INLINE [[gnu::always_inline]] inline

#define DEVMAP_CPU_PATH_DISPATCH(ret, name, params, args)         \
  DEVMAP_TARGET_AVX512 ret name##_avx512 params {                 \
    return name##_body args;                                      \
  }                                                               \
  DEVMAP_TARGET_AVX2 ret name##_avx2 params {                     \
    return name##_body args;                                      \
  }                                                               \
  ret name##_baseline params {                                    \
    return name##_body args;                                      \
  }                                                               \
  ret name params {                                               \
    switch (::devmap::active_cpu_path()) {                        \
      case ::devmap::CpuPath::kAvx512: return name##_avx512 args; \
      case ::devmap::CpuPath::kAvx2: return name##_avx2 args;     \
      case ::devmap::CpuPath::kBaseline: break;                   \
    }                                                             \
    return name##_baseline args;                                  \
  }

namespace devmap::cpu {

// "FAMILY/PATH" for the active path, e.g. "winograd/avx512": the kernel
// name --profile reports.
inline std::string path_kernel_name(const char* family) {
  return std::string(family) + "/" + cpu_path_name(active_cpu_path());
}

}  // namespace devmap::cpu
