#include "coordinator/plan/recompute_plan.h"

#include <cstdio>
#include <optional>

#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/util/json_writer.h"
#include "core/base/format_bytes.h"
#include "core/plan/partition.h"
#include "core/plan/program.h"

namespace devmap {

std::vector<RecomputePick> plan_recomputes(const Config& config, const RunOptions& options, Graph& graph, bool training,
                                           int64_t batch, const std::vector<int>& external) {
  if (!training) return {};
  bool limited = false;
  for (const DeviceSpec& d : config.devices) limited = limited || d.memory_limit > 0;
  bool pinned = false;
  for (const Node& n : graph.nodes()) pinned = pinned || n.recompute == Node::Recompute::kAlways;
  if (!limited && !pinned) return {};
  std::optional<PlanCosts> costs;  // asked for only when an op's time is
  RecomputeRequest request;
  request.plan = [&](const Graph& g) {
    const Program program = build_training_program(g);
    const Partition partition = partition_program(g, program);
    return plan_memory(plan_inputs(config, g, program, partition, external), batch);
  };
  request.forward_seconds = [&](int node) {
    if (!costs) costs = plan_costs(config, options, graph);
    return costs->costs.op(node, graph.node(node).device, batch).forward;
  };
  request.choose = config.train.recompute_auto;
  return choose_recomputes(graph, request);
}

namespace {

std::string milliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  return buf;
}

std::string names(const std::vector<int>& nodes, const Graph& graph) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ", ") + graph.node(n).name;
  return s;
}

}  // namespace

std::vector<std::string> describe_recomputes(const std::vector<RecomputePick>& picks, const Graph& graph) {
  std::vector<std::string> lines;
  for (const RecomputePick& p : picks) {
    std::string line = p.device + ": recomputes " + graph.node(p.node).name;
    if (!p.with.empty()) line += " (with " + names(p.with, graph) + ")";
    if (p.pinned) line += " (recompute: always)";
    line += p.saved_bytes >= 0 ? ": saves " + format_bytes(static_cast<uint64_t>(p.saved_bytes))
                               : ": costs " + format_bytes(static_cast<uint64_t>(-p.saved_bytes)) + " more";
    line += ", adds " + milliseconds(p.seconds) + " a step";
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string recomputes_json(const std::vector<RecomputePick>& picks, const Graph& graph) {
  std::string s = "[";
  for (const RecomputePick& p : picks) {
    std::string with = "[";
    for (int w : p.with) with += (with.size() > 1 ? "," : "") + JsonObject::quote(graph.node(w).name);
    with += "]";
    JsonObject o;
    o.add("op", graph.node(p.node).name)
        .add_raw("with", with)
        .add("device", p.device)
        .add("pinned", p.pinned)
        .add("saved_bytes", p.saved_bytes)
        .add("seconds", p.seconds);
    s += (s.size() > 1 ? "," : "") + o.str();
  }
  return s + "]";
}

}  // namespace devmap
