#include "coordinator/run/session.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "coordinator/config/worker_program.h"
#include "coordinator/plan/round_trips_report.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/plan/step_time_bound.h"
#include "coordinator/run/host_stages.h"
#include "coordinator/run/stale_runs.h"
#include "coordinator/util/signals.h"
#include "core/base/format_bytes.h"
#include "transport/edge_plan.h"
#include "transport/run_names.h"

namespace devmap {

void check_devices(const Config& config, const Partition& partition, const HostStages* hosts) {
  int threads = 0;
  for (const std::string& name : partition.devices) {
    if (hosts && !hosts->local(name)) continue;
    const DeviceSpec* d = config.find_device(name);
    if (d->kind == DeviceKind::kCpu) threads += d->threads;
  }
  unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && threads > static_cast<int>(cores))
    std::cerr << "devmap: warning: the workers use " << threads << " threads in total on a machine with " << cores
              << " cores; they will compete for them\n";
}

void log_placement(const Config& config, const Partition& partition, int64_t batch, std::ostream& os) {
  const Graph& g = config.graph;
  os << "placement:\n";
  for (const Node& n : g.nodes()) {
    if (n.schema->fed_by_coordinator()) {
      std::string readers;
      for (const DeviceProgram& p : partition.programs)
        if (p.uses_tensor[static_cast<size_t>(g.find(n.name))]) readers += (readers.empty() ? "" : ", ") + p.device;
      os << "  " << n.name << " (" << n.op() << "): fed by the coordinator, read in place by "
         << (readers.empty() ? "no device" : readers) << "\n";
    } else {
      size_t i = static_cast<size_t>(g.find(n.name));
      std::string why = i < config.placement_reason.size() ? config.placement_reason[i] : "";
      os << "  " << n.name << " (" << n.op() << "): " << n.device << (why.empty() ? "" : "  [" + why + "]") << "\n";
    }
  }
  os << "cut edges (batch " << batch << "):\n";
  if (partition.edges.empty()) os << "  none: every op runs on one device\n";
  std::map<std::pair<std::string, std::string>, int64_t> totals;
  for (const Edge& e : partition.edges) {
    std::string to;
    for (const std::string& c : e.consumers) {
      to += (to.empty() ? "" : ", ") + c;
      totals[{e.producer, c}] += e.bytes(batch);
    }
    os << "  " << e.name << (e.backward ? " (gradient)" : "") << " " << e.per_sample.with_batch(batch).to_string()
       << ": " << e.producer << " -> " << to << ", " << e.bytes(batch) << " bytes ("
       << format_bytes(static_cast<uint64_t>(e.bytes(batch))) << ") per step\n";
  }
  if (!totals.empty()) os << "bytes crossing per step:\n";
  for (const auto& [pair, bytes] : totals)
    os << "  " << pair.first << " -> " << pair.second << ": " << bytes << " bytes ("
       << format_bytes(static_cast<uint64_t>(bytes)) << ")\n";
}

void warn_round_trips(const Config& config, const Session& session, int64_t batch, std::ostream& os) {
  const JobPlan& plan = session.plan();
  print_round_trips(find_round_trips(plan.graph, plan.program, config.placed_by_user()), plan.graph, batch,
                    "devmap: warning: ", os);
}

InputLayout Session::checked_input_layout(const JobPlan& plan, const std::string& config_path) {
  check_shared_memory(plan.memory.shared, config_path);
  return InputLayout::for_graph(plan.graph, plan.memory.reserve, plan.memory.input_slots());
}

Session::Session(const Config& config, const RunOptions& options, Graph graph, SessionJob job)
    : run_(StaleRuns::kRemoveFirst),
      plan_(config, options, std::move(graph), job),
      layout_(checked_input_layout(plan_, config.path)),
      output_layout_(
          InputLayout::for_nodes(plan_.graph, job.outputs, plan_.memory.reserve, plan_.memory.input_slots())),
      input_(ShmSegment::create(run_.segment_name("input"), layout_.total_bytes())) {
  const int64_t max_batch = plan_.memory.reserve;
  const HostStages* hosts = job.hosts;
  auto here = [hosts](const std::string& device) { return !hosts || hosts->local(device); };
  check_devices(config, plan_.partition, hosts);
  if (!job.outputs.empty())
    output_ =
        std::make_unique<ShmSegment>(ShmSegment::create(run_.segment_name("output"), output_layout_.total_bytes()));
  std::string prefix = run_.segment_prefix();
  // The rings of the edges that touch this host's devices (every edge on one host).
  const std::vector<ChannelEdge> edges =
      channel_edges(plan_.partition, prefix, max_batch, "",
                    plan_.memory.rounds ? plan_.memory.pipeline.edge_slots : std::vector<int>{});
  for (const ChannelEdge& e : edges) {
    bool touches = here(e.producer);
    for (const std::string& c : e.consumers) touches = touches || here(c);
    if (touches) edge_segments_.push_back(ShmSegment::create(e.segment, e.ring_bytes()));
  }
  if (hosts) relay_ = hosts->relay(edges, data_endpoints(plan_.partition, run_.directory()));

  std::vector<WorkerLaunch> launches;
  for (const std::string& name : plan_.partition.devices) {
    if (!here(name)) continue;
    const DeviceSpec* d = config.find_device(name);
    WorkerLaunch l;
    l.program = find_worker_program(options, d->kind);
    l.plan.device = name;
    l.plan.threads = d->threads;
    l.plan.affinity = d->affinity;
    l.plan.seed = config.train.seed;
    l.plan.gradient_chunk = config.train.gradient_chunk;
    l.plan.training = job.training;
    l.plan.profile = options.profile;
    l.plan.optimizer = config.train.optimizer;
    l.plan.max_batch = max_batch;
    if (plan_.memory.rounds) {
      l.plan.pipeline = plan_.memory.pipeline.kind;
      l.plan.micro_batches = plan_.memory.pipeline.micro_batches;
    }
    l.plan.memory_limit = d->memory_limit > 0 ? static_cast<uint64_t>(d->memory_limit) : 0;
    l.plan.offload = d->offload;
    l.plan.graph = plan_.graph;
    l.plan.outputs = job.outputs;
    if (output_) {
      l.plan.output_segment = output_->name();
      l.plan.output_layout = output_layout_;
    }
    l.plan.input_segment = input_.name();
    l.plan.layout = layout_;
    l.plan.run_prefix = prefix;
    l.plan.run_dir = run_.directory();
    launches.push_back(std::move(l));
  }
  startup_timeout_ = std::chrono::milliseconds(static_cast<int64_t>(config.faults.startup_timeout * 1000));
  FaultPolicy policy;
  policy.step_timeout = std::chrono::milliseconds(static_cast<int64_t>(config.faults.step_timeout * 1000));
  policy.heartbeat_timeout = std::chrono::milliseconds(static_cast<int64_t>(config.faults.heartbeat_timeout * 1000));
  policy.factor = FaultConfig::kPlannedStepFactor;
  policy.planned_seconds = [bound = StepTimeBound(config, plan_.graph, plan_.partition)](int64_t samples, bool train) {
    return bound.seconds(samples, train);
  };
  group_ = std::make_unique<WorkerGroup>(run_, std::move(launches), policy, [] { return abort_requested(); });
  if (hosts) group_->set_hosts(hosts, relay_.get());
}

Session::~Session() = default;

void Session::start() {
  group_->start(startup_timeout_);
}

}  // namespace devmap
