#include "core/graph.h"

#include <cassert>

namespace devmap {

int Graph::add(Node node) {
  for ([[maybe_unused]] int in : node.inputs) assert(in >= 0 && in < size());
  nodes_.push_back(std::move(node));
  return size() - 1;
}

int Graph::find(const std::string& name) const {
  for (int i = 0; i < size(); ++i)
    if (nodes_[static_cast<size_t>(i)].name == name) return i;
  return -1;
}

std::vector<int> Graph::consumers(int i) const {
  std::vector<int> out;
  for (int j = 0; j < size(); ++j)
    for (int in : node(j).inputs)
      if (in == i) {
        out.push_back(j);
        break;
      }
  return out;
}

void Graph::infer() {
  for (Node& n : nodes_) {
    n.input_shapes.clear();
    for (int in : n.inputs) {
      const Node& src = node(in);
      if (src.schema->batch_reduced())
        throw_invalid(n.loc.prefix() + "op '" + n.name + "' takes '" + src.name + "' as input, but '" + src.name +
                      "' is a " + src.op() + " (one number per batch) and cannot feed another op");
      n.input_shapes.push_back(src.out_shape);
    }
    try {
      n.out_shape = n.schema->infer_shape(n.attrs, n.input_shapes);
      n.params = n.schema->params ? n.schema->params(n.attrs, n.input_shapes) : std::vector<ParamSpec>{};
    } catch (const Error& e) {
      throw Error(e.kind(), n.loc.prefix() + n.op() + " '" + n.name + "': " + e.what());
    }
  }
}

int Graph::find_role(OpRole role) const {
  auto all = find_all_role(role);
  if (all.size() > 1)
    throw_invalid(node(all[1]).loc.prefix() + "only one op of kind '" + node(all[1]).op() + "' is allowed, but '" +
                  node(all[0]).name + "' and '" + node(all[1]).name + "' both are");
  return all.empty() ? -1 : all[0];
}

std::vector<int> Graph::find_all_role(OpRole role) const {
  std::vector<int> out;
  for (int i = 0; i < size(); ++i)
    if (node(i).schema->role == role) out.push_back(i);
  return out;
}

int64_t Graph::param_count() const {
  int64_t n = 0;
  for (const Node& node : nodes_)
    for (const ParamSpec& p : node.params) n += p.shape.numel();
  return n;
}

int64_t Node::param_bytes() const {
  int64_t n = 0;
  for (const ParamSpec& p : params) n += p.shape.numel();
  return n * 4;
}

double Node::forward_flops(int64_t batch) const {
  if (!schema->forward_flops) return 0;
  return schema->forward_flops(attrs, input_shapes, out_shape) * static_cast<double>(batch);
}

double Node::backward_flops(int64_t batch) const {
  return schema->differentiable ? forward_flops(batch) * schema->backward_flops_factor : 0.0;
}

double Graph::forward_flops(int64_t batch) const {
  double f = 0;
  for (const Node& n : nodes_) f += n.forward_flops(batch);
  return f;
}

double Graph::training_flops(int64_t batch) const {
  double f = 0;
  for (const Node& n : nodes_) f += n.forward_flops(batch) + n.backward_flops(batch);
  return f;
}

}  // namespace devmap
