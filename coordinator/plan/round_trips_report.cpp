#include "coordinator/plan/round_trips_report.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "coordinator/util/json_writer.h"
#include "core/base/format_bytes.h"

namespace devmap {
namespace {

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

std::string ops_on(const Graph& graph, const std::vector<int>& nodes) {
  std::string out;
  for (int n : nodes) out += (out.empty() ? "" : ", ") + graph.node(n).name;
  return out + " (" + graph.node(nodes.front()).device + ")";
}

std::string moved(int edges, int64_t bytes) {
  if (edges == 0) return "no cut edge would move anything";
  return std::to_string(edges) + " cut edge" + (edges == 1 ? "" : "s") + " would move " +
         format_bytes(static_cast<uint64_t>(bytes));
}

}  // namespace

void print_round_trips(const RoundTrips& trips, const Graph& graph, int64_t batch, const std::string& prefix,
                       std::ostream& os) {
  if (trips.ops.empty()) return;
  // One paragraph per (where they run, where their neighbours run), in node
  // order, for the ops the advice moves: their chains name what crosses.
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, std::vector<const StrandedOp*>> groups;
  for (size_t k : trips.moves) {
    const StrandedOp& op = trips.ops[k];
    const auto key = std::make_pair(op.device, op.neighbours_device);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&op);
  }
  for (const auto& key : order) {
    std::vector<std::string> names;
    for (const StrandedOp* op : groups[key]) names.push_back(graph.node(op->node).name);
    os << prefix << "round trips: " << and_list(names) << (names.size() == 1 ? " runs" : " run") << " on " << key.first
       << ", but every op " << (names.size() == 1 ? "it exchanges" : "they exchange") << " tensors with runs on "
       << key.second << "\n";
    for (const StrandedOp* op : groups[key]) {
      os << prefix << "  " << ops_on(graph, op->inputs) << " -> " << graph.node(op->node).name << " (" << op->device
         << ")";
      if (!op->consumers.empty()) os << " -> " << ops_on(graph, op->consumers);
      os << "\n";
    }
  }
  // The advice: the moves, by where they go.
  std::vector<std::string> moved_names, targets;
  std::map<std::string, std::vector<std::string>> by_target;
  for (size_t k : trips.moves) {
    const StrandedOp& op = trips.ops[k];
    moved_names.push_back(graph.node(op.node).name);
    if (!by_target.count(op.neighbours_device)) targets.push_back(op.neighbours_device);
    by_target[op.neighbours_device].push_back(graph.node(op.node).name);
  }
  const int64_t now = trips.bytes_per_sample * batch, after = trips.bytes_per_sample_after * batch;
  os << prefix << "  " << trips.edges << " cut edge" << (trips.edges == 1 ? "" : "s") << " move "
     << format_bytes(static_cast<uint64_t>(now)) << " a step; with " << and_list(moved_names) << " placed beside "
     << (moved_names.size() == 1 ? "its" : "their") << " neighbours, " << moved(trips.edges_after, after) << "\n";
  for (const std::string& target : targets) {
    const std::vector<std::string>& names = by_target[target];
    os << prefix << "  to place " << and_list(names) << " on " << target << ": give "
       << (names.size() == 1 ? "it" : "each") << " `device: " << target << "`, or add "
       << (names.size() == 1 ? "it" : "them") << " to a device_map.place rule for " << target << "\n";
  }
}

std::string round_trips_json(const RoundTrips& trips, const Graph& graph, int64_t batch) {
  auto names = [&](const std::vector<int>& nodes) {
    std::string out = "[";
    for (int n : nodes) out += (out.size() > 1 ? "," : "") + JsonObject::quote(graph.node(n).name);
    return out + "]";
  };
  std::string ops = "[";
  for (size_t k = 0; k < trips.ops.size(); ++k) {
    const StrandedOp& op = trips.ops[k];
    const bool move = std::find(trips.moves.begin(), trips.moves.end(), k) != trips.moves.end();
    JsonObject j;
    j.add("op", graph.node(op.node).name).add("device", op.device).add("neighbours_device", op.neighbours_device);
    j.add_raw("inputs", names(op.inputs)).add_raw("consumers", names(op.consumers)).add("move", move);
    ops += (ops.size() > 1 ? "," : "") + j.str();
  }
  JsonObject j;
  j.add_raw("ops", ops + "]").add("edges", trips.edges).add("bytes_per_step", trips.bytes_per_sample * batch);
  j.add("edges_after", trips.edges_after).add("bytes_per_step_after", trips.bytes_per_sample_after * batch);
  return j.str();
}

}  // namespace devmap
