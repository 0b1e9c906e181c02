#include "core/plan/recompute.h"

#include <functional>

namespace devmap {
namespace {

// The activations (op outputs) a backward-pass instruction reads.
std::vector<int> activations_read(const Graph& g, const Instr& ins) {
  std::vector<int> r;
  if (ins.kind == InstrKind::kForward) return ins.in;
  if (ins.kind != InstrKind::kBackward) return r;
  const Node& n = g.node(ins.node);
  if (n.schema->backward_needs_inputs) r = n.inputs;
  if (n.schema->backward_needs_output) r.push_back(ins.node);
  return r;
}

}  // namespace

bool can_recompute(const Graph& g, const std::vector<bool>& needed, int node) {
  const Node& n = g.node(node);
  if (!needed[static_cast<size_t>(node)] || n.schema->fed_by_coordinator() || n.schema->batch_reduced()) return false;
  for (int in : n.inputs)
    if (!g.node(in).schema->fed_by_coordinator() && g.node(in).device != n.device) return false;
  for (int c : g.consumers(node))
    if (needed[static_cast<size_t>(c)] && g.node(c).device != n.device) return false;
  return true;
}

std::vector<Instr> with_recomputes(const Graph& g, const std::vector<bool>& needed,
                                   const std::vector<Instr>& backward) {
  const auto n = static_cast<size_t>(g.size());
  std::vector<bool> recomputed(n, false), done(n, false);
  bool any = false;
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).recomputed && can_recompute(g, needed, i)) recomputed[static_cast<size_t>(i)] = any = true;
  if (!any) return backward;
  std::vector<Instr> out;
  out.reserve(backward.size());
  std::function<void(int)> emit = [&](int node) {
    const auto i = static_cast<size_t>(node);
    if (!recomputed[i] || done[i]) return;
    done[i] = true;
    for (int in : g.node(node).inputs) emit(in);
    out.push_back({InstrKind::kForward, node, g.node(node).inputs, {node}});
  };
  for (const Instr& ins : backward) {
    for (int t : activations_read(g, ins))
      if (t >= 0 && t < g.size()) emit(t);
    out.push_back(ins);
  }
  return out;
}

}  // namespace devmap
