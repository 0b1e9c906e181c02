// What the placement planner is asked: a graph, the ops the user pinned,
// the devices with their budgets and costs, and the schedule choices it may
// make. Plain data, filled by the coordinator (from the config and a
// calibration cache) or by tests (synthetic device tables).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/plan/cost_model.h"
#include "core/plan/pipeline_schedule.h"

namespace devmap {

// One device the planner may place ops on.
struct PlannerDevice {
  std::string name;           // "cpu:0", "gpu:0"
  bool host_memory = true;    // false: a GPU (staged tensors, cuBLAS workspace; see PlanDevice)
  bool offload = false;       // devices.NAME.offload: parameters (PlanDevice::offload)
  uint64_t memory_limit = 0;  // bytes; 0: unlimited
  int threads = 1;            // the worker's threads (the rates and measurements are for this count)
  DeviceRates rates;          // the analytical estimate, where no measurement exists
  // With `offload`: how fast its offloaded state moves between host memory
  // and the device (analytical_offload_seconds), bytes per second.
  double copy_bytes_per_s = 1e10;
  // Training: the optimizer update's seconds per parameter on this device
  // (measured by a calibration; 0: updates are free). A step ends with the
  // slowest device's update.
  double update_seconds_per_param = 0;
  // What a step costs on this device besides its ops and update (the STEP
  // round trip, the input, the loss; measured by a calibration). A step
  // adds the largest of its devices'.
  double step_overhead_s = 0;
};

struct PlacementRequest {
  // Shapes inferred. Node::device is ignored: pins say what is fixed.
  const Graph* graph = nullptr;
  bool training = true;                // a training step (else a prediction batch, forward only)
  std::vector<int> outputs;            // inference: the ops whose outputs the coordinator reads back
  std::vector<std::string> pins;       // per node (or empty): the device the user put it on; "" lets the planner choose
  std::vector<PlannerDevice> devices;  // every device the planner may use (at least one)
  const OpTimes* measured = nullptr;   // measured op times; null: the analytical estimate everywhere
  std::vector<std::vector<LinkCost>> links;  // [from][to], indices into `devices`; empty: transfers are free
  // How much the host-memory devices slow each other down while they
  // compute at once (ScheduleRequest::contention); 0: not at all.
  double contention = 0;
  int64_t batch = 1;  // samples per step (training) or per prediction batch
  // Schedules and micro-batch counts to choose from. Counts empty:
  // default_micro_batch_counts(batch, 16). When no listed count fits a
  // placement's budgets, larger counts are tried too (doubling, then one
  // sample per micro-batch, at most kMaxMicroBatches).
  std::vector<PipelineKind> kinds = {PipelineKind::kNone, PipelineKind::kGpipe, PipelineKind::k1f1b};
  std::vector<int> micro_batch_counts;
  int optimizer_states = 0;  // state tensors per parameter (training): PlanInputs::optimizer_states
  int min_ring_slots = 2;    // slots per cut edge at least (kEdgeSlots), as the coordinator plans its rings
  int runners_up = 5;        // rejected placements to report
  // Search budget: placements scored (each over every count and kind). The
  // heuristic stops improving there; a chain search cut short there is not
  // exact (PlacementPlan::exact says so).
  int max_evaluations = 400;
  // Polled before each placement is scored: true ends the search with the
  // best placement found so far (a stop signal, a time bound). Empty: never.
  std::function<bool()> stop;
};

// The counts up to `most` (and `batch`) whose micro-batches differ in size,
// even or not: 64, 16 gives 1 2 3 4 5 6 7 8 10 11 13 16 (micro-batches of
// at most 64 32 22 16 13 11 10 8 7 6 5 4 samples), so a memory_limit that
// holds 22 samples is not run at 16.
std::vector<int> default_micro_batch_counts(int64_t batch, int most);

}  // namespace devmap
