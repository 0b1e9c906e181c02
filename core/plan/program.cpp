#include "core/plan/program.h"

#include <algorithm>
#include <cassert>

#include "core/plan/recompute.h"

namespace devmap {
namespace {

// Marks every op that `targets` depend on.
std::vector<bool> ancestors(const Graph& g, const std::vector<int>& targets) {
  std::vector<bool> need(static_cast<size_t>(g.size()), false);
  for (int t : targets) need[static_cast<size_t>(t)] = true;
  for (int i = g.size() - 1; i >= 0; --i)
    if (need[static_cast<size_t>(i)])
      for (int in : g.node(i).inputs) need[static_cast<size_t>(in)] = true;
  return need;
}

Program forward_program(const Graph& g, const std::vector<int>& targets) {
  Program p;
  p.needed = ancestors(g, targets);
  for (int i = 0; i < g.size(); ++i) p.tensors.push_back({g.node(i).name, TensorInfo::Kind::kActivation, i});
  p.grad_of.assign(static_cast<size_t>(g.size()), -1);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (!p.needed[static_cast<size_t>(i)] || n.schema->fed_by_coordinator()) continue;
    p.forward.push_back({InstrKind::kForward, i, n.inputs, {i}});
  }
  return p;
}

int add_tensor(Program& p, std::string name, TensorInfo::Kind kind, int node) {
  p.tensors.push_back({std::move(name), kind, node});
  return p.tensor_count() - 1;
}

}  // namespace

Program build_inference_program(const Graph& graph, const std::vector<int>& outputs) {
  return forward_program(graph, outputs);
}

Program build_training_program(const Graph& g) {
  int loss = g.find_role(OpRole::kLoss);
  if (loss < 0) throw_invalid("the model has no loss op (add a softmax_cross_entropy op to train it)");
  std::vector<int> targets{loss};
  for (int m : g.find_all_role(OpRole::kMetric)) targets.push_back(m);
  Program p = forward_program(g, targets);
  p.loss_node = loss;

  // An op's output needs a gradient when the op lies between a parameter and
  // the loss: it has parameters, or a differentiable input that needs one.
  const size_t n = static_cast<size_t>(g.size());
  std::vector<bool> on_loss_path = ancestors(g, {loss});
  std::vector<bool> requires_grad(n, false);
  for (int i = 0; i < g.size(); ++i) {
    const Node& node = g.node(i);
    if (!on_loss_path[static_cast<size_t>(i)] || !node.schema->differentiable) continue;
    bool r = !node.params.empty();
    for (size_t k = 0; k < node.inputs.size(); ++k)
      r = r ||
          (node.schema->input_gets_grad(static_cast<int>(k)) && requires_grad[static_cast<size_t>(node.inputs[k])]);
    requires_grad[static_cast<size_t>(i)] = r;
  }
  if (!requires_grad[static_cast<size_t>(loss)])
    throw_invalid("the loss '" + g.node(loss).name + "' does not depend on any parameter: nothing to train");

  // Who sends a gradient into each tensor, in node order.
  std::vector<std::vector<int>> grad_senders(n);
  for (int i = 0; i < g.size(); ++i) {
    if (!requires_grad[static_cast<size_t>(i)]) continue;
    const Node& node = g.node(i);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int in = node.inputs[k];
      if (node.schema->input_gets_grad(static_cast<int>(k)) && requires_grad[static_cast<size_t>(in)])
        grad_senders[static_cast<size_t>(in)].push_back(i);
    }
  }
  for (int i = 0; i < g.size(); ++i)
    if (requires_grad[static_cast<size_t>(i)])
      p.grad_of[static_cast<size_t>(i)] = add_tensor(p, g.node(i).name + "@grad", TensorInfo::Kind::kGradient, i);
  p.loss_grad = p.grad_of[static_cast<size_t>(loss)];

  // Where consumer `c` writes the gradient of input `in`: straight into the
  // gradient when it is the only sender, else into a partial to be summed.
  auto partial_for = [&](int in, int c) {
    const auto& senders = grad_senders[static_cast<size_t>(in)];
    if (senders.size() == 1) return p.grad_of[static_cast<size_t>(in)];
    return add_tensor(p, g.node(in).name + "@grad." + g.node(c).name, TensorInfo::Kind::kPartialGradient, in);
  };
  std::vector<std::vector<int>> partials(n);

  for (int i = g.size() - 1; i >= 0; --i) {
    if (!requires_grad[static_cast<size_t>(i)]) continue;
    const Node& node = g.node(i);
    if (partials[static_cast<size_t>(i)].size() > 1)
      p.backward.push_back(
          {InstrKind::kSumGrads, i, partials[static_cast<size_t>(i)], {p.grad_of[static_cast<size_t>(i)]}});
    Instr b{InstrKind::kBackward, i, {p.grad_of[static_cast<size_t>(i)]}, {}};
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      int in = node.inputs[k];
      int t = -1;
      if (node.schema->input_gets_grad(static_cast<int>(k)) && requires_grad[static_cast<size_t>(in)]) {
        t = partial_for(in, i);
        if (grad_senders[static_cast<size_t>(in)].size() > 1) partials[static_cast<size_t>(in)].push_back(t);
      }
      b.out.push_back(t);
    }
    p.backward.push_back(std::move(b));
  }
  // Partials were collected in reverse node order; sum them in node order.
  for (Instr& ins : p.backward)
    if (ins.kind == InstrKind::kSumGrads) std::reverse(ins.in.begin(), ins.in.end());
  p.backward = with_recomputes(g, p.needed, p.backward);
  return p;
}

}  // namespace devmap
