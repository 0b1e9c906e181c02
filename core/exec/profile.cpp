#include "core/exec/profile.h"

namespace devmap {

const char* profile_direction_name(ProfileDirection d) {
  switch (d) {
    case ProfileDirection::kForward: return "forward";
    case ProfileDirection::kBackward: return "backward";
    case ProfileDirection::kSumGrads: return "sum_grads";
    case ProfileDirection::kSend: return "send";
    case ProfileDirection::kRecv: return "recv";
    case ProfileDirection::kOptimizer: return "optimizer";
  }
  return "?";
}

void Profile::add(const std::string& name, ProfileDirection direction, double seconds, double flops,
                  const std::string& kernel) {
  for (ProfileEntry& e : entries_)
    if (e.direction == direction && e.name == name) {
      ++e.calls;
      e.seconds += seconds;
      e.flops += flops;
      return;
    }
  entries_.push_back({name, direction, 1, seconds, flops, kernel});
}

}  // namespace devmap
