// TraceLog: the run's timeline (--trace FILE), written as Chrome
// trace-event JSON ({"traceEvents": [...]}), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open as it is.
//
// Tracks: process 0 is the coordinator, process i + 1 the worker of
// partition device i (named by its device); each has one thread track.
// Slices ("X"): on a worker, each STEP it ran ("step N", or "evaluation
// round N" / "prediction round N"), and nested in it every op's forward and
// backward per micro-batch, each gradient sum, send, receive (the wait for
// the tensor) and wait for a free slot, and the optimizer update; on the
// coordinator, writing each step's or round's input ("feed") and waiting for
// its results ("wait"). A flow ("s" -> "f", bound to the enclosing slices)
// goes from each send to each receive that takes its tensor. Timestamps are
// microseconds of the steady clock (core/exec/trace.h: one clock for every
// process of the host) since the TraceLog was made.
//
// Which steps: training steps first..last (1-based, inclusive; --trace-steps
// A:B, default all). An evaluation round is traced when the training step
// before it was; a prediction round always.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "coordinator/config/run_options.h"
#include "core/exec/trace.h"
#include "core/graph/graph.h"
#include "core/plan/partition.h"
#include "transport/wire.h"

namespace devmap {

class JsonObject;

struct TraceSteps {
  int64_t first = 1;  // 1-based training steps, inclusive
  int64_t last = std::numeric_limits<int64_t>::max();
};
// Parses "A:B" (1 <= A <= B); throws devmap::Error (kInvalidInput) naming
// `flag` otherwise.
TraceSteps parse_trace_steps(const std::string& flag, const std::string& text);

class TraceLog {
 public:
  TraceLog(std::string path, TraceSteps steps, bool prediction);

  // Names ops, cut edges and worker tracks; call with each new set of
  // workers (the same model and map each time).
  void describe(const Graph& graph, const Partition& partition);
  // Whether `step` (as sent to the workers) is traced.
  bool covers(const wire::Step& step) const;
  // Marks `step` as sent (the rule for evaluation rounds follows the last
  // training step sent); returns covers(step).
  bool sent(const wire::Step& step);

  // A worker's events for `step`.
  void add_worker(const std::string& device, const wire::Step& step, std::vector<TraceEvent> events);
  // A coordinator slice, e.g. ("feed", ...) or ("wait", ...).
  void add_coordinator(const char* what, int64_t start_ns, int64_t end_ns, const wire::Step& step);

  // Calls f(device, step, event) for every worker event of the traced
  // training steps (step 1-based), in the order they arrived.
  void for_each_training_event(
      const std::function<void(const std::string& device, int64_t step, const TraceEvent& event)>& f) const;

  // Writes the file (atomically). Throws devmap::Error when it cannot.
  void write() const;
  const std::string& path() const { return path_; }
  size_t slices() const;

 private:
  struct Chunk {
    int attempt;       // describe() calls so far: a restarted run's workers are new ones
    int pid;           // 0: coordinator, else 1 + device index
    int phase;         // 0 training, 1 evaluation, 2 prediction
    int64_t step;      // 1-based
    std::string what;  // coordinator slices: "feed", "wait"
    std::vector<TraceEvent> events;
  };
  int phase_of(const wire::Step& step) const;

  // write()'s parts, in file order: each track's name and place, every
  // slice (noting where each send and receive is, in `flows`), and an arrow
  // from each send to the receive that takes its tensor.
  struct Flows;
  using Emit = std::function<void(const JsonObject&)>;
  void write_tracks(const Emit& emit) const;
  void write_slices(const Emit& emit, Flows& flows) const;
  void write_flows(const Emit& emit, const Flows& flows) const;
  std::string slice_name(const Chunk& c, const TraceEvent& e) const;

  std::string path_;
  TraceSteps steps_;
  bool prediction_;
  int64_t origin_ns_;
  int64_t last_training_step_ = 0;  // 1-based; 0: none sent yet
  int attempt_ = 0;
  std::vector<std::string> devices_, op_names_, edge_names_;
  std::vector<Chunk> chunks_;
};

}  // namespace devmap

namespace devmap {

// The run's TraceLog from --trace and --trace-steps, or null without
// --trace; throws devmap::Error (kInvalidInput) for --trace-steps alone.
std::unique_ptr<TraceLog> make_trace_log(const RunOptions& options, bool prediction);
// Writes `trace` (when there is one) and says where on `log`.
void finish_trace(const TraceLog* trace, std::ostream& log);

}  // namespace devmap
