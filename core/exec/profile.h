// Per-op timing of an executor (--profile): calls, seconds and FLOPs per
// (op, direction). Off unless enabled; when on it costs two clock reads per
// instruction, and on a device with a DeviceTimer (a GPU) two events per
// kernel and one wait for the device per pass (device time, not enqueue
// time: Executor::enable_profile).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace devmap {

enum class ProfileDirection : uint32_t { kForward, kBackward, kSumGrads, kSend, kRecv, kOptimizer };

const char* profile_direction_name(ProfileDirection d);

struct ProfileEntry {
  std::string name;  // op name (or edge name for send/recv, "optimizer")
  ProfileDirection direction = ProfileDirection::kForward;
  uint64_t calls = 0;
  double seconds = 0;
  double flops = 0;
  std::string kernel;  // the implementation that ran (OpKernel::implementation), or empty
};

class Profile {
 public:
  // Adds one call; entries are kept in first-seen order.
  void add(const std::string& name, ProfileDirection direction, double seconds, double flops,
           const std::string& kernel = {});
  const std::vector<ProfileEntry>& entries() const { return entries_; }

 private:
  std::vector<ProfileEntry> entries_;
};

}  // namespace devmap
