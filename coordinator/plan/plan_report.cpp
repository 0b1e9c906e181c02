#include "coordinator/plan/plan_report.h"

#include <cstdio>
#include <ostream>

#include "coordinator/plan/split_report.h"
#include "coordinator/util/json_writer.h"
#include "core/base/format_bytes.h"

namespace devmap {
namespace {

std::string cell(uint64_t bytes) {
  return bytes ? format_bytes(bytes) : "-";
}

void row(std::ostream& os, const std::string& name, const std::vector<std::string>& cells) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "  %-30s", name.c_str());
  os << buf;
  for (const std::string& c : cells) {
    std::snprintf(buf, sizeof buf, " %12s", c.c_str());
    os << buf;
  }
  os << "\n";
}

std::string batch_line(const JobMemory& m) {
  std::string s = "batch " + std::to_string(m.split.requested);
  if (m.split.count > 1) s += ", run as " + split_phrase(m.split.requested, m.split.micro);
  if (m.eval_batch > 0) s += "; evaluation in batches of " + std::to_string(m.eval_batch);
  s += "; workers allocate for " + std::to_string(m.reserve) + " samples";
  if (m.rounds) s += std::string("; pipeline ") + pipeline_kind_name(m.pipeline.kind);
  return s;
}

// The schedule of a full step, its predicted time against lock-step, and
// what each device holds in flight.
void print_pipeline(const JobMemory& m, const Graph& graph, const Partition& partition, std::ostream& os) {
  const PipelinePlan& p = m.pipeline;
  const int count = static_cast<int>(std::min<int64_t>(m.split.count, p.micro_batches));
  const bool training = !p.by_count.empty();
  const PipelineSchedule& s = p.schedule(count, training);
  os << "\npipeline " << pipeline_kind_name(p.kind) << ", " << count << " micro-batches of " << m.split.micro
     << " per step (F: forward, B: backward, of micro-batch N; .S: segment S of a device with several stages):\n"
     << describe_schedule(s, partition);
  // The lock-step schedule of the same micro-batches, by the same costs.
  const PipelinePlan lockstep = plan_pipeline(graph, partition, training, PipelineKind::kNone, count, 1);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", s.makespan / lockstep.schedule(count, training).makespan);
  os << "  predicted step time (from the ops' FLOPs, transfers free): " << ratio
     << "x of lock-step with the same micro-batches\n";
  for (size_t d = 0; d < partition.devices.size(); ++d) {
    char busy[32];
    std::snprintf(busy, sizeof busy, "%.0f%%", 100 * s.busy[d] / s.makespan);
    os << "  " << partition.devices[d] << ": up to " << p.sets.at(d) << " micro-batches in flight, busy " << busy
       << " of the step\n";
  }
}

// What the device keeps across the passes, what its buffers save by
// sharing, and what it recomputes: the bytes each saves, the time each
// costs.
void print_memory_levers(const DeviceMemoryPlan& d, const std::vector<RecomputePick>* recomputes, const Graph& graph,
                         std::ostream& os) {
  if (d.kept_buffers > 0)
    os << "  kept for the backward pass: " << d.kept_buffers << " activation" << (d.kept_buffers == 1 ? "" : "s")
       << ", " << format_bytes(d.kept_activations) << " alive from their forward to their backward\n";
  const uint64_t unshared = d.unshared_tensors();
  if (unshared > d.arena)
    os << "  shared by lifetime: saves " << format_bytes(unshared - d.arena) << " (" << format_bytes(unshared)
       << " of buffers in a " << format_bytes(d.arena) << " arena), costs no time\n";
  int count = 0;
  int64_t saved = 0;
  double seconds = 0;
  std::string names;
  for (const RecomputePick& p : recomputes ? *recomputes : std::vector<RecomputePick>{}) {
    if (p.device != d.device) continue;
    ++count;
    saved += p.saved_bytes;
    seconds += p.seconds;
    names += (names.empty() ? "" : ", ") + graph.node(p.node).name;
  }
  if (count == 0) return;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.2f ms", seconds * 1e3);
  os << "  recomputed: " << count << " op" << (count == 1 ? "" : "s") << " (" << names << "): "
     << (saved >= 0 ? "saves " + format_bytes(static_cast<uint64_t>(saved))
                    : "costs " + format_bytes(static_cast<uint64_t>(-saved)) + " more")
     << ", adds " << ms << " a step\n";
}

}  // namespace

void print_memory_plan(const PlanReportInfo& info, const JobMemory& m, const Graph& graph, std::ostream& os) {
  os << "memory plan of " << info.config_path << " (" << info.job << "): " << batch_line(m) << "\n";
  for (const std::string& d : m.decisions) os << "  " << d << "\n";
  for (const std::string& d : m.micro_batch_statistics) os << "  " << d << "\n";
  for (const std::string& line : describe_auto_choice(m, info.config_path)) os << "  " << line << "\n";
  for (const DeviceMemoryPlan& d : m.plan.devices) {
    os << "\n"
       << d.device << ": " << format_bytes(d.total()) << " planned, memory_limit "
       << (d.limit ? format_bytes(d.limit) : std::string("none")) << "\n";
    row(os, "op", {"params", "grads", "opt state", "activations", "act grads", "staging", "workspace"});
    for (const OpMemory& o : d.ops)
      row(os, o.op + " (" + graph.node(o.node).op() + ")",
          {cell(o.params), cell(o.grads), cell(o.optimizer_state), cell(o.activations), cell(o.activation_grads),
           cell(o.staging), cell(o.workspace)});
    row(os, "device total",
        {cell(d.params), cell(d.grads), cell(d.optimizer_state), cell(d.activations), cell(d.activation_grads),
         cell(d.staging), cell(d.workspace)});
    os << "  tensor arena (buffers share memory by lifetime): " << cell(d.arena) << " planned, "
       << cell(d.unshared_tensors()) << " unshared, lower bound " << cell(d.arena_lower_bound)
       << " (the most alive at once)\n";
    print_memory_levers(d, info.recomputes, graph, os);
    os << "  (one workspace buffer, as large as the largest op's: " << cell(d.workspace) << ")\n";
    os << "  transport slots it writes: " << cell(d.transport) << "\n";
    if (d.library) os << "  cuBLAS workspace, fixed: " << cell(d.library) << "\n";
    if (d.offload_staging) {
      os << "  offload: parameters, gradients and optimizer state in host memory (outside the limit): "
         << cell(d.offloaded) << "\n";
      for (const OpMemory& o : d.ops)
        if (o.offloaded) os << "    " << o.op << ": " << cell(o.offloaded) << "\n";
      os << "  offload staging pool on the device (the two largest ops' shares): " << cell(d.offload_staging) << "\n";
    }
    os << "  total: " << format_bytes(d.total());
    if (d.limit) os << " of " << format_bytes(d.limit) << (d.fits() ? "" : "  DOES NOT FIT");
    os << "\n";
  }
  if (m.rounds && info.partition) print_pipeline(m, graph, *info.partition, os);
  const CoordinatorMemory& coord = m.coordinator;
  os << "\ncoordinator: " << format_bytes(coord.total()) << " planned (" << coord.parts() << "), memory_limit "
     << (coord.limit ? format_bytes(coord.limit) : std::string("none")) << "\n";
  const SharedMemoryPlan& shm = m.shared;
  const int64_t shm_free = shared_memory_free();
  os << "shared memory: " << format_bytes(shm.total()) << " planned (" << shm.parts() << "), shared_memory_limit "
     << (shm.limit ? format_bytes(shm.limit) : std::string("none"));
  if (shm_free >= 0)
    os << ", " << kSharedMemoryDir << " has " << format_bytes(static_cast<uint64_t>(shm_free)) << " free"
       << (shm.total() > static_cast<uint64_t>(shm_free) ? "  DOES NOT FIT" : "");
  os << "\n";
  os << "\ncut edges (per " << (m.split.count > 1 ? "micro-batch" : "batch") << " of " << m.reserve << "):\n";
  if (m.plan.edges.empty()) os << "  none: every op runs on one device\n";
  for (const EdgeMemory& e : m.plan.edges) {
    std::string to;
    for (const std::string& c : e.consumers) to += (to.empty() ? "" : ", ") + c;
    os << "  " << e.tensor << (e.backward ? " (gradient)" : "") << " " << e.shape.to_string() << ": " << e.producer
       << " -> " << to << ", " << e.bytes << " bytes (" << format_bytes(e.bytes) << "), slot ring "
       << format_bytes(e.ring_bytes) << "\n";
  }
  print_split_parts(split_parts(graph, m.reserve), m.reserve, m.plan.training, os);
}

std::string memory_plan_json(const PlanReportInfo& info, const JobMemory& m, const Graph& graph) {
  auto i64 = [](uint64_t v) { return static_cast<int64_t>(v); };
  JsonObject j;
  j.add("config", info.config_path).add("job", info.job).add("batch", m.split.requested);
  j.add("micro_batch", m.split.micro).add("micro_batches", m.split.count).add("eval_batch", m.eval_batch);
  j.add("reserve_batch", m.reserve);
  std::string decisions = "[";
  for (const std::string& d : m.decisions) decisions += (decisions.size() > 1 ? "," : "") + JsonObject::quote(d);
  j.add_raw("decisions", decisions + "]");
  j.add_raw("micro_batch_statistics", micro_batch_statistics_json(m));
  j.add_raw("micro_batches_auto", auto_choice_json(m));
  std::string devices = "[";
  for (const DeviceMemoryPlan& d : m.plan.devices) {
    JsonObject dj;
    dj.add("device", d.device).add("limit_bytes", i64(d.limit)).add("total_bytes", i64(d.total()));
    dj.add("fits", d.fits()).add("params_bytes", i64(d.params)).add("grads_bytes", i64(d.grads));
    dj.add("optimizer_state_bytes", i64(d.optimizer_state)).add("activations_bytes", i64(d.activations));
    dj.add("activation_grads_bytes", i64(d.activation_grads)).add("staging_bytes", i64(d.staging));
    dj.add("arena_bytes", i64(d.arena)).add("arena_unshared_bytes", i64(d.unshared_tensors()));
    dj.add("arena_lower_bound_bytes", i64(d.arena_lower_bound));
    dj.add("kept_activations_bytes", i64(d.kept_activations)).add("kept_activations", d.kept_buffers);
    dj.add("workspace_bytes", i64(d.workspace)).add("transport_bytes", i64(d.transport));
    dj.add("library_bytes", i64(d.library));
    dj.add("offload_staging_bytes", i64(d.offload_staging)).add("offloaded_host_bytes", i64(d.offloaded));
    std::string ops = "[";
    for (const OpMemory& o : d.ops) {
      JsonObject oj;
      oj.add("op", o.op).add("type", graph.node(o.node).op()).add("params_bytes", i64(o.params));
      oj.add("grads_bytes", i64(o.grads)).add("optimizer_state_bytes", i64(o.optimizer_state));
      oj.add("activations_bytes", i64(o.activations)).add("activation_grads_bytes", i64(o.activation_grads));
      oj.add("staging_bytes", i64(o.staging)).add("workspace_bytes", i64(o.workspace));
      oj.add("offloaded_host_bytes", i64(o.offloaded));
      ops += (ops.size() > 1 ? "," : "") + oj.str();
    }
    dj.add_raw("ops", ops + "]");
    devices += (devices.size() > 1 ? "," : "") + dj.str();
  }
  j.add_raw("devices", devices + "]");
  j.add_raw("coordinator", coordinator_memory_json(m.coordinator));
  j.add_raw("shared_memory", shared_memory_json(m.shared));
  std::string edges = "[";
  for (const EdgeMemory& e : m.plan.edges) {
    JsonObject ej;
    ej.add("tensor", e.tensor).add("backward", e.backward).add("producer", e.producer);
    std::string cs = "[";
    for (const std::string& c : e.consumers) cs += (cs.size() > 1 ? "," : "") + JsonObject::quote(c);
    ej.add_raw("consumers", cs + "]").add("shape", e.shape.to_string());
    ej.add("bytes", i64(e.bytes)).add("slot_ring_bytes", i64(e.ring_bytes));
    edges += (edges.size() > 1 ? "," : "") + ej.str();
  }
  j.add_raw("cut_edges", edges + "]");
  j.add_raw("split_ops", split_parts_json(split_parts(graph, m.reserve)));
  return j.str();
}

}  // namespace devmap
