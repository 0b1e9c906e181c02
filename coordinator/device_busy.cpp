#include "coordinator/device_busy.h"

#include <algorithm>
#include <cmath>

namespace devmap {

void DeviceBusy::add_work(const std::string& device, double compute_seconds, double wait_seconds) {
  busy_[device] += std::max(0.0, compute_seconds - wait_seconds);
}

void DeviceBusy::add_step(double wall_seconds) {
  wall_ += std::max(0.0, wall_seconds);
}

std::vector<DeviceBusy::Share> DeviceBusy::shares() const {
  std::vector<Share> out;
  for (const auto& [device, seconds] : busy_)
    out.push_back(Share{device, seconds, wall_ > 0 ? std::clamp(seconds / wall_, 0.0, 1.0) : 0.0});
  return out;
}

namespace {

std::string percent(double fraction) {
  return std::to_string(static_cast<int>(std::lround(fraction * 100))) + "%";
}

}  // namespace

std::string busy_summary(const DeviceBusy& busy) {
  std::string s = "device busy:";
  const std::vector<DeviceBusy::Share> shares = busy.shares();
  for (size_t i = 0; i < shares.size(); ++i)
    s += (i ? ", " : " ") + shares[i].device + " " + percent(shares[i].fraction);
  return s + " of the step time";
}

void add_busy_fields(JsonObject& line, const DeviceBusy& busy) {
  JsonObject fractions;
  for (const DeviceBusy::Share& s : busy.shares()) fractions.add(s.device, s.fraction);
  line.add_raw("device_busy", fractions.str());
}

std::optional<std::string> split_advice(const DeviceBusy& busy) {
  const std::vector<DeviceBusy::Share> shares = busy.shares();
  if (shares.size() < 2) return std::nullopt;
  for (const DeviceBusy::Share& s : shares)
    if (s.fraction >= 0.5) return std::nullopt;
  return "every device was idle more than half of the time: the devices of this split mostly wait for each other, "
         "so the split buys memory but not speed (see \"When a split pays\" in docs/CONFIG.md: pipelining, fewer "
         "devices, or more threads per device)";
}

}  // namespace devmap
