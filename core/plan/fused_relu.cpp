#include "core/plan/fused_relu.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace devmap {

std::vector<FusedRelu> fused_relus(const FusedReluInputs& in) {
  assert(in.graph && in.forward && in.edge_of && in.external);
  std::vector<FusedRelu> out;
  if (!in.host_memory) return out;
  const Graph& g = *in.graph;
  // Per tensor: the forward instructions that read it (kForward inputs, and
  // kSend's tensor), and whether this device computes it.
  std::vector<int> readers(static_cast<size_t>(g.size()), 0);
  std::vector<bool> computed(static_cast<size_t>(g.size()), false);
  for (const Instr& ins : *in.forward) {
    if (ins.kind == InstrKind::kForward) computed[static_cast<size_t>(ins.node)] = true;
    if (ins.kind == InstrKind::kForward || ins.kind == InstrKind::kSend)
      for (int t : ins.in)
        if (t >= 0 && t < g.size()) ++readers[static_cast<size_t>(t)];
  }
  const auto stays_here = [&](int t) {
    return (*in.edge_of)[static_cast<size_t>(t)] < 0 && !(*in.external)[static_cast<size_t>(t)];
  };
  for (const Instr& ins : *in.forward) {
    if (ins.kind != InstrKind::kForward) continue;
    const Node& relu = g.node(ins.node);
    if (relu.op() != "relu" || relu.inputs.size() != 1) continue;
    const int producer = relu.inputs[0];
    const Node& p = g.node(producer);
    if (std::find(std::begin(kReluFusingOps), std::end(kReluFusingOps), p.op()) == std::end(kReluFusingOps)) continue;
    assert(!p.schema->backward_needs_output);  // the buffer holds max(y, 0), not y
    if (!computed[static_cast<size_t>(producer)] || readers[static_cast<size_t>(producer)] != 1) continue;
    if (!stays_here(producer) || !stays_here(ins.node)) continue;
    if (relu.recomputed || p.recomputed) continue;  // each computed again on its own
    out.push_back(FusedRelu{producer, ins.node});
  }
  return out;
}

}  // namespace devmap
