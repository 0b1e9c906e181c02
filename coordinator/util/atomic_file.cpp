#include "coordinator/util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "coordinator/util/process_gone.h"
#include "core/base/error.h"

namespace devmap {

namespace fs = std::filesystem;

bool AtomicFile::renames_into_place(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

AtomicFile::AtomicFile(std::string path, std::string what)
    : path_(std::move(path)),
      what_(std::move(what)),
      tmp_(path_ + std::string(kTemporaryTag) + std::to_string(::getpid())) {
  if (!renames_into_place(path_)) {
    // A device, a FIFO, a link (/dev/stdout): written where it is.
    tmp_.clear();
    out_.open(path_, std::ios::out | std::ios::binary);
    if (!out_) throw_invalid("cannot write " + what_ + " to '" + path_ + "': " + std::strerror(errno));
    return;
  }
  fs::path p(path_);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  remove_stale(path_);
  out_.open(tmp_, std::ios::trunc | std::ios::binary);
  if (!out_)
    throw_invalid("cannot write " + what_ + " to '" + path_ + "': " + std::strerror(errno) + " (creating " + tmp_ +
                  ")");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
  }
}

void AtomicFile::commit() {
  out_.flush();
  const int write_errno = errno;
  const std::string& written = tmp_.empty() ? path_ : tmp_;
  if (!out_) throw_runtime("writing " + what_ + " to '" + written + "' failed: " + std::strerror(write_errno));
  out_.close();
  if (tmp_.empty()) {  // written in place
    committed_ = true;
    return;
  }
  int fd = ::open(tmp_.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw_runtime("writing " + what_ + " to '" + tmp_ + "' failed: " + std::strerror(err));
  }
  ::close(fd);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw_runtime("cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno));
  committed_ = true;
}

std::optional<int> AtomicFile::temporary_owner(const std::string& file_name) {
  const size_t t = file_name.rfind(kTemporaryTag);
  if (t == std::string::npos || t == 0) return std::nullopt;
  const std::string pid = file_name.substr(t + kTemporaryTag.size());
  if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(pid);
}

bool AtomicFile::is_abandoned_temporary(const std::string& file_name) {
  const auto pid = temporary_owner(file_name);
  return pid && *pid != ::getpid() && pid_gone(*pid);
}

void AtomicFile::remove_stale(const std::string& path) {
  fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + std::string(kTemporaryTag);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // The tag found last must be the one after `path`'s own name.
    if (name.rfind(prefix, 0) == 0 && name.rfind(kTemporaryTag) + kTemporaryTag.size() == prefix.size() &&
        is_abandoned_temporary(name))
      fs::remove(entry.path(), ec);
  }
}

void write_file_atomically(const std::string& path, const std::string& text, const std::string& what) {
  AtomicFile f(path, what);
  f.stream() << text;
  f.commit();
}

}  // namespace devmap
