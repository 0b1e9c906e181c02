#include "coordinator/run/run_resources.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>

#include "coordinator/run/stale_runs.h"
#include "coordinator/util/program_paths.h"
#include "core/base/error.h"
#include "transport/run_cleanup.h"
#include "transport/run_names.h"

extern char** environ;

namespace devmap {
namespace {

void remove_stale_runs_if(StaleRuns stale) {
  if (stale != StaleRuns::kRemoveFirst) return;
  for (const std::string& path : remove_stale_runs())
    std::cerr << "devmap: removed " << path << ", left by a run whose process is gone\n";
}

std::string make_run_id() {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d-%016llx", static_cast<int>(::getpid()), static_cast<unsigned long long>(r));
  return buf;
}

std::string temp_root() {
  const char* t = std::getenv("TMPDIR");
  return (t && *t) ? t : "/tmp";
}

// The longest socket path a run makes in `dir` must fit in sun_path.
void check_socket_dir(const std::string& dir) {
  const std::string longest = data_socket_path(dir, "cpu:999");
  constexpr size_t kMax = sizeof(sockaddr_un::sun_path) - 1;
  if (longest.size() > kMax)
    throw_invalid("the run's socket files would have paths of up to " + std::to_string(longest.size()) +
                  " bytes, such as '" + longest + "', but a socket path may have at most " + std::to_string(kMax) +
                  ": TMPDIR ('" + temp_root() + "') is too long; set TMPDIR to a short folder such as /tmp");
}

}  // namespace

RunResources::RunResources(StaleRuns stale) : run_id_(make_run_id()), dir_(temp_root() + "/devmap-" + run_id_) {
  remove_stale_runs_if(stale);  // before this run creates anything
  check_socket_dir(dir_);
  const std::string lock = run_lock_path(run_id_);
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) throw_runtime("cannot create the run's lock file " + lock + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX) != 0) {
    const int err = errno;
    ::close(lock_fd_);
    ::unlink(lock.c_str());
    throw_runtime("cannot lock " + lock + ": " + std::strerror(err));
  }
  if (::mkdir(dir_.c_str(), 0700) != 0) {
    const int err = errno;
    ::unlink(lock.c_str());
    ::close(lock_fd_);
    throw_runtime("cannot create run directory " + dir_ + ": " + std::strerror(err));
  }
  marker_fd_ = mark_run_dir(dir_, run_id_);
  start_guard();
}

void RunResources::start_guard() {
  // The guard lives beside the coordinator (tests: beside their binary) or,
  // installed, in its helper folder (coordinator/util/program_paths.h).
  const std::string program = find_companion_program("devmap_run_guard");
  if (program.empty()) return;  // without it, workers and the next run's sweep clean up
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_init(&attr);
  // Its own process group: a terminal's Ctrl-C goes to the coordinator only.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::string prefix = segment_prefix(), lock = run_lock_path(run_id_), name = "devmap_run_guard";
  char* argv[] = {name.data(), prefix.data(), dir_.data(), lock.data(), nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, program.c_str(), &actions, &attr, argv, environ) == 0) {
    guard_pid_ = pid;
    guard_fd_ = fds[1];
  } else {
    ::close(fds[1]);
  }
  ::close(fds[0]);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
}

RunResources::~RunResources() {
  // The sockets the run left in its folder, its marker, then the folder.
  remove_run_dir(dir_, run_id_);
  if (marker_fd_ >= 0) ::close(marker_fd_);
  // Last: until the lock file goes, a sweep leaves the run's names alone.
  ::unlink(run_lock_path(run_id_).c_str());
  ::close(lock_fd_);
  // The guard finds nothing left, and exits.
  if (guard_fd_ >= 0) ::close(guard_fd_);
  for (int i = 0; guard_pid_ > 0 && i < 200; ++i) {
    if (::waitpid(guard_pid_, nullptr, WNOHANG) != 0) break;
    ::usleep(5000);
  }
}

std::string RunResources::socket_path(const std::string& name) const {
  return dir_ + "/" + name + ".sock";
}

std::string RunResources::segment_name(const std::string& purpose) const {
  return devmap::segment_name(segment_prefix(), purpose);
}

}  // namespace devmap
