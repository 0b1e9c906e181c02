// DeviceBusy: how much of a run each device spent on its own work. The one
// place where busy and idle fractions are computed; the end-of-run summary,
// the metrics and the pipeline timeline read them from here.
//
// A device's busy time is, per step, its worker's time from STEP to the end
// of its work less what it spent waiting for other devices (a tensor to
// receive, a free slot to send into). The run's time is the coordinator's:
// from sending each step to having every result. busy / run time is the
// device's busy fraction; the rest is its idle fraction (waiting for its
// peers or for the coordinator).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/util/json_writer.h"

namespace devmap {

class DeviceBusy {
 public:
  // One device's part of one step.
  void add_work(const std::string& device, double compute_seconds, double wait_seconds);
  // The coordinator's time for one step (send to last result).
  void add_step(double wall_seconds);

  struct Share {
    std::string device;
    double busy_seconds = 0;
    double fraction = 0;  // busy_seconds / wall_seconds, in [0, 1]
  };
  // Every device that worked, by name.
  std::vector<Share> shares() const;
  double wall_seconds() const { return wall_; }
  // What was added since `earlier`, a copy of this one taken before (an
  // epoch's share: copy at its start, since() at its end).
  DeviceBusy since(const DeviceBusy& earlier) const;

 private:
  std::map<std::string, double> busy_;
  double wall_ = 0;
};

// "device busy: cpu:0 45%, cpu:1 12% of the run's step time".
std::string busy_summary(const DeviceBusy& busy);
// Adds "device_busy": {"cpu:0": 0.45, ...} (busy fractions) to a metrics line.
void add_busy_fields(JsonObject& line, const DeviceBusy& busy);
// The same and "device_idle": {"cpu:0": 0.55, ...} (1 - busy: the bubble).
void add_busy_idle_fields(JsonObject& line, const DeviceBusy& busy);
// The --profile lines: per device, busy and idle seconds and fractions of
// the run's step time, e.g. "  cpu:0   busy 1.234 s (45.0%)   idle 1.508 s (55.0%)".
std::string busy_table(const DeviceBusy& busy);
// When several devices worked and every one was idle more than half the
// time: a sentence that says so and what to do; otherwise nothing.
std::optional<std::string> split_advice(const DeviceBusy& busy);
// The end-of-run lines: busy_summary, then split_advice when there is one.
void print_busy(const DeviceBusy& busy, std::ostream& os);

}  // namespace devmap
