#include "coordinator/jobs/run_epilogue.h"

#include "coordinator/jobs/memory_report.h"
#include "coordinator/jobs/profile_report.h"
#include "coordinator/telemetry/device_busy.h"
#include "coordinator/util/signals.h"
#include "core/base/process_stats.h"

namespace devmap {

void attach_trace(TraceLog* trace, Session& session) {
  if (!trace) return;
  trace->describe(session.graph(), session.partition());
  session.workers().set_trace(trace);
}

int finish_run(const RunEnd& run, const WorkerGroup& group, const JobMemory& memory, const RunSummary& summary,
               std::ostream& out, std::ostream& log) {
  run.metrics.begin();
  write_device_events(group, memory, run.metrics);
  if (run.options.profile) report_profile(group.workers(), group.busy(), out, run.metrics);
  JsonObject done;
  done.add("event", "done").add("job", job_name(run.job));
  if (summary.what_ran) summary.what_ran(done);
  add_busy_fields(done, group.busy());
  if (summary.results) summary.results(done);
  done.add("coordinator_vm_hwm_bytes", static_cast<int64_t>(read_vm_hwm_bytes()));
  if (summary.estimates) summary.estimates(done);
  run.metrics.write(done);
  out << summary.headline;
  print_busy(group.busy(), out);
  out << summary.details << "metrics: " << run.metrics.path() << std::endl;
  finish_trace(run.trace, log);
  return 0;
}

int stop_run(const RunEnd& run, int sig, const RunStop& stop, std::ostream& log) {
  run.metrics.begin();
  JsonObject j;
  j.add("event", "interrupted").add("job", job_name(run.job)).add("signal", signal_name(sig));
  if (stop.where) stop.where(j);
  run.metrics.write(j);
  log << stop.notice;
  finish_trace(run.trace, log);
  log << stop.closing;
  return 128 + sig;
}

}  // namespace devmap
