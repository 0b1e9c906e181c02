// The end of a train or predict run, written once for both jobs: the
// --trace timeline's hook-up to the workers and its file, the metrics
// `done` and `interrupted` events (each names the job in `job`), and the
// summary of a run that ran to its end.
#pragma once

#include <functional>
#include <iostream>
#include <ostream>
#include <string>

#include "coordinator/config/config.h"
#include "coordinator/config/run_options.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/run/session.h"
#include "coordinator/run/worker_group.h"
#include "coordinator/telemetry/metrics_log.h"
#include "coordinator/telemetry/trace_log.h"
#include "coordinator/util/json_writer.h"

namespace devmap {

// What every end of a run writes to, and where.
struct RunEnd {
  Job job;                          // the events' `job`: train or predict
  const RunOptions& options;        // --profile
  MetricsLog& metrics;              // the run's metrics file
  const TraceLog* trace = nullptr;  // --trace, or null
};

// Hooks `trace` (--trace; null: none) to the workers of `session`, once
// they are started: names its tracks and ops, and the workers' events go
// to it from here on. Call with each new set of workers.
void attach_trace(TraceLog* trace, Session& session);

// The job's part of a completed run's end.
struct RunSummary {
  // The `done` event's fields, around those every job writes: `what_ran`
  // after `event` and `job`, `results` after `device_busy`, `estimates`
  // after `coordinator_vm_hwm_bytes`. Each may be empty.
  std::function<void(JsonObject&)> what_ran, results, estimates;
  std::string headline;  // the summary's first lines, before the devices' busy lines
  std::string details;   // the lines after those, before "metrics: FILE"
};

// The end of a run whose every step or batch ran, once its workers are
// shut down: one `device` event per worker (and with --profile the table on
// `out` and its events), the `done` event, the summary on `out`, and the
// trace file (said on `log`). Returns the exit code, 0.
int finish_run(const RunEnd& run, const WorkerGroup& group, const JobMemory& memory, const RunSummary& summary,
               std::ostream& out = std::cout, std::ostream& log = std::cerr);

// The job's part of the end of a run that a signal stopped.
struct RunStop {
  std::function<void(JsonObject&)> where;  // the `interrupted` event's fields after `event`, `job` and `signal`
  std::string notice;                      // said on `log` before the trace file's line
  std::string closing;                     // said on `log` after it
};

// The end of a run that signal `sig` (SIGINT or SIGTERM) stopped, once its
// workers are shut down: the `interrupted` event, the notice, the trace file,
// the closing lines. Returns the exit code, 128 + sig.
int stop_run(const RunEnd& run, int sig, const RunStop& stop, std::ostream& log = std::cerr);

}  // namespace devmap
