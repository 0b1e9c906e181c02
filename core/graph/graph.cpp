#include "core/graph/graph.h"

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

namespace {

// Bounds that keep every size computation far from int64 overflow: any
// integer attribute (a dimension, a filter or unit count, a kernel size),
// and the elements of one sample's tensor or of one parameter.
constexpr int64_t kMaxAttrInt = int64_t{1} << 24;
constexpr int64_t kMaxElements = int64_t{1} << 32;

void check_attr_bounds(const Node& n) {
  for (const auto& [key, value] : n.attrs.values()) {
    bool ok = true;
    if (const auto* i = std::get_if<int64_t>(&value)) ok = *i <= kMaxAttrInt;
    if (const auto* l = std::get_if<std::vector<int64_t>>(&value))
      for (int64_t x : *l) ok = ok && x <= kMaxAttrInt;
    if (!ok)
      throw_invalid(n.loc.prefix() + "op '" + n.name + "' (" + n.op() + ") attribute '" + key + "' is larger than " +
                    std::to_string(kMaxAttrInt));
  }
}

void check_elements(const Node& n, const Shape& s, const std::string& what) {
  int64_t count = 1;
  for (int64_t d : s.dims())
    if (__builtin_mul_overflow(count, d, &count) || count > kMaxElements)
      throw_invalid(n.loc.prefix() + n.op() + " '" + n.name + "': " + what + " " + s.to_string() + " has more than " +
                    std::to_string(kMaxElements) + " elements");
}

}  // namespace

void Graph::infer() {
  for (Node& n : nodes_) {
    check_attr_bounds(n);
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
    check_elements(n, n.out_shape, "its output per sample");
    for (const ParamSpec& p : n.params) check_elements(n, p.shape, "parameter '" + p.name + "'");
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
    for (const ParamSpec& p : node.params)
      if (p.trained) n += p.shape.numel();
  return n;
}

int64_t Node::param_bytes() const {
  int64_t n = 0;
  for (const ParamSpec& p : params) n += p.shape.numel();
  return n * 4;
}

int64_t Node::trained_param_bytes() const {
  int64_t n = 0;
  for (const ParamSpec& p : params)
    if (p.trained) n += p.shape.numel();
  return n * 4;
}

uint64_t Node::workspace_bytes(int64_t batch) const {
  return schema->workspace_bytes ? schema->workspace_bytes(attrs, input_shapes, out_shape, batch) : 0;
}

double Node::forward_flops(int64_t batch) const {
  if (!schema->forward_flops) return 0;
  return schema->forward_flops(attrs, input_shapes, out_shape) * static_cast<double>(batch);
}

double Node::backward_flops(int64_t batch, bool input_gradients) const {
  if (!schema->differentiable) return 0.0;
  const double factor = schema->backward_flops_factor - (input_gradients ? 0.0 : schema->input_gradient_flops_factor);
  return forward_flops(batch) * factor;
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
