// `coordinator plan`: the memory plan of a config's job, printed as tables
// (per device and per op, then the cut edges) or as JSON. Runs nothing.
#pragma once

#include <iosfwd>
#include <string>

#include "coordinator/plan/job_memory.h"
#include "core/plan/recompute_choice.h"

namespace devmap {

struct PlanReportInfo {
  std::string config_path;
  std::string job;                       // "train" or "predict"
  const Partition* partition = nullptr;  // for the pipeline schedule
  // The ops the plan recomputes (JobPlan::recomputes), for each device's
  // account of what it keeps, shares and recomputes. Null: none.
  const std::vector<RecomputePick>* recomputes = nullptr;
};

void print_memory_plan(const PlanReportInfo& info, const JobMemory& memory, const Graph& graph, std::ostream& os);
std::string memory_plan_json(const PlanReportInfo& info, const JobMemory& memory, const Graph& graph);

}  // namespace devmap
