// DEVMAP_CPU_PATH: the widest path by default, a narrower one on request,
// and an error a user can act on for an unknown or unsupported path.
#include "core/exec/cpu_path.h"

#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <string>

#include "core/base/error.h"
#include "tests/support/scoped_env.h"

namespace devmap {
namespace {

TEST(CpuPath, BaselineAlwaysAndWidestIsSupported) {
  EXPECT_TRUE(cpu_supports(CpuPath::kBaseline));
  EXPECT_TRUE(cpu_supports(widest_cpu_path()));
  // A path implies the narrower ones.
  if (cpu_supports(CpuPath::kAvx512)) {
    EXPECT_TRUE(cpu_supports(CpuPath::kAvx2));
  }
  for (CpuPath p : kCpuPaths)
    if (!cpu_supports(p)) std::cout << "uncovered on this CPU: the " << cpu_path_name(p) << " path\n";
}

TEST(CpuPath, UnsetEmptyOrAutoIsTheWidest) {
  for (const char* v : {static_cast<const char*>(nullptr), "", "auto"}) {
    test::ScopedEnv var(kCpuPathVariable, v);
    EXPECT_EQ(cpu_path_from_environment(), widest_cpu_path()) << (v ? v : "(unset)");
  }
}

TEST(CpuPath, EverySupportedPathCanBeForced) {
  for (CpuPath p : kCpuPaths) {
    if (!cpu_supports(p)) continue;
    test::ScopedEnv var(kCpuPathVariable, cpu_path_name(p));
    EXPECT_EQ(cpu_path_from_environment(), p);
  }
}

TEST(CpuPath, UnknownNameIsAnInputError) {
  test::ScopedEnv var(kCpuPathVariable, "sse9");
  try {
    cpu_path_from_environment();
    FAIL() << "DEVMAP_CPU_PATH=sse9 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("DEVMAP_CPU_PATH=sse9 is not a CPU path: use auto, avx512, avx2 or baseline"),
              std::string::npos)
        << e.what();
  }
}

TEST(CpuPath, UnsupportedPathIsAnInputError) {
  if (cpu_supports(CpuPath::kAvx512)) GTEST_SKIP() << "uncovered: this CPU supports every path";
  test::ScopedEnv var(kCpuPathVariable, "avx512");
  try {
    cpu_path_from_environment();
    FAIL() << "an unsupported path was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("this CPU does not support that path"), std::string::npos) << e.what();
  }
}

TEST(CpuPath, ScopedPathForcesAndRestores) {
  const CpuPath before = active_cpu_path();
  {
    ScopedCpuPath forced(CpuPath::kBaseline);
    EXPECT_EQ(active_cpu_path(), CpuPath::kBaseline);
  }
  EXPECT_EQ(active_cpu_path(), before);
}

}  // namespace
}  // namespace devmap
