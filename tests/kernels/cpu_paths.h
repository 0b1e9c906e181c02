// Kernel tests run once per CPU path (core/exec/cpu_path.h): a suite whose
// fixture derives from EveryCpuPath and is instantiated with
// DEVMAP_ON_EVERY_CPU_PATH(Suite) runs each TEST_P with the kernels forced
// onto avx512, avx2 and baseline in turn; a path this CPU lacks is skipped
// and listed as uncovered in the output.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/exec/cpu_path.h"

namespace devmap::test {

class EveryCpuPath : public ::testing::TestWithParam<CpuPath> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam()))
      GTEST_SKIP() << "uncovered: this CPU lacks the " << cpu_path_name(GetParam()) << " path";
    forced_.emplace(GetParam());
  }
  void TearDown() override { forced_.reset(); }

 private:
  std::optional<ScopedCpuPath> forced_;
};

inline std::string cpu_path_test_name(const ::testing::TestParamInfo<CpuPath>& info) {
  return cpu_path_name(info.param);
}

}  // namespace devmap::test

#define DEVMAP_ON_EVERY_CPU_PATH(suite) \
  INSTANTIATE_TEST_SUITE_P(CpuPath, suite, ::testing::ValuesIn(::devmap::kCpuPaths), ::devmap::test::cpu_path_test_name)
