// Scores one placement the way a run would go: the partition it makes,
// the predicted time of a step for every micro-batch count and pipeline
// schedule the request allows (build_schedule's makespan, segment costs
// from the cost model, transfer costs on the cut edges), and the memory of
// every device as the memory plan counts it (plan_pipeline's buffer sets and
// ring slots, then plan_memory), so a choice that fits here fits the run.
// Every candidate the planner considers, and the brute force of the tests,
// is scored by this one class.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "core/placement/request.h"
#include "core/plan/memory_plan.h"
#include "core/plan/partition.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/program.h"

namespace devmap {

// How a step runs: `micro_batches` micro-batches of at most `micro_batch`
// samples (micro_batch_sizes), in schedule `kind` (none for one).
struct ScheduleChoice {
  int micro_batches = 1;
  int64_t micro_batch = 1;
  PipelineKind kind = PipelineKind::kNone;
  double step_seconds = std::numeric_limits<double>::infinity();
};

// A device over its memory_limit: planner device index, bytes planned.
struct OverBudget {
  int device = -1;
  uint64_t need = 0, limit = 0;
  uint64_t over() const { return need > limit ? need - limit : 0; }
};

struct PlacementScore {
  bool fits = false;
  ScheduleChoice best;  // when it fits: the fastest choice within every budget
  // With score(.., with_faster): the fastest choice when it is over a
  // budget (faster than `best`, or nothing fits). faster_over: the device
  // over its limit by the most, and by how much, for `faster` or, when
  // nothing fits, for the first choice found over.
  std::optional<ScheduleChoice> faster;
  OverBudget faster_over;
  // At the least memory any choice needs (lock-step, one sample per
  // micro-batch or kMaxMicroBatches of them): bytes per planner device (0:
  // unused) and the bytes over the limits, summed. 0 overflow does not mean
  // that a listed choice fits, only that the least one does.
  std::vector<uint64_t> least_need;
  uint64_t least_overflow = 0;
};

// The full picture of one choice, for the report.
struct ScoredPlan {
  Partition partition;
  std::vector<int> device_index;  // per partition device: its planner device index
  PipelineSchedule schedule;      // in seconds, with the cost model's segment and transfer costs
  MemoryPlan memory;              // as the run will plan it
};

class PlacementScorer {
 public:
  // Throws devmap::Error (kInvalidInput) for a request it cannot plan: no
  // device, a pin naming an unknown device, links of the wrong size.
  explicit PlacementScorer(const PlacementRequest& request);

  const PlacementRequest& request() const { return request_; }
  int device_count() const { return static_cast<int>(request_.devices.size()); }
  // Ops the program computes that are neither fed (inputs, labels) nor
  // sinks (loss, metric), in node order; `free` of them the planner may
  // move, the others are pinned.
  const std::vector<int>& compute_ops() const { return compute_; }
  const std::vector<int>& free_ops() const { return free_; }
  int pinned_device(int node) const { return pinned_[static_cast<size_t>(node)]; }  // -1: free
  // The program runs the op (sinks included, fed ops not).
  bool computed(int node) const {
    return program_.needed[static_cast<size_t>(node)] && !graph_.node(node).schema->fed_by_coordinator();
  }
  // A full placement (planner device index per node, -1 for fed ops) from
  // one whose compute ops have devices: pins applied, a sink (and any op
  // the program does not compute) goes with its first placed input unless
  // pinned (else device 0).
  std::vector<int> complete(std::vector<int> placement) const;

  // Scores a complete placement over every choice. The search skips
  // simulating choices that cannot be the fastest that fits (their busiest
  // device's work reaches it, or they are over a budget); `with_faster`
  // simulates them all, to name the fastest choice over a budget.
  PlacementScore score(const std::vector<int>& placement, bool with_faster = false);
  // The schedule and memory plan of one choice of a complete placement.
  ScoredPlan detail(const std::vector<int>& placement, const ScheduleChoice& choice);
  int evaluations() const { return evaluations_; }
  // Whether the search must stop scoring: `budget` evaluations reached, or
  // the request's stop() says so.
  bool out_of_budget(int budget) const { return evaluations_ >= budget || (request_.stop && request_.stop()); }

  // One op's forward (backward) seconds per micro-batch of `batch` samples
  // on planner device `device`: measured, else the analytical estimate.
  double op_seconds(int node, int device, int64_t batch, bool backward);
  // Whether op_seconds of `node` on `device` at `batch` is the analytical
  // estimate (for the forward or the backward) rather than a measurement.
  bool estimated(int node, int device, int64_t batch);
  // The choices scored for every placement (the larger counts are tried
  // only when none of these fits).
  const std::vector<ScheduleChoice>& choices() const { return choices_; }
  const std::vector<ScheduleChoice>& extra_choices() const { return extra_; }
  // The memory of one op alone at one sample per micro-batch: its
  // parameters with their gradients and optimizer state, its activations
  // and its workspace on `device` (a lower bound of what any device that
  // holds it needs).
  uint64_t op_least_bytes(int node) const { return op_least_[static_cast<size_t>(node)]; }
  // Parameters, gradients and optimizer state of an op: what its device
  // holds whatever the micro-batch.
  uint64_t op_state_bytes(int node) const { return op_state_[static_cast<size_t>(node)]; }
  // A lower bound of what any device that runs the op holds for it: its
  // parameter state and its output at the least micro-batch (unless the
  // coordinator reads it back).
  uint64_t op_floor_bytes(int node) const { return op_floor_[static_cast<size_t>(node)]; }
  int64_t least_micro_batch() const { return least_micro_; }

 private:
  struct Costs {
    std::vector<double> fwd, bwd;  // [node * devices + device]
    std::vector<bool> estimated;   // the same index: some pass had no measurement
  };
  const Costs& costs_at(int64_t size);
  // What a step adds to its schedule's makespan: in training the slowest
  // device's optimizer update (its parameters times its seconds per
  // parameter), and the largest step overhead of the devices it uses.
  double fixed_step_seconds(const Partition& part, const std::vector<int>& device_index) const;
  void apply(const std::vector<int>& placement);
  PlanInputs plan_inputs(const Partition& part, const std::vector<int>& device_index, const PipelinePlan* pipeline);
  ScheduleRequest schedule_request(const Partition& part, const std::vector<int>& device_index,
                                   const ScheduleChoice& choice);
  // Whether choice `c` fits every device's limit as the run would plan it;
  // else the device over by the most.
  struct LeastMemory {                                      // what one placement's least memory settled
    int64_t fits_at = 0;                                    // the largest micro-batch that fits
    int64_t over_at = std::numeric_limits<int64_t>::max();  // the smallest that does not
    OverBudget over;                                        // there
  };
  bool memory_fits(const Partition& part, const std::vector<int>& device_index, const ScheduleChoice& c,
                   LeastMemory& least, OverBudget& over);
  bool try_choices(const std::vector<ScheduleChoice>& list, const Partition& part, const std::vector<int>& device_index,
                   bool with_faster, PlacementScore& out);

  PlacementRequest request_;
  Graph graph_;
  Program program_;
  std::vector<int> external_;
  std::vector<int> compute_, free_, pinned_;
  std::vector<bool> sink_;
  std::vector<ScheduleChoice> choices_, extra_;
  int64_t least_micro_ = 1;
  std::map<int64_t, Costs> costs_;
  std::vector<uint64_t> op_least_, op_state_, op_floor_;
  int evaluations_ = 0;
};

}  // namespace devmap
