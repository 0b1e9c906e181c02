// run_program: what a helper program prints and its status, and a bound on
// how long it may take (a wedged driver, a FIFO read as a file).
#include "coordinator/util/program_output.h"

#include <gtest/gtest.h>

#include <chrono>

namespace devmap {
namespace {

TEST(RunProgram, CapturesOutputAndStatus) {
  const ProgramOutput ok = run_program({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(ok.ran);
  EXPECT_FALSE(ok.timed_out);
  EXPECT_EQ(ok.status, 3);
  EXPECT_EQ(ok.text, "out\nerr");
  EXPECT_FALSE(run_program({"devmap-no-such-program"}).ran);
}

TEST(RunProgram, AProgramPastItsBoundIsKilledAndSaysSo) {
  const auto t0 = std::chrono::steady_clock::now();
  const ProgramOutput slow = run_program({"sh", "-c", "echo started; exec sleep 30"}, 0.3);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(slow.ran);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.status, -1);
  EXPECT_EQ(slow.text, "started\n(no answer in 0 s: stopped)");
  EXPECT_LT(seconds, 10) << "the program ran on past its bound";
}

}  // namespace
}  // namespace devmap
