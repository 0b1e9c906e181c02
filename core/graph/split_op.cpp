#include "core/graph/split_op.h"

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

Graph split_ops(const Graph& graph, const std::vector<std::vector<SplitShare>>& splits, std::vector<int>& origin) {
  assert(splits.size() == graph.nodes().size());
  Graph out;
  origin.clear();
  std::vector<int> now(graph.nodes().size(), -1);  // node of `graph` -> its node in `out`
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
    for (size_t k = 0; k < split.size(); ++k) {
      Node part = copy;
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

bool made_by_split(const Graph& graph, int i) {
  const Node& n = graph.node(i);
  return !n.part_of.empty() || (n.op() == "concat" && graph.node(n.inputs.front()).part_of == n.name);
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
