// The verdict on a split or micro-batched step: how its step time compares
// with the same model on its fastest single device and with lock-step at
// the full batch, how much the micro-batches slow the ops down, what to
// try, and whether the measurement agrees with the prediction. `coordinator
// plan` prints it before a run and a training run at its end, from the same
// inputs (gather_split_verdict), so the two say the same thing.
//
//   split (1f1b, 4 x 16): 106.3 ms a step measured, 1.31x slower than cpu:0
//   alone with 1 thread (81.1 ms predicted, calibrated)
//     against lock-step at the full batch (1 x 64): 1.09x slower (97.6 ms predicted, calibrated)
//     micro-batches of 16 run the ops at 78% of their speed at 64: conv2 at 61% (calibrated)
//     to try: ...
//     measured 106.3 ms is 47% above the predicted 72.2 ms: ...
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/job_memory.h"
#include "core/graph/graph.h"
#include "core/plan/partition.h"

namespace devmap {

// Measured and predicted differ by more than this share: the verdict says
// so and how to recalibrate.
constexpr double kVerdictMismatch = 0.20;
// An op whose samples/s at the micro-batch is under this share of its
// samples/s at the full batch is named.
constexpr double kVerdictSlowOp = 0.80;

// The model on one device alone, every op there, predicted.
struct SingleDevice {
  std::string device;
  bool gpu = false;
  int threads = 1;             // the threads the prediction is for (a CPU's)
  int configured_threads = 1;  // the device's threads in the config
  double seconds = 0;
  bool calibrated = false;
  int micro_batches = 1;  // > 1 when its memory_limit needs micro-batches
};

// A single device that cannot hold the model at one sample.
struct SingleDeviceNoFit {
  std::string device;
  std::string why;  // "needs 120.0 MiB ... but its memory_limit is 64.0 MiB"
};

// An op's samples/s at the micro-batch over its samples/s at the full batch.
struct OpSpeed {
  std::string op;
  double share = 1;
};

struct SplitVerdictInputs {
  std::string config_path;
  std::string command;  // command_name(), for the hints
  // The run: its devices, schedule ("1f1b", "gpipe", "lock-step") and split.
  std::vector<std::string> devices;
  std::string schedule;
  int micro_batches = 1;
  int64_t micro_batch = 0, batch = 0;
  int split_threads = 0;  // the threads of the run's CPU devices together
  double predicted = 0;
  bool predicted_calibrated = false;
  std::optional<double> measured;  // the median step of a run
  // The fastest single device that fits (nullopt: none fits, or none runs here).
  std::optional<SingleDevice> alone;
  std::vector<SingleDeviceNoFit> no_fit;
  // The same placement, lock-step at the full batch (nullopt: the run is that).
  std::optional<double> lockstep;
  bool lockstep_calibrated = false;
  int lockstep_micro_batches = 1;  // > 1 when the budgets need micro-batches
  // With micro-batches: every op at the micro-batch against the full batch,
  // the ops together (op_share), and the ops under kVerdictSlowOp, slowest
  // first; calibrated when every time was measured.
  double op_share = 1;
  std::vector<OpSpeed> slow_ops;
  bool op_speeds_calibrated = false;
};

// Whether a run gets a verdict: a partition over more than one device, or
// a step run as more than one micro-batch.
bool wants_split_verdict(const Partition& partition, const JobMemory& memory);

// The verdict's lines (no newlines; the first the headline, the others
// indented by two spaces). A pure function of `in`.
std::vector<std::string> split_verdict_lines(const SplitVerdictInputs& in);

// The inputs for a training run (or its plan) of `graph` as `partition` and
// `memory` plan it: the prediction from the calibration cache
// (predict_run_step), the model with every op on each declared device
// whose worker runs here (at the threads of the run's CPU devices together
// where the cache has that device at those threads, else its own), the
// same placement lock-step at the full batch, and the ops' speeds at the
// micro-batch.
struct VerdictRun {
  const Config& config;
  const RunOptions& options;
  const Graph& graph;  // as placed
  const Partition& partition;
  const JobMemory& memory;
  std::optional<double> measured;  // a run's median step (nullopt: a plan)
};
SplitVerdictInputs gather_split_verdict(const VerdictRun& run);

// The verdict's lines, each ending in a newline, for a run that wants one
// (wants_split_verdict) on this machine alone (no data-parallel replicas,
// no other host); else "". A verdict that cannot be gathered (a worker
// program that cannot describe itself) is "", with the reason on `log`.
std::string split_verdict_text(const VerdictRun& run, std::ostream& log);

}  // namespace devmap
