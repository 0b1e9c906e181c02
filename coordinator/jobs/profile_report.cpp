#include "coordinator/jobs/profile_report.h"

#include <algorithm>
#include <cstdio>

#include "core/exec/profile.h"

namespace devmap {

void report_profile(const std::vector<WorkerInfo>& workers, const DeviceBusy& busy, std::ostream& table,
                    MetricsLog& metrics) {
  for (const WorkerInfo& w : workers) {
    std::vector<wire::ProfileRecord> rows = w.profile;
    if (rows.empty()) continue;
    double total = 0;
    for (const auto& r : rows) total += r.seconds;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    // The ceiling: the worker's measured per-core FP32 peak times its threads.
    const double peak = w.peak_flops_per_core * w.threads * 1e-9;
    table << "profile of " << w.device << " (" << static_cast<int>(total * 1e3) << " ms in ops";
    char line[200];
    if (peak > 0) {
      std::snprintf(line, sizeof line, "; FP32 peak %.1f GFLOP/s = %.1f per core (FMA probe) x %u threads", peak,
                    w.peak_flops_per_core * 1e-9, w.threads);
      table << line;
    }
    table << "):\n";
    std::snprintf(line, sizeof line, "  %-24s %-10s %8s %11s %7s %9s %6s  %s\n", "op", "direction", "calls", "total ms",
                  "share", "GFLOP/s", "peak", "kernel");
    table << line;
    for (const auto& r : rows) {
      std::string name = wire::read_name(r.name), kernel = wire::read_name(r.kernel);
      const char* dir = profile_direction_name(static_cast<ProfileDirection>(r.direction));
      double gflops = r.seconds > 0 && r.flops > 0 ? r.flops / r.seconds * 1e-9 : 0.0;
      char of_peak[16] = "-";
      if (peak > 0 && gflops > 0) std::snprintf(of_peak, sizeof of_peak, "%.0f%%", 100.0 * gflops / peak);
      std::snprintf(line, sizeof line, "  %-24s %-10s %8llu %11.1f %6.1f%% %9.1f %6s  %s\n", name.c_str(), dir,
                    static_cast<unsigned long long>(r.calls), r.seconds * 1e3,
                    total > 0 ? 100.0 * r.seconds / total : 0.0, gflops, of_peak, kernel.c_str());
      table << line;
      JsonObject j;
      j.add("event", "profile").add("device", w.device).add("op", name).add("direction", dir);
      j.add("calls", static_cast<int64_t>(r.calls)).add("total_ms", r.seconds * 1e3).add("gflop_per_s", gflops);
      if (!kernel.empty()) j.add("kernel", kernel);
      if (peak > 0) j.add("peak_gflop_per_s", peak).add("peak_fraction", gflops / peak);
      metrics.write(j);
    }
  }
  char head[120];
  std::snprintf(head, sizeof head, "device busy and idle (bubble) over %.3f s of step time:\n", busy.wall_seconds());
  table << head << busy_table(busy);
  for (const DeviceBusy::Share& s : busy.shares()) {
    JsonObject j;
    j.add("event", "profile_busy").add("device", s.device).add("busy_s", s.busy_seconds);
    j.add("idle_s", std::max(0.0, busy.wall_seconds() - s.busy_seconds)).add("step_time_s", busy.wall_seconds());
    j.add("busy_fraction", s.fraction).add("idle_fraction", 1.0 - s.fraction);
    metrics.write(j);
  }
}

}  // namespace devmap
