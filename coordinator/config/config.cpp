#include "coordinator/config/config.h"

namespace devmap {

namespace {
constexpr Job kJobs[] = {Job::kTrain, Job::kPredict, Job::kPlan, Job::kCalibrate};
}  // namespace

const char* job_name(Job job) {
  switch (job) {
    case Job::kTrain: return "train";
    case Job::kPredict: return "predict";
    case Job::kPlan: return "plan";
    case Job::kCalibrate: return "calibrate";
  }
  return "?";
}

std::optional<Job> parse_job(std::string_view name) {
  for (Job job : kJobs)
    if (name == job_name(job)) return job;
  return std::nullopt;
}

std::vector<bool> Config::placed_by_user() const {
  std::vector<bool> out;
  for (const std::string& reason : placement_reason) out.push_back(reason != kPlacedByDefault);
  return out;
}

const DeviceSpec* Config::find_device(const std::string& name) const {
  for (const DeviceSpec& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace devmap
