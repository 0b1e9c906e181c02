// JobPlan: a job's plan over a graph: its program (training, or inference
// of `outputs`), the partition into per-device programs, the memory plan's
// inputs and the memory plan itself, which splits the batch to fit each
// device's budget. `coordinator plan` prints it and a run's Session runs
// it: both build it here, so what is printed is what runs.
#pragma once

#include <cstdint>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/recompute_plan.h"
#include "core/graph/graph.h"
#include "core/plan/partition.h"
#include "core/plan/program.h"

namespace devmap {

// What a job computes: a training program, or an inference program
// computing `outputs`, at `batch` samples (and `eval_batch` when training
// evaluates).
struct JobShape {
  bool training = false;
  std::vector<int> outputs;
  int64_t batch = 0;
  int64_t eval_batch = 0;
};

// The ops the coordinator's segments hold: every op it feeds, and `outputs`.
std::vector<int> external_ops(const Graph& graph, const std::vector<int>& outputs);

class JobPlan {
 public:
  // Builds the program, the partition and the memory plan (with the
  // calibrated costs micro_batches auto needs). Throws devmap::Error when a
  // budget cannot be met.
  JobPlan(const Config& config, const RunOptions& options, Graph graph, const JobShape& job);
  // `inputs` points into the graph, program and partition: a plan stays
  // where it was built.
  JobPlan(const JobPlan&) = delete;
  JobPlan& operator=(const JobPlan&) = delete;

  // The ops the plan recomputes (coordinator/plan/recompute_plan.h), chosen
  // before the program is built: graph's Node::recomputed.
  std::vector<RecomputePick> recomputes;
  // When recomputation alone cannot fit the step: which of it with
  // micro-batches and micro-batches alone the plan took, by predicted step
  // time, and the two times. Empty otherwise.
  std::string recompute_verdict;
  const Graph graph;
  const Program program;
  const Partition partition;
  const PlanInputs inputs;
  const JobMemory memory;
};

}  // namespace devmap
