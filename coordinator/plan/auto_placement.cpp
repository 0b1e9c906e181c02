#include "coordinator/plan/auto_placement.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <unordered_map>

#include "coordinator/config/model.h"
#include "coordinator/config/placement.h"
#include "coordinator/plan/auto_levers.h"
#include "coordinator/plan/calibration_cache.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/util/command_name.h"
#include "coordinator/util/json_writer.h"
#include "coordinator/util/signals.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "core/base/format_number.h"
#include "core/exec/kernel.h"
#include "transport/edge_plan.h"

namespace devmap {
namespace {

constexpr double kCpuBytesPerSecond = 10e9;  // memory bandwidth guesses where nothing was measured
constexpr double kGpuBytesPerSecond = 1e12;
constexpr double kPlacementSeconds = 20;       // the search's time bound
constexpr LinkCost kAssumedPcie{10e-6, 12e9};  // pinned host <-> GPU copies: not calibrated yet
constexpr LinkCost kAssumedHandoff{kEstimatedHandoffLatency, kEstimatedHandoffBytesPerSecond};

// Op times from the calibration cache, by each device's cache key. Each
// op's signature is made once (the planner asks for every op many times).
class CalibratedOpTimes : public OpTimes {
 public:
  CalibratedOpTimes(const Graph& graph, CalibrationCache cache, std::map<std::string, std::string> keys)
      : cache_(std::move(cache)), keys_(std::move(keys)) {
    for (int i = 0; i < graph.size(); ++i) signatures_.emplace(graph.node(i).name, op_signature(graph, i));
  }
  std::optional<double> seconds(const Node& node, const std::string& device, int64_t batch,
                                bool backward) const override {
    auto key = keys_.find(device);
    auto signature = signatures_.find(node.name);
    if (key == keys_.end() || signature == signatures_.end()) return std::nullopt;
    const std::optional<OpSeconds> s = calibrated_op_seconds(cache_, key->second, signature->second, batch);
    if (!s) return std::nullopt;
    return backward ? s->backward : s->forward;
  }

 private:
  CalibrationCache cache_;
  std::map<std::string, std::string> keys_;
  std::unordered_map<std::string, std::string> signatures_;  // by op name
};

std::string choice_text(const ScheduleChoice& c) {
  return std::to_string(c.micro_batches) + (c.micro_batches == 1 ? " micro-batch" : " micro-batches") + " of " +
         std::to_string(c.micro_batch) + ", " + pipeline_kind_name(c.kind);
}

}  // namespace

bool has_auto_placement(const Config& config) {
  for (const Node& n : config.graph.nodes())
    if (n.device == kAutoDevice) return true;
  return false;
}

namespace {

// One run of the placement planner over `config` as it is (a prediction
// gets its argmax op added to the graph).
struct Attempt {
  PlacementResult result;
  std::map<std::string, SplitDeviceRate> rates;  // each device's speed and slowest link, as the planner had them
};

Attempt attempt_placement(Config& config, const RunOptions& options, int64_t batch) {
  Graph& graph = config.graph;
  const bool training = config.job != Job::kPredict;
  PlacementRequest r;
  r.graph = &graph;
  r.training = training;
  if (!training) r.outputs.push_back(prediction_node(graph, config.path));
  for (const Node& n : graph.nodes())
    r.pins.push_back(n.schema->fed_by_coordinator() || n.device == kAutoDevice ? "" : n.device);
  // Devices, their rates and the links between them: measured where the
  // calibration cache has them.
  const CalibrationCache cache = CalibrationCache::load(calibration_path(options));
  // A device whose worker cannot run here (a GPU without a usable GPU)
  // gets no op the user did not pin there.
  std::map<std::string, std::string> keys;
  std::vector<const DeviceSpec*> usable;
  for (const DeviceSpec& d : config.devices) {
    std::string unusable;
    if (auto key = usable_device_key(config, options, d.name, unusable)) keys[d.name] = *key;
    bool pinned = false;
    for (const std::string& pin : r.pins) pinned = pinned || pin == d.name;
    if (!unusable.empty() && !pinned) {
      std::cerr << "devmap: auto placement leaves out " << d.name << ": " << unusable << "\n";
      continue;
    }
    usable.push_back(&d);
  }
  const std::string machine = key_hash(machine_key_text());
  for (const DeviceSpec* d : usable) {
    const bool gpu = d->kind == DeviceKind::kGpu;
    PlannerDevice p;
    p.name = d->name;
    p.host_memory = !gpu;
    p.offload = d->offload;
    p.memory_limit = static_cast<uint64_t>(d->memory_limit);
    p.threads = d->threads;
    p.rates.flops_per_s = device_flops_per_s(cache, keys, options, *d);
    p.rates.bytes_per_s = gpu ? kGpuBytesPerSecond : kCpuBytesPerSecond;
    p.copy_bytes_per_s = gpu ? kGpuOffloadCopyBytesPerSecond : kCpuOffloadCopyBytesPerSecond;
    if (auto k = keys.find(d->name); k != keys.end()) {
      if (auto update = cache.optimizer(k->second, optimizer_kind_name(config.train.optimizer.kind)))
        p.update_seconds_per_param = *update;
      if (auto overhead = cache.step_overhead(k->second)) p.step_overhead_s = *overhead;
    }
    r.devices.push_back(p);
  }
  if (const std::optional<std::string> ck = contention_key(config, keys))
    r.contention = cache.contention(*ck).value_or(0);
  r.links.assign(usable.size(), std::vector<LinkCost>(usable.size()));
  for (size_t a = 0; a < usable.size(); ++a)
    for (size_t b = 0; b < usable.size(); ++b) {
      if (a == b) continue;
      const bool gpu = usable[a]->kind == DeviceKind::kGpu || usable[b]->kind == DeviceKind::kGpu;
      r.links[a][b] = gpu ? kAssumedPcie : cache.link(machine, "cpu", "cpu").value_or(kAssumedHandoff);
    }
  CalibratedOpTimes measured(graph, cache, keys);
  r.measured = &measured;
  r.batch = batch > 0  ? batch
            : training ? config.train.batch_size
                       : (config.predict.batch > 0 ? config.predict.batch : config.train.eval_batch_size);
  // What the user set is kept: a micro-batch count (1 included), a schedule;
  // replicas run lock-step micro-batches only.
  if (config.train.micro_batches > 1 || (config.train.micro_batches_given && !config.train.auto_micro_batches()))
    r.micro_batch_counts = {static_cast<int>(config.train.micro_batches)};
  if (config.train.schedule_given) r.kinds = {config.train.pipeline};
  if (config.data_parallel.replicas > 1) r.kinds = {PipelineKind::kNone};
  r.optimizer_states = training ? optimizer_state_count(config.train.optimizer.kind) : 0;
  r.min_ring_slots = static_cast<int>(kEdgeSlots);
  // The search stops at a stop signal, and with the best plan found by
  // kPlacementSeconds; past a second it says what it does.
  const auto started = std::chrono::steady_clock::now();
  bool said = false, timed_out = false;
  r.stop = [&] {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (s > 1 && !said) {
      std::cerr << "devmap: placing " << graph.size() << " ops on " << r.devices.size()
                << " devices (auto; Ctrl-C stops it)...\n";
      said = true;
    }
    timed_out = timed_out || s > kPlacementSeconds;
    return timed_out || interrupted();
  };
  Attempt attempt{plan_placement(r), {}};
  for (size_t a = 0; a < r.devices.size(); ++a) {
    SplitDeviceRate& rate = attempt.rates[r.devices[a].name];
    rate.flops_per_s = r.devices[a].rates.flops_per_s;
    for (size_t b = 0; b < r.devices.size(); ++b)
      for (const LinkCost& link : {r.links[a][b], r.links[b][a]})
        if (a != b && link.bytes_per_s > 0 && (rate.link_bytes_per_s == 0 || link.bytes_per_s < rate.link_bytes_per_s))
          rate.link_bytes_per_s = link.bytes_per_s;
  }
  PlacementResult& result = attempt.result;
  if (interrupted()) throw_runtime("placement interrupted");
  if (said || timed_out) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", s);
    std::cerr << "devmap: placement searched " << result.plan.evaluations << " placements in " << seconds << " s"
              << (timed_out ? " and stopped at its time bound with the best found" : "") << "\n";
  }
  return attempt;
}

// The plan written into the config as if the user had placed it.
void write_placement(Config& config, const PlacementPlan& plan) {
  Graph& graph = config.graph;
  for (int i = 0; i < graph.size(); ++i) {
    Node& n = graph.node(i);
    const std::string& chosen = plan.placement[static_cast<size_t>(i)];
    if (n.device != kAutoDevice) continue;
    // Fed ops (inputs, labels) run on no device: the first declared stands in.
    n.device = chosen.empty() ? config.devices.front().name : chosen;
    if (static_cast<size_t>(i) < config.placement_reason.size())
      config.placement_reason[static_cast<size_t>(i)] = "auto (the placement planner)";
  }
  check_placed_ops_supported(graph, config.devices, config.placement_reason);
  config.train.micro_batches = plan.choice.micro_batches;
  config.train.pipeline = plan.choice.kind;
}

}  // namespace

std::optional<AutoPlan> place_automatically(Config& config, const RunOptions& options, int64_t batch) {
  if (!has_auto_placement(config)) return std::nullopt;
  Attempt first = attempt_placement(config, options, batch);
  AutoPlan out;
  const PlaceVariant place = [&](Config& variant) { return attempt_placement(variant, options, batch).result; };
  auto take = [&](LeverChoice&& levers) {
    for (const std::string& used : levers.used) std::cerr << "devmap: auto: " << used << "\n";
    config = std::move(levers.config);
    out.plan = std::move(levers.plan);
    out.levers = std::move(levers.used);
    out.not_taken = std::move(levers.not_taken);
  };
  if (first.result.fits) {
    out.plan = std::move(first.result.plan);
    if (std::optional<LeverChoice> faster = choose_split_for_speed(config, out.plan, first.rates, place))
      take(std::move(*faster));
  } else {
    out.levers_needed = true;
    take(choose_levers(config, first.result.no_fit, first.rates, place));
  }
  write_placement(config, out.plan);
  return out;
}

void print_auto_placement(const AutoPlan& chosen, const Config& config, std::ostream& os) {
  const PlacementPlan& plan = chosen.plan;
  os << "auto placement (" << (plan.exact ? "the optimum over contiguous placements" : "heuristic") << ", "
     << plan.evaluations << " placements scored): " << describe_placement(config.graph, plan.placement) << "\n";
  os << "  predicted step " << format_ms(plan.choice.step_seconds) << ": " << choice_text(plan.choice) << "\n";
  if (!chosen.levers.empty())
    os << (chosen.levers_needed ? "  levers, since nothing fits without them:\n"
                                : "  levers, since they are predicted faster:\n");
  for (const std::string& l : chosen.levers) os << "    " << l << "\n";
  if (!chosen.not_taken.empty()) os << "  levers not taken:\n";
  for (const std::string& l : chosen.not_taken) os << "    " << l << "\n";
  for (const DeviceForecast& d : plan.devices)
    os << "  " << d.device << ": busy " << format_ms(d.busy_seconds) << ", idle " << format_ms(d.idle_seconds)
       << "; memory " << format_bytes(d.memory_bytes) << " of "
       << (d.memory_limit ? format_bytes(d.memory_limit) : "no limit") << "\n";
  os << "  crossing devices per step: " << format_bytes(plan.bytes_per_step);
  for (size_t i = 0; i < plan.crossings.size(); ++i) {
    const CrossingTensor& c = plan.crossings[i];
    os << (i ? ", " : " (") << c.tensor << " " << c.producer << " -> ";
    for (size_t k = 0; k < c.consumers.size(); ++k) os << (k ? "+" : "") << c.consumers[k];
    os << " " << format_bytes(c.bytes_per_step) << (i + 1 == plan.crossings.size() ? ")" : "");
  }
  os << "\n";
  if (!plan.estimated.empty()) {
    os << "  estimated from FLOPs, not measured:";
    for (size_t i = 0; i < plan.estimated.size() && i < 4; ++i) os << (i ? ", " : " ") << plan.estimated[i];
    if (plan.estimated.size() > 4) os << " and " << plan.estimated.size() - 4 << " more";
    os << " (run `" << command_name() << " calibrate " << config.path << "`)\n";
  }
  if (!plan.runners_up.empty()) os << "  runners-up:\n";
  for (const RejectedPlan& r : plan.runners_up)
    os << "    " << describe_placement(config.graph, r.placement) << " (" << choice_text(r.choice)
       << "): " << r.reason() << "\n";
}

std::string auto_placement_json(const AutoPlan& chosen) {
  const PlacementPlan& plan = chosen.plan;
  JsonObject j;
  std::string placement = "[";
  for (const std::string& d : plan.placement) placement += (placement.size() > 1 ? "," : "") + JsonObject::quote(d);
  j.add_raw("placement", placement + "]");  // per op, in the config's order ("" for inputs)
  j.add("micro_batches", static_cast<int64_t>(plan.choice.micro_batches));
  j.add("micro_batch", plan.choice.micro_batch).add("schedule", pipeline_kind_name(plan.choice.kind));
  j.add("predicted_step_ms", plan.choice.step_seconds * 1e3).add("exact", plan.exact);
  j.add("method", plan.method).add("evaluations", static_cast<int64_t>(plan.evaluations));
  j.add("bytes_per_step", static_cast<int64_t>(plan.bytes_per_step));
  std::string devices = "[";
  for (const DeviceForecast& d : plan.devices) {
    JsonObject dj;
    dj.add("device", d.device).add("busy_ms", d.busy_seconds * 1e3).add("idle_ms", d.idle_seconds * 1e3);
    dj.add("memory_bytes", static_cast<int64_t>(d.memory_bytes))
        .add("limit_bytes", static_cast<int64_t>(d.memory_limit));
    std::string ops = "[";
    for (const std::string& op : d.ops) ops += (ops.size() > 1 ? "," : "") + JsonObject::quote(op);
    dj.add_raw("ops", ops + "]");
    devices += (devices.size() > 1 ? "," : "") + dj.str();
  }
  j.add_raw("devices", devices + "]");
  std::string runners = "[";
  for (const RejectedPlan& r : plan.runners_up) {
    JsonObject rj;
    std::string p = "[";
    for (const std::string& d : r.placement) p += (p.size() > 1 ? "," : "") + JsonObject::quote(d);
    rj.add_raw("placement", p + "]").add("micro_batches", static_cast<int64_t>(r.choice.micro_batches));
    rj.add("schedule", pipeline_kind_name(r.choice.kind)).add("reason", r.reason());
    runners += (runners.size() > 1 ? "," : "") + rj.str();
  }
  j.add_raw("runners_up", runners + "]");
  std::string estimated = "[";
  for (const std::string& e : plan.estimated) estimated += (estimated.size() > 1 ? "," : "") + JsonObject::quote(e);
  j.add_raw("estimated", estimated + "]");
  for (const auto& [key, lines] :
       {std::pair{"levers", &chosen.levers}, std::pair{"levers_not_taken", &chosen.not_taken}}) {
    std::string list = "[";
    for (const std::string& l : *lines) list += (list.size() > 1 ? "," : "") + JsonObject::quote(l);
    j.add_raw(key, list + "]");
  }
  return j.str();
}

}  // namespace devmap
