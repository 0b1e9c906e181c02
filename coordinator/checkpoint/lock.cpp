#include "coordinator/checkpoint/lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"
#include "core/base/process_stats.h"

namespace devmap {
namespace {

namespace fs = std::filesystem;

std::string holder_text() {
  return "pid " + std::to_string(::getpid()) + " on host " + host_name().value_or("?");
}

std::string read_holder(int fd) {
  char buf[512] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "a process that has not yet written its name" : s;
}

}  // namespace

CheckpointLock::CheckpointLock(const std::string& checkpoint) : path_(lock_path_for(checkpoint)) {
  fs::path dir = fs::path(path_).parent_path();
  std::error_code ec;
  for (fs::path d = dir; !d.empty() && !fs::exists(d, ec); d = d.parent_path()) {
    created_dirs_.insert(created_dirs_.begin(), d.string());
    if (d == d.parent_path()) break;
  }
  if (!dir.empty()) fs::create_directories(dir, ec);
  for (;;) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw_invalid("cannot create the checkpoint's lock file '" + path_ + "': " + std::strerror(errno) +
                    " (train.checkpoint must be in a folder this user can write)");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const std::string holder = read_holder(fd_);
      ::close(fd_);
      fd_ = -1;
      throw_invalid("checkpoint '" + checkpoint + "' is in use by another run (" + holder + ", lock file " + path_ +
                    "): wait for it to end, or give this run another train.checkpoint or --out-dir");
    }
    // The holder before us may have removed the file after we opened it:
    // the lock counts only on the file that is at the path now.
    struct stat held {
    }, now{};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      break;
    ::close(fd_);
  }
  const std::string me = holder_text() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock holds without the name; only messages lose it.
  }
}

CheckpointLock::~CheckpointLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still holding it: no one can lock the old file and miss a new one
  ::close(fd_);
  std::error_code ec;
  for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it)
    if (fs::is_empty(*it, ec)) fs::remove(*it, ec);
}

}  // namespace devmap
