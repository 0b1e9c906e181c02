#include "coordinator/data/sample_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/base/error.h"

namespace devmap {

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

std::shared_ptr<FileDescriptor> scratch_file(const std::string& what) {
  const char* env = std::getenv("TMPDIR");
  std::string pattern = std::string(env && *env ? env : "/tmp") + "/devmap-data-XXXXXX";
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0)
    throw_runtime("cannot make a scratch file in " + pattern.substr(0, pattern.rfind('/')) + " for " + what + ": " +
                  std::strerror(errno) + " (set TMPDIR to a folder with room)");
  ::unlink(pattern.c_str());
  return std::make_shared<FileDescriptor>(fd);
}

void write_all(int fd, const void* data, size_t n, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t done = ::write(fd, p, n);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0)
      throw_runtime("cannot write the scratch copy of " + what + ": " + std::strerror(errno) +
                    " (set TMPDIR to a folder with room)");
    p += done;
    n -= static_cast<size_t>(done);
  }
}

void SampleFile::read(int64_t i, uint8_t* out) const {
  const uint64_t at = offset_ + static_cast<uint64_t>(i) * sample_bytes_;
  size_t done = 0;
  while (done < sample_bytes_) {
    const ssize_t got = ::pread(fd_->get(), out + done, sample_bytes_ - done, static_cast<off_t>(at + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_runtime("cannot read " + where_ + ": " + std::strerror(errno));
    if (got == 0) throw_invalid(where_ + " changed while it was read: it holds fewer samples now");
    done += static_cast<size_t>(got);
  }
}

}  // namespace devmap
