// Leftovers of a crashed run are removed once their owner is gone, and
// never while it lives.
#include "coordinator/stale_runs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/run_process.h"
#include "transport/shm_segment.h"

namespace devmap::testing {
namespace {

// A pid that belonged to a process which has exited and been reaped.
int dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

bool shm_exists(const std::string& name) {
  struct stat st {};
  return ::stat(("/dev/shm/" + name).c_str(), &st) == 0;
}

TEST(StaleRuns, OwnerPidIsReadFromTheRunName) {
  EXPECT_EQ(run_owner_pid("devmap-1234-00ff00ff00ff00ff-input"), 1234);
  EXPECT_EQ(run_owner_pid("devmap-1234-00ff00ff00ff00ff"), 1234);
  EXPECT_EQ(run_owner_pid("devmap-test-abc"), -1);
  EXPECT_EQ(run_owner_pid("devmap-"), -1);
  EXPECT_EQ(run_owner_pid("other-1234-x"), -1);
}

TEST(StaleRuns, ASegmentIsRemovedOnlyOnceItsOwnerIsGone) {
  TempDir tmp;
  std::string dead = "devmap-" + std::to_string(dead_pid()) + "-00000000deadbeef-input";
  std::string live = "devmap-" + std::to_string(::getpid()) + "-00000000cafef00d-input";
  {
    ShmSegment a = ShmSegment::create(dead, 64), b = ShmSegment::create(live, 64);
    // Leak both names, as a crashed run would.
    std::string dir = tmp.path() + "/devmap-" + std::to_string(dead_pid()) + "-00000000deadbeef";
    std::filesystem::create_directories(dir);
    { std::ofstream(dir + "/control.sock") << ""; }
    auto removed = remove_stale_runs("/dev/shm", tmp.path());
    EXPECT_FALSE(shm_exists(dead)) << "the dead owner's segment must go";
    EXPECT_TRUE(shm_exists(live)) << "a live owner's segment must stay";
    EXPECT_FALSE(std::filesystem::exists(dir)) << "the dead owner's socket directory must go";
    // The socket directory, and the dead segment unless a run of a test
    // beside this one swept it first (every run sweeps at its start): the
    // checks above hold either way.
    EXPECT_GE(removed.size(), 1u);
    EXPECT_LE(removed.size(), 2u);
  }  // the live segment's owner (this test) removes it here
  EXPECT_FALSE(shm_exists(live));
}

}  // namespace
}  // namespace devmap::testing
