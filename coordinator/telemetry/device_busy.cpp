#include "coordinator/telemetry/device_busy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

DeviceBusy DeviceBusy::since(const DeviceBusy& earlier) const {
  DeviceBusy d;
  for (const auto& [device, seconds] : busy_) {
    auto it = earlier.busy_.find(device);
    d.busy_[device] = std::max(0.0, seconds - (it == earlier.busy_.end() ? 0.0 : it->second));
  }
  d.wall_ = std::max(0.0, wall_ - earlier.wall_);
  return d;
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

void add_busy_idle_fields(JsonObject& line, const DeviceBusy& busy) {
  add_busy_fields(line, busy);
  JsonObject idle;
  for (const DeviceBusy::Share& s : busy.shares()) idle.add(s.device, 1.0 - s.fraction);
  line.add_raw("device_idle", idle.str());
}

std::string busy_table(const DeviceBusy& busy) {
  std::string out;
  char line[160];
  for (const DeviceBusy::Share& s : busy.shares()) {
    std::snprintf(line, sizeof line, "  %-8s busy %9.3f s (%5.1f%%)   idle %9.3f s (%5.1f%%)\n", s.device.c_str(),
                  s.busy_seconds, s.fraction * 100, std::max(0.0, busy.wall_seconds() - s.busy_seconds),
                  (1 - s.fraction) * 100);
    out += line;
  }
  return out;
}

void print_busy(const DeviceBusy& busy, std::ostream& os) {
  os << busy_summary(busy) << "\n";
  if (auto advice = split_advice(busy)) os << *advice << "\n";
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
