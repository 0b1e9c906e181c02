#include "core/plan/round_trips.h"

#include "core/graph/split_op.h"
#include "core/plan/partition.h"

namespace devmap {
namespace {

bool computed(const Graph& graph, const Program& program, int node) {
  return program.needed[static_cast<size_t>(node)] && !graph.node(node).schema->fed_by_coordinator() &&
         !graph.node(node).device.empty();
}

void count_edges(const Graph& graph, const Program& program, int& edges, int64_t& bytes_per_sample) {
  const Partition partition = partition_program(graph, program);
  edges = static_cast<int>(partition.edges.size());
  bytes_per_sample = 0;
  for (const Edge& e : partition.edges) bytes_per_sample += e.bytes(1);
}

}  // namespace

RoundTrips find_round_trips(const Graph& graph, const Program& program, const std::vector<bool>& placed_by_user) {
  RoundTrips trips;
  for (int i = 0; i < graph.size(); ++i) {
    // A part of a split op is placed apart on purpose (core/graph/split_op.h).
    if (!computed(graph, program, i) || made_by_split(graph, i)) continue;
    StrandedOp op;
    op.node = i;
    op.device = graph.node(i).device;
    for (int in : graph.node(i).inputs)
      if (computed(graph, program, in)) op.inputs.push_back(in);
    for (int c : graph.consumers(i))
      if (computed(graph, program, c)) op.consumers.push_back(c);
    bool one_other_device = !op.inputs.empty();  // an op the coordinator feeds alone starts a split
    for (const std::vector<int>* side : {&op.inputs, &op.consumers})
      for (int n : *side) {
        const std::string& d = graph.node(n).device;
        if (op.neighbours_device.empty()) op.neighbours_device = d;
        one_other_device = one_other_device && d == op.neighbours_device && d != op.device;
      }
    if (one_other_device) trips.ops.push_back(std::move(op));
  }
  if (trips.ops.empty()) return trips;
  auto by_user = [&](int node) {
    return static_cast<size_t>(node) < placed_by_user.size() && placed_by_user[static_cast<size_t>(node)];
  };
  for (size_t k = 0; k < trips.ops.size(); ++k)
    if (!by_user(trips.ops[k].node)) trips.moves.push_back(k);
  if (trips.moves.empty())
    for (size_t k = 0; k < trips.ops.size(); ++k) trips.moves.push_back(k);
  count_edges(graph, program, trips.edges, trips.bytes_per_sample);
  Graph moved = graph;
  for (size_t k : trips.moves) moved.node(trips.ops[k].node).device = trips.ops[k].neighbours_device;
  count_edges(moved, program, trips.edges_after, trips.bytes_per_sample_after);
  return trips;
}

}  // namespace devmap
