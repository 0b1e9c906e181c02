// How a job meets its devices' memory budgets: the memory plan of every
// device, and the micro-batch sizes that make it fit (core/plan/memory_plan.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/plan/coordinator_memory.h"
#include "coordinator/plan/shared_memory.h"
#include "core/plan/memory_plan.h"
#include "core/plan/step_time.h"

namespace devmap {

// The plan's view of the config's devices: limits, and whether the CPU
// addresses their memory. Workspace figures come from the op schemas.
PlanInputs plan_inputs(const Config& config, const Graph& graph, const Program& program, const Partition& partition,
                       const std::vector<int>& external);

struct JobMemory {
  BatchSplit split;                    // the job's batch: a training step, or a prediction batch
  int64_t eval_batch = 0;              // evaluation batch: eval_batch_size up to `reserve` (0: no evaluation)
  int64_t reserve = 0;                 // the (micro-)batch workers allocate for: split.micro
  MemoryPlan plan;                     // every device at `reserve`: what the workers allocate
  std::vector<std::string> decisions;  // one line per batch the budgets changed
  // Training split into micro-batches: one line per op that couples the
  // samples of its batch ("batch_norm bn1 computes its statistics over
  // micro-batches of 16, not the step's 64"). Empty otherwise.
  std::vector<std::string> micro_batch_statistics;
  CoordinatorMemory coordinator;  // the coordinator's own (attach_coordinator_memory)
  // Pipelined jobs (train.pipeline.micro_batches > 1): rounds of up to
  // pipeline.micro_batches micro-batches, run by the schedule.
  bool rounds = false;
  PipelinePlan pipeline;
  uint32_t input_slots() const { return rounds ? 2 * static_cast<uint32_t>(pipeline.micro_batches) : 2; }
  SharedMemoryPlan shared;  // the run's segments in /dev/shm (attach_shared_memory)
  // train.pipeline.micro_batches auto: the counts considered (from the
  // budget's minimum on) with their predicted step times, and the costs
  // the prediction estimated rather than measured. The count run is
  // split.count.
  std::optional<MicroBatchChoice> auto_choice;
  std::vector<std::string> estimated;
};

// A pipelined job's memory: a step of `batch` samples as at least
// `request.micro_batches` micro-batches, more when a device's budget needs
// smaller ones; every device holds a buffer set per micro-batch its
// schedule keeps in flight, and every ring as many slots as the schedule
// needs. Evaluation runs rounds of as many batches of at most the
// micro-batch (eval_batch: their most; 0: no evaluation).
struct PipelineRequest {
  PipelineKind kind = PipelineKind::k1f1b;
  int micro_batches = 1;
};
JobMemory plan_pipelined_memory(const PlanInputs& inputs, int64_t batch, int64_t eval_batch,
                                const PipelineRequest& request, const std::string& config_path);

// Splits `batch` to the devices' budgets; evaluation (eval_batch, 0: none)
// runs in the buffers that leaves, at most split.micro samples at a time.
// Throws devmap::Error (kInvalidInput) when a device cannot hold even one
// sample (see split_batch); the second form prefixes "CONFIG_PATH: ".
JobMemory plan_job_memory(const PlanInputs& inputs, int64_t batch, int64_t eval_batch);
JobMemory plan_job_memory(const PlanInputs& inputs, int64_t batch, int64_t eval_batch, const std::string& config_path);

// Plans what the coordinator holds for the job (`outputs`: the ops it reads
// back) into memory.coordinator, and checks it against
// coordinator.memory_limit (throws devmap::Error, kInvalidInput). A training
// job's data set sizes come from the IDX headers and data.*_limit.
void attach_coordinator_memory(const Config& config, const Graph& graph, bool training, const std::vector<int>& outputs,
                               JobMemory& memory);

// Plans the run's shared memory (input and output slots as
// attach_coordinator_memory planned them, every edge's slot ring) into
// memory.shared, with coordinator.shared_memory_limit. Checks nothing:
// check_shared_memory does, before a run creates its segments.
void attach_shared_memory(const Config& config, const Partition& partition, JobMemory& memory);

// A run's whole plan, as `coordinator plan` shows it and a session runs it:
// the devices' memory (pipelined when train.pipeline.micro_batches > 1,
// else plan_job_memory), then the coordinator's and the shared memory.
// `outputs`: the ops the coordinator reads back. With micro_batches auto,
// `costs` predict each candidate count's step time (choose_micro_batches:
// the smallest within 5% of the best, never fewer than the budgets need);
// it must not be null then. A training job split into micro-batches fills
// micro_batch_statistics, or, with train.micro_batch_statistics refuse,
// throws devmap::Error (kInvalidInput) naming the first such op.
JobMemory plan_run_memory(const Config& config, const PlanInputs& inputs, int64_t batch, int64_t eval_batch,
                          const std::vector<int>& outputs, const StepCosts* costs = nullptr);

// The micro_batch_statistics lines of a training step of split.requested
// samples run as split.count micro-batches of at most split.micro, one per
// op whose schema couples_samples ("... over micro-batches of 5 to 6, not
// the step's 16" when they differ); empty when the step is not split.
std::vector<std::string> micro_batch_statistics(const Graph& graph, const BatchSplit& split);

// The fewest samples a training batch may hold: an op that couples its
// samples (batch_norm) needs 2 values per channel, so 2 samples for [C]
// features, 1 for [C, H, W]. `which`, when not null, gets the op that needs
// the most (null when none needs more than 1).
int64_t smallest_trainable_batch(const Graph& graph, const Node** which = nullptr);

// Throws devmap::Error (kInvalidInput), naming the op and what to change,
// when `what` ("micro-batches", "the last batch of each epoch") of
// `samples` are fewer than smallest_trainable_batch.
void check_batch_statistics(const Graph& graph, int64_t samples, const std::string& config_path,
                            const std::string& what);
// memory.micro_batch_statistics as a JSON list of strings.
std::string micro_batch_statistics_json(const JobMemory& memory);

// micro_batches auto, as one line: "micro_batches auto: 4 of 16 (predicted
// step 1: 41.2 ms, 2: 33.0 ms, 4: 30.1 ms*, ...; the fewest within 5% of the
// best)"; then, when some costs were estimated, a line naming them. Empty
// without auto.
std::vector<std::string> describe_auto_choice(const JobMemory& memory, const std::string& config_path);
// The same as a JSON object ({"chosen":4,"predicted_ms":{"1":41.2,...},
// "estimated":[...]}), or "null".
std::string auto_choice_json(const JobMemory& memory);

}  // namespace devmap
