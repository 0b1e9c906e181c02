// Samples read by index from a file (pread), so that a data set's pixels
// stay in the page cache, not in the coordinator's memory: its resident
// memory holds a batch at a time however large the data set is. A
// compressed source (a gzip IDX file, a compressed .npz member) is first
// inflated into a scratch file: created in $TMPDIR (else /tmp) and unlinked
// at once, so nothing is left behind whatever ends the run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace devmap {

// An open file descriptor, closed with the last copy.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// A new scratch file, already unlinked, for `what` (in messages); throws
// devmap::Error when none can be made.
std::shared_ptr<FileDescriptor> scratch_file(const std::string& what);

// Writes all of [data, data + n) at the end of `fd`; throws naming `what`.
void write_all(int fd, const void* data, size_t n, const std::string& what);

class SampleFile {
 public:
  SampleFile() = default;
  // Sample i is bytes [offset + i * sample_bytes, offset + (i + 1) * sample_bytes) of `fd`.
  SampleFile(std::shared_ptr<FileDescriptor> fd, uint64_t offset, uint64_t sample_bytes, std::string where)
      : fd_(std::move(fd)), offset_(offset), sample_bytes_(sample_bytes), where_(std::move(where)) {}
  // Reads sample `i` into `out` (sample_bytes()); throws devmap::Error when
  // the file holds less than it did when it was opened.
  void read(int64_t i, uint8_t* out) const;
  uint64_t sample_bytes() const { return sample_bytes_; }

 private:
  std::shared_ptr<FileDescriptor> fd_;
  uint64_t offset_ = 0, sample_bytes_ = 0;
  std::string where_;
};

}  // namespace devmap
