#include "core/graph/split_op.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/base/format_number.h"

namespace devmap {

std::string split_refusal(const Node& node) {
  const std::string who = "op '" + node.name + "' (" + node.op() + ")";
  if (node.schema->split_attr.empty()) {
    std::string can;
    for (const std::string& op : known_op_names())
      if (!find_op(op)->split_attr.empty()) can += (can.empty() ? "" : ", ") + op;
    return who + " cannot be split across devices (ops that can: " + can + ")";
  }
  if (node.attrs.has("groups") && node.attrs.get_int("groups") != 1)
    return who + " has " + std::to_string(node.attrs.get_int("groups")) +
           " channel groups; only a conv2d with groups 1 can be split across devices";
  return "";
}

std::vector<int64_t> split_bounds(int64_t outputs, const std::vector<double>& shares, const std::string& who) {
  std::vector<int64_t> bounds{0};
  double sum = 0;
  for (size_t k = 0; k + 1 < shares.size(); ++k) {
    sum += shares[k];
    bounds.push_back(std::llround(static_cast<double>(outputs) * sum));
  }
  bounds.push_back(outputs);
  for (size_t k = 0; k < shares.size(); ++k)
    if (bounds[k + 1] <= bounds[k])
      throw_invalid(who + ": part " + std::to_string(k) + " (share " + format_number(shares[k]) +
                    ") gets none of the " + std::to_string(outputs) +
                    " outputs; give it a larger share or split into fewer parts");
  return bounds;
}

std::string part_name(const std::string& op, size_t k) {
  return op + "/part" + std::to_string(k);
}

std::string fan_out_name(const std::string& op, size_t k) {
  return op + "/fanout" + std::to_string(k);
}

namespace {

// Per node of `g`: whether training may give its output a gradient, i.e. it
// has parameters or a differentiable input that may get one. Autodiff's
// requires_grad (core/plan/program.cpp) without the loss path: a split op
// lies on it in every model worth training.
std::vector<bool> may_get_gradient(const Graph& g) {
  std::vector<bool> may(g.nodes().size(), false);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (!n.schema->differentiable) continue;
    bool m = !n.params.empty();
    for (size_t k = 0; k < n.inputs.size(); ++k)
      m = m || (n.schema->input_gets_grad(static_cast<int>(k)) && may[static_cast<size_t>(n.inputs[k])]);
    may[static_cast<size_t>(i)] = m;
  }
  return may;
}

// The fan-out of input `source` (a node of `graph`, read as `read` in the
// result) for the parts on `device`. It is a reshape to the input's own
// shape, an identity: the op set has no identity op, and a reshape runs on
// the CPU and the GPU (a copy each way, its kernel's contract) and is known
// to autodiff, the partition, the memory plan, the cost model, the workers
// and the ONNX export, so nothing after the rewrite learns of fan-outs, as
// nothing learns of splits. Autodiff then sums the parts' gradients of it
// on `device`, in node order (part order), and the fan-out's backward sends
// that one sum to the input's device. (Summing per consumer device in
// autodiff or the partition instead would make an instruction run away
// from its node's device, which every pass after them assumes.)
Node fan_out(const Graph& graph, int source, int read, const Node& op, const std::string& device, size_t k) {
  Node f;
  f.name = fan_out_name(op.name, k);
  f.schema = find_op("reshape");
  f.loc = op.loc;
  f.device = device;
  f.attrs.set("shape", graph.node(source).out_shape.dims());
  f.inputs = {read};
  return f;
}

}  // namespace

Graph split_ops(const Graph& graph, const std::vector<std::vector<SplitShare>>& splits, std::vector<int>& origin) {
  assert(splits.size() == graph.nodes().size());
  Graph out;
  origin.clear();
  std::vector<int> now(graph.nodes().size(), -1);  // node of `graph` -> its node in `out`
  const std::vector<bool> may_grad = may_get_gradient(graph);
  for (int i = 0; i < graph.size(); ++i) {
    const Node& node = graph.node(i);
    Node copy = node;
    for (int& in : copy.inputs) in = now[static_cast<size_t>(in)];
    copy.input_shapes.clear();
    copy.params.clear();
    const std::vector<SplitShare>& split = splits[static_cast<size_t>(i)];
    if (split.empty()) {
      now[static_cast<size_t>(i)] = out.add(std::move(copy));
      origin.push_back(i);
      continue;
    }
    assert(split_refusal(node).empty());
    const std::string& attr = node.schema->split_attr;
    const int64_t whole = node.attrs.get_int(attr);
    std::vector<double> shares;
    for (const SplitShare& s : split) shares.push_back(s.share);
    const std::vector<int64_t> bounds = split_bounds(whole, shares, "op '" + node.name + "' split");
    Node concat;
    concat.name = node.name;
    concat.schema = find_op("concat");
    concat.loc = node.loc;
    const std::vector<int> consumers = graph.consumers(i);
    concat.device = consumers.empty() ? node.device : graph.node(consumers.front()).device;
    // The inputs the parts on each device read: the op's, or a fan-out's
    // where the device holds two or more parts and the input, which may get
    // a gradient, comes from another device.
    std::vector<std::string> devices;  // in the order of their first parts
    for (const SplitShare& s : split)
      if (std::find(devices.begin(), devices.end(), s.device) == devices.end()) devices.push_back(s.device);
    std::vector<std::vector<int>> inputs_on(devices.size(), copy.inputs);
    size_t fan_outs = 0;
    for (size_t d = 0; d < devices.size(); ++d) {
      const auto parts_here =
          std::count_if(split.begin(), split.end(), [&](const SplitShare& s) { return s.device == devices[d]; });
      if (parts_here < 2) continue;
      for (size_t k = 0; k < node.inputs.size(); ++k) {
        // The input's device in the result: a split op's is its concat's.
        const int source = node.inputs[k];
        if (!may_grad[static_cast<size_t>(source)] || out.node(copy.inputs[k]).device == devices[d]) continue;
        inputs_on[d][k] = out.add(fan_out(graph, source, copy.inputs[k], node, devices[d], fan_outs++));
        origin.push_back(i);
      }
    }
    for (size_t k = 0; k < split.size(); ++k) {
      Node part = copy;
      part.inputs =
          inputs_on[static_cast<size_t>(std::find(devices.begin(), devices.end(), split[k].device) - devices.begin())];
      part.name = part_name(node.name, k);
      part.device = split[k].device;
      part.attrs.set(attr, bounds[k + 1] - bounds[k]);
      part.part_of = node.name;
      part.part_begin = bounds[k];
      part.part_whole = whole;
      concat.inputs.push_back(out.add(std::move(part)));
      origin.push_back(i);
    }
    now[static_cast<size_t>(i)] = out.add(std::move(concat));
    origin.push_back(i);
  }
  out.infer();
  return out;
}

bool is_fan_out(const Graph& graph, int i) {
  const Node& n = graph.node(i);
  if (n.op() != "reshape") return false;
  const std::vector<int> consumers = graph.consumers(i);
  if (consumers.empty()) return false;
  const std::string& op = graph.node(consumers.front()).part_of;
  return !op.empty() && n.name.rfind(op + "/fanout", 0) == 0;
}

bool made_by_split(const Graph& graph, int i) {
  const Node& n = graph.node(i);
  return !n.part_of.empty() || is_fan_out(graph, i) ||
         (n.op() == "concat" && graph.node(n.inputs.front()).part_of == n.name);
}

WholeParam whole_param(const Node& node, const ParamSpec& param) {
  if (node.part_of.empty()) return {node.name + "." + param.name, param.shape, 0};
  std::vector<int64_t> dims = param.shape.dims();
  assert(!dims.empty() && dims[0] > 0);
  const int64_t row = param.shape.numel() / dims[0];
  dims[0] = node.part_whole;
  return {node.part_of + "." + param.name, Shape(std::move(dims)), node.part_begin * row};
}

}  // namespace devmap
