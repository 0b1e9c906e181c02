// CheckpointLock: one training run per checkpoint path. An advisory lock
// (flock) on "<checkpoint>.lock" beside it, held for the life of the run;
// the file names its holder ("pid 123 on host h"). A second run on the same
// path refuses to start and names the holder. The lock file is removed when
// the run ends, and with it any folder the lock created that is still empty;
// a lock file left by a killed run is taken over (the kernel released its
// lock).
#pragma once

#include <string>
#include <vector>

namespace devmap {

class CheckpointLock {
 public:
  // Throws devmap::Error (kInvalidInput) when another run holds the lock,
  // naming its pid and host, or when the lock file cannot be created.
  explicit CheckpointLock(const std::string& checkpoint);
  ~CheckpointLock();
  CheckpointLock(const CheckpointLock&) = delete;
  CheckpointLock& operator=(const CheckpointLock&) = delete;

  const std::string& path() const { return path_; }
  static std::string lock_path_for(const std::string& checkpoint) { return checkpoint + ".lock"; }

 private:
  std::string path_;
  int fd_ = -1;
  std::vector<std::string> created_dirs_;  // innermost last
};

}  // namespace devmap
