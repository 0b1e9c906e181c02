// Leftovers of a crashed run are removed once their owner is gone, never
// while it lives, and nothing without proof of being a run's.
#include "coordinator/run/stale_runs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/support/run_process.h"
#include "transport/run_cleanup.h"
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

// A folder as a crashed run leaves it: its marker (no longer locked) and a
// socket. With `live`, the marker's lock stays held until *live is closed.
std::string crashed_run_folder(const std::string& tmp, const std::string& run_id, int* live = nullptr) {
  const std::string dir = tmp + "/devmap-" + run_id;
  std::filesystem::create_directories(dir);
  const int marker = mark_run_dir(dir, run_id);
  EXPECT_GE(marker, 0);
  if (live != nullptr)
    *live = marker;
  else
    ::close(marker);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = dir + "/control.sock";
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << sock;
  ::close(fd);
  return dir;
}

// A lock file as a crashed run leaves it: present, held by no one.
void leave_lock(const std::string& run_id) {
  const int fd = ::open(run_lock_path(run_id).c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
}

TEST(StaleRuns, ASegmentIsRemovedOnlyOnceItsOwnerIsGone) {
  TempDir tmp;
  const std::string dead_id = std::to_string(dead_pid()) + "-00000000deadbeef";
  std::string dead = "devmap-" + dead_id + "-input";
  std::string live = "devmap-" + std::to_string(::getpid()) + "-00000000cafef00d-input";
  {
    ShmSegment a = ShmSegment::create(dead, 64), b = ShmSegment::create(live, 64);
    // Leak both names, as a crashed run would.
    const std::string dir = crashed_run_folder(tmp.path(), dead_id);
    leave_lock(dead_id);
    auto removed = remove_stale_runs("/dev/shm", tmp.path());
    EXPECT_FALSE(shm_exists(dead)) << "the dead owner's segment must go";
    EXPECT_FALSE(shm_exists("devmap-" + dead_id + "-lock")) << "and its lock file";
    EXPECT_TRUE(shm_exists(live)) << "a live owner's segment must stay";
    EXPECT_FALSE(std::filesystem::exists(dir)) << "the dead owner's socket folder must go";
    // The socket folder, the segment and the lock, unless a run of a test
    // beside this one swept them first (every run sweeps at its start).
    EXPECT_GE(removed.size(), 1u);
    EXPECT_LE(removed.size(), 3u);
  }  // the live segment's owner (this test) removes it here
  EXPECT_FALSE(shm_exists(live));
}

// Nothing without proof of being a run's own goes: a user's folder whose
// name only looks like a run's, a run's folder without its marker, one
// whose marker names another run, one whose marker a live run holds (a
// run of another PID namespace with its own /dev/shm), a link to a folder,
// and from a run's folder anything the run did not make (with it, the
// folder stays).
TEST(StaleRuns, NothingWithoutProofOfBeingARunsIsRemoved) {
  TempDir tmp;
  namespace fs = std::filesystem;
  const std::string pid = std::to_string(dead_pid());
  const std::string user = tmp.path() + "/devmap-2026-12-06-results";
  fs::create_directories(user);
  { std::ofstream(user + "/w.safetensors") << "weights"; }
  const std::string unmarked_id = pid + "-0000000000000001", unmarked = tmp.path() + "/devmap-" + unmarked_id;
  fs::create_directories(unmarked);
  { std::ofstream(unmarked + "/notes.txt") << "mine"; }
  leave_lock(unmarked_id);
  const std::string other_id = pid + "-0000000000000002", other = crashed_run_folder(tmp.path(), other_id);
  { std::ofstream(other + "/devmap-run", std::ios::trunc) << pid + "-0000000000000009"; }
  leave_lock(other_id);
  // A live run of another PID namespace: no lock file in this /dev/shm, its
  // pid means nothing here, and it holds its marker's lock.
  const std::string foreign_id = pid + "-0000000000000003";
  int foreign_marker = -1;
  const std::string foreign = crashed_run_folder(tmp.path(), foreign_id, &foreign_marker);
  const std::string kept_id = pid + "-0000000000000004", kept = crashed_run_folder(tmp.path(), kept_id);
  fs::create_directories(kept + "/results");
  { std::ofstream(kept + "/results/model.safetensors") << "weights"; }
  leave_lock(kept_id);
  const std::string target_id = pid + "-0000000000000005", target = crashed_run_folder(tmp.path(), target_id);
  fs::rename(target, tmp.path() + "/elsewhere");
  fs::create_directory_symlink(tmp.path() + "/elsewhere", target);
  leave_lock(target_id);

  const auto removed = remove_stale_runs("/dev/shm", tmp.path());
  for (const std::string& p : removed) EXPECT_EQ(p.find(tmp.path()), std::string::npos) << p << " was removed";
  EXPECT_TRUE(fs::exists(user + "/w.safetensors"));
  EXPECT_TRUE(fs::exists(unmarked + "/notes.txt"));
  EXPECT_TRUE(fs::exists(other + "/control.sock"));
  EXPECT_TRUE(fs::exists(foreign + "/control.sock"));
  EXPECT_TRUE(fs::exists(tmp.path() + "/elsewhere/control.sock"));
  // From the run's own folder only its sockets went; the user's results stay.
  EXPECT_TRUE(fs::exists(kept + "/results/model.safetensors"));
  EXPECT_FALSE(fs::exists(kept + "/control.sock"));
  for (const std::string& id : {unmarked_id, other_id, kept_id, target_id}) ::unlink(run_lock_path(id).c_str());
  ::close(foreign_marker);
}

}  // namespace
}  // namespace devmap::testing
