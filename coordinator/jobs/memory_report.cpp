#include "coordinator/jobs/memory_report.h"

namespace devmap {

void write_memory_plan_event(const JobMemory& memory, MetricsLog& metrics) {
  JsonObject j;
  j.add("event", "memory_plan").add("batch", memory.split.requested).add("micro_batch", memory.split.micro);
  j.add("micro_batches", memory.split.count).add("eval_batch", memory.eval_batch).add("reserve_batch", memory.reserve);
  std::string devices = "[";
  for (const DeviceMemoryPlan& d : memory.plan.devices) {
    JsonObject dj;
    dj.add("device", d.device).add("planned_bytes", static_cast<int64_t>(d.total()));
    dj.add("limit_bytes", static_cast<int64_t>(d.limit));
    // Micro-batches a pipeline schedule keeps in flight here (buffer sets).
    int64_t in_flight = 1;
    if (memory.rounds)
      for (size_t k = 0; k < memory.plan.devices.size(); ++k)
        if (memory.plan.devices[k].device == d.device) in_flight = memory.pipeline.sets.at(k);
    dj.add("in_flight", in_flight);
    devices += (devices.size() > 1 ? "," : "") + dj.str();
  }
  j.add_raw("devices", devices + "]");
  j.add_raw("micro_batch_statistics", micro_batch_statistics_json(memory));
  j.add_raw("coordinator", coordinator_memory_json(memory.coordinator));
  if (memory.auto_choice) j.add_raw("micro_batches_auto", auto_choice_json(memory));
  j.add_raw("shared_memory", shared_memory_json(memory.shared));
  metrics.write(j);
}

void write_device_events(const WorkerGroup& group, const JobMemory& memory, MetricsLog& metrics) {
  for (const WorkerInfo& w : group.workers()) {
    const DeviceMemoryPlan* planned = memory.plan.find(w.device);
    JsonObject j;
    j.add("event", "device").add("device", w.device).add("pid", static_cast<int64_t>(w.pid));
    j.add("peak_bytes", static_cast<int64_t>(w.memory_peak_bytes));
    j.add("planned_bytes", static_cast<int64_t>(planned ? planned->total() : 0));
    j.add("limit_bytes", static_cast<int64_t>(w.memory_limit_bytes));
    j.add("vm_hwm_bytes", static_cast<int64_t>(w.vm_hwm_bytes));
    j.add("transport_bytes_copied", static_cast<int64_t>(w.transport_bytes_copied));
    j.add("tensors_sent", static_cast<int64_t>(w.handoffs)).add("bytes_sent", static_cast<int64_t>(w.bytes_handed));
    metrics.write(j);
  }
}

}  // namespace devmap
