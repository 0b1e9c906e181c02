// oneDNN fixes its instruction set once per process, at the CPU path active
// when it is first used (kernels/cpu/onednn_runtime.h). ctest runs every
// test in a process of its own, so each path's test runs oneDNN on that
// path; run together in one process, tests of the other paths skip.
#pragma once

#include <string>

#include "core/exec/cpu_path.h"
#include "kernels/cpu/onednn_runtime.h"
#include "tests/kernels/cpu_paths.h"

namespace devmap::test {

// Why a test of `path` cannot run oneDNN on it in this process, or empty.
inline std::string onednn_runs_another_path(CpuPath path) {
  if (cpu::onednn_cpu_path() == path) return {};
  return std::string("oneDNN runs the ") + cpu_path_name(cpu::onednn_cpu_path()) +
         " path in this process (fixed at its first use); run this test alone, as ctest does";
}

// EveryCpuPath for tests that run oneDNN: each path's test also skips where
// oneDNN runs another path in this process.
class EveryOneDnnPath : public EveryCpuPath {
 protected:
  void SetUp() override {
    EveryCpuPath::SetUp();
    if (IsSkipped()) return;
    if (const std::string why = onednn_runs_another_path(GetParam()); !why.empty()) GTEST_SKIP() << why;
  }
};

}  // namespace devmap::test
