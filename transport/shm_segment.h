// ShmSegment: a POSIX shared-memory segment (Boost.Interprocess) mapped into
// this process. The creator owns the name: it creates it exclusively with
// mode 0600 and removes it when destroyed, on every exit path. Openers map
// an existing segment and never remove it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace devmap {

class ShmSegment {
 public:
  // Creates "/<name>" of `bytes` bytes, zero-filled. Throws devmap::Error
  // (kRuntime) when it exists already or cannot be made.
  static ShmSegment create(const std::string& name, size_t bytes);
  // Maps an existing segment read-write.
  static ShmSegment open(const std::string& name);

  ShmSegment(ShmSegment&&) noexcept;
  ShmSegment& operator=(ShmSegment&&) noexcept;
  ~ShmSegment();

  void* data() const;
  size_t size() const;
  const std::string& name() const { return name_; }
  bool owner() const { return owner_; }

  // Removes a segment by name; false when there was none.
  static bool remove(const std::string& name);

 private:
  struct Impl;
  ShmSegment(std::string name, bool owner, std::unique_ptr<Impl> impl);
  std::string name_;
  bool owner_ = false;
  std::unique_ptr<Impl> impl_;
};

}  // namespace devmap
