// A suite of tests on the namespace hosts of scripts/testbed.sh: the suite's
// SetUpTestSuite calls bring_up(N), its TearDownTestSuite tear_down(). The
// test bed is named per process, so runs in parallel do not meet. Each test
// skips, with the reason, where the build has no MPI, mpirun is missing or
// namespaces cannot be made.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/run_process.h"

namespace devmap::testing {

inline const std::string kTestbed = std::string(DEVMAP_SOURCE_DIR) + "/scripts/testbed.sh";

class TestbedSuite : public ::testing::Test {
 protected:
  static void bring_up(int hosts) {
    skip_reason_.clear();
    if (std::string(DEVMAP_MPI_RANKS_BIN).empty()) {
      skip_reason_ = "built without MPI (DEVMAP_ENABLE_MPI; scripts/setup.sh installs libopenmpi-dev)";
      return;
    }
    dir_ = new TempDir;
    if (run_process({"sh", "-c", "command -v mpirun"}, dir_->path()).exit_code != 0) {
      skip_reason_ = "mpirun is not installed (scripts/setup.sh installs openmpi-bin)";
      return;
    }
    ProcessResult check = run_process({kTestbed, "check"}, dir_->path(), env());
    if (check.exit_code == 77) {
      skip_reason_ = check.first_err_line();
      return;
    }
    ProcessResult up = run_process({kTestbed, "up", std::to_string(hosts)}, dir_->path(), env());
    up_ok_ = up.exit_code == 0;
    up_err_ = up.err;
  }
  static void tear_down() {
    if (dir_) run_process({kTestbed, "down"}, dir_->path(), env());
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(up_ok_) << "testbed.sh up failed: " << up_err_;
  }

  static std::string name() { return "mh" + std::to_string(getpid()); }
  static std::vector<std::string> env() { return {"DEVMAP_TESTBED_NAME=" + name()}; }

  // Runs `command` through /bin/sh inside `host`.
  static ProcessResult in_host(const std::string& host, const std::string& command) {
    return run_process({kTestbed, "exec", host, "sh", "-c", command}, dir_->path(), env());
  }

  // {rx_bytes, tx_bytes} of `host`'s eth0.
  static std::pair<uint64_t, uint64_t> bytes(const std::string& host) {
    ProcessResult r = run_process({kTestbed, "bytes", host}, dir_->path(), env());
    std::pair<uint64_t, uint64_t> b{0, 0};
    std::istringstream(r.out) >> b.first >> b.second;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return b;
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string skip_reason_, up_err_;
  static inline bool up_ok_ = false;
};

}  // namespace devmap::testing
