#include "coordinator/run_resources.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "coordinator/stale_runs.h"
#include "core/error.h"
#include "transport/run_names.h"

namespace devmap {
namespace {

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

RunResources::RunResources() : run_id_(make_run_id()), dir_(temp_root() + "/devmap-" + run_id_) {
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
}

RunResources::~RunResources() {
  // Remove whatever sockets the run left in its private directory, then it.
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") ::unlink((dir_ + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir_.c_str());
  // Last: until the lock file goes, a sweep leaves the run's names alone.
  ::unlink(run_lock_path(run_id_).c_str());
  ::close(lock_fd_);
}

std::string RunResources::socket_path(const std::string& name) const {
  return dir_ + "/" + name + ".sock";
}

std::string RunResources::segment_name(const std::string& purpose) const {
  return devmap::segment_name(segment_prefix(), purpose);
}

}  // namespace devmap
