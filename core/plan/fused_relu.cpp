#include "core/plan/fused_relu.h"

#include <algorithm>
#include <cassert>
#include <iterator>

#include "core/plan/recompute.h"

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

std::vector<FusedReluGradient> fused_relu_gradients(const FusedReluGradientInputs& in) {
  assert(in.graph && in.backward && in.edge_of);
  std::vector<FusedReluGradient> out;
  if (!in.host_memory) return out;
  const Graph& g = *in.graph;
  const std::vector<Instr>& backward = *in.backward;
  // Per tensor: how many backward instructions read and write it (a send of
  // a gradient reads it), and per node its backward instruction's index.
  const auto nodes = static_cast<size_t>(g.size());
  std::vector<int> readers, writers;
  std::vector<int> backward_of(nodes, -1);
  const auto count = [](std::vector<int>& per_tensor, int t) {
    if (t < 0) return;
    if (static_cast<size_t>(t) >= per_tensor.size()) per_tensor.resize(static_cast<size_t>(t) + 1, 0);
    ++per_tensor[static_cast<size_t>(t)];
  };
  const auto at = [](const std::vector<int>& per_tensor, int t) {
    return static_cast<size_t>(t) < per_tensor.size() ? per_tensor[static_cast<size_t>(t)] : 0;
  };
  for (size_t k = 0; k < backward.size(); ++k) {
    const Instr& ins = backward[k];
    for (int t : ins.in) count(readers, t);
    for (int t : ins.out) count(writers, t);
    if (ins.kind == InstrKind::kBackward) backward_of[static_cast<size_t>(ins.node)] = static_cast<int>(k);
  }
  std::vector<bool> recomputed(nodes, false);
  for (const Instr& ins : backward)
    if (is_recompute(ins)) recomputed[static_cast<size_t>(ins.node)] = true;
  const auto stays_here = [&](int t) { return (*in.edge_of)[static_cast<size_t>(t)] < 0; };
  for (const Instr& b : backward) {
    if (b.kind != InstrKind::kBackward) continue;
    const Node& consumer = g.node(b.node);
    if (std::find(std::begin(kReluGradientFusingOps), std::end(kReluGradientFusingOps), consumer.op()) ==
        std::end(kReluGradientFusingOps))
      continue;
    if (consumer.inputs.size() != 1 || b.out.size() != 1 || b.out[0] < 0) continue;
    const int relu = consumer.inputs[0];
    if (g.node(relu).op() != "relu" || backward_of[static_cast<size_t>(relu)] < 0) continue;
    const Instr& rb = backward[static_cast<size_t>(backward_of[static_cast<size_t>(relu)])];
    const int output_grad = b.out[0];
    // The consumer's backward alone writes the relu output's gradient, the
    // relu's backward alone reads it.
    if (rb.in.size() != 1 || rb.in[0] != output_grad || rb.out.size() != 1 || rb.out[0] < 0) continue;
    if (at(writers, output_grad) != 1 || at(readers, output_grad) != 1) continue;
    if (!stays_here(output_grad) || !stays_here(rb.out[0]) || !stays_here(relu)) continue;
    if (recomputed[static_cast<size_t>(relu)] || recomputed[static_cast<size_t>(b.node)]) continue;
    out.push_back(FusedReluGradient{relu, b.node, output_grad, rb.out[0]});
  }
  return out;
}

}  // namespace devmap
