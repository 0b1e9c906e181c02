#include "coordinator/onnx/import_state.h"

#include <onnx/shape_inference/implementation.h>

#include <cassert>
#include <charconv>
#include <cstdlib>

#include "core/base/error.h"

namespace devmap::onnx_io {
namespace {

std::vector<int64_t> dims_of(const onnx::ValueInfoProto& v) {
  std::vector<int64_t> d;
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return d;
  for (const auto& dim : v.type().tensor_type().shape().dim()) d.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  return d;
}

// A sample's dims of a tensor with the batch first; [N] is N samples of one value.
std::vector<int64_t> sample_dims(const std::vector<int64_t>& dims) {
  if (dims.size() < 2) return std::vector<int64_t>(1, 1);
  return std::vector<int64_t>(dims.begin() + 1, dims.end());
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

std::string sanitized(const std::string& raw) {
  std::string s;
  for (char c : raw) {
    if (c == '/' || c == ':') c = '.';
    if (!name_char(c)) c = '_';
    if (c == '.' && (s.empty() || s.back() == '.')) continue;
    s += c;
  }
  while (!s.empty() && s.back() == '.') s.pop_back();
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) s = "n" + s;
  return s;
}

}  // namespace

Importer::Importer(const onnx::ModelProto& model, const ImportOptions& options, ImportedModel& out)
    : out_(out), options_(options) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") out_.opset = o.version();
  out_.producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  const onnx::GraphProto& g = model.graph();
  for (const auto& t : g.initializer()) initializers_[t.name()] = &t;
  for (const auto& v : g.input())
    if (!initializers_.count(v.name())) graph_inputs_[v.name()] = &v;
  for (const auto& v : g.output()) graph_outputs_.insert(v.name());
  for (const auto& n : g.node())
    for (const auto& in : n.input())
      if (!in.empty()) consumers_[in].push_back(&n);
  for (int i = 0; i < g.node_size(); ++i) index_[&g.node(i)] = i;
  // ONNX's own shape inference: the shapes past an unsupported node, so
  // that later nodes are still checked.
  try {
    onnx::ModelProto copy = model;
    onnx::shape_inference::InferShapes(copy);
    for (const auto& v : copy.graph().value_info()) inferred_[v.name()] = dims_of(v);
    for (const auto& v : copy.graph().output()) inferred_[v.name()] = dims_of(v);
  } catch (const std::exception&) {
    // Shapes stay unknown past unsupported nodes.
  }
}

const std::string& Importer::input(const onnx::NodeProto& n, int i) {
  static const std::string kNone;
  return i < n.input_size() ? n.input(i) : kNone;
}

const HostTensor* Importer::constant(const std::string& name) {
  if (name.empty()) return nullptr;
  if (auto it = values_.find(name); it != values_.end())
    return it->second.kind == Value::Kind::kConst ? &it->second.constant : nullptr;
  if (auto it = constants_.find(name); it != constants_.end()) return &it->second;
  if (auto it = initializers_.find(name); it != initializers_.end())
    return &(constants_[name] = tensor_values(*it->second, "initializer"));
  return nullptr;
}

const HostTensor* Importer::param(const std::string& name) {
  if (const HostTensor* c = constant(name)) return c;
  if (values_.count(name)) return nullptr;
  auto it = options_.bound_inputs.find(name);
  return it != options_.bound_inputs.end() ? &it->second : nullptr;
}

const Importer::Value* Importer::data(const std::string& name) {
  if (auto it = values_.find(name); it != values_.end())
    return it->second.kind == Value::Kind::kConst ? nullptr : &it->second;
  auto in = graph_inputs_.find(name);
  if (in == graph_inputs_.end()) return nullptr;
  Value& v = values_[name];
  v.dims = dims_of(*in->second);
  const int elem = in->second->type().has_tensor_type() ? in->second->type().tensor_type().elem_type() : 0;
  std::string need;
  if (elem != onnx::TensorProto::FLOAT)
    need = "needs a float32 input (its type is ONNX type " + std::to_string(elem) + ")";
  else if (v.dims.empty())
    need = "needs a batch dimension";
  for (size_t i = 1; i < v.dims.size() && need.empty(); ++i)
    if (v.dims[i] < 0) need = "needs a fixed size for every dimension but the first (the batch)";
  if (!need.empty()) {
    out_.unsupported.push_back({"input " + name, "input", need});
    return &v;
  }
  Node node;
  node.name = unique_name(sanitized(name));
  node.schema = find_op("input");
  // A [N] input is N samples of one value.
  const std::vector<int64_t> sample = sample_dims(v.dims);
  node.attrs.set("shape", sample);
  node.out_shape = Shape(sample);
  v.kind = Value::Kind::kData;
  v.node = out_.graph.add(std::move(node));
  out_.input_names.push_back(name);
  out_.input_nodes.push_back(v.node);
  return &v;
}

std::optional<std::vector<int64_t>> Importer::dims(const std::string& name) {
  if (const HostTensor* c = constant(name)) return c->dims;
  if (const Value* v = data(name); v && !v->dims.empty()) return v->dims;
  if (auto it = inferred_.find(name); it != inferred_.end() && !it->second.empty()) return it->second;
  return std::nullopt;
}

int Importer::data_node_any_shape(const std::string& name) {
  const Value* v = data(name);
  return v && v->kind == Value::Kind::kData ? v->node : -1;
}

int Importer::data_node(const std::string& name) {
  const Value* v = data(name);
  if (!v || v->kind != Value::Kind::kData) return -1;
  const Node& src = out_.graph.node(v->node);
  const std::vector<int64_t> want = sample_dims(v->dims);
  if (src.out_shape.dims() == want) return v->node;
  // The op's output is a view of another shape: reshape it once.
  Node node;
  node.name = unique_name(src.name + ".view");
  node.schema = find_op("reshape");
  node.attrs.set("shape", want);
  node.inputs = {v->node};
  node.input_shapes = {src.out_shape};
  node.out_shape = Shape(want);
  const int id = out_.graph.add(std::move(node));
  values_[name].node = id;
  return id;
}

void Importer::set_const(const std::string& name, HostTensor t) {
  Value& v = values_[name];
  v.kind = Value::Kind::kConst;
  v.constant = std::move(t);
}

void Importer::set_data(const std::string& name, int node, std::vector<int64_t> dims) {
  Value& v = values_[name];
  v.kind = Value::Kind::kData;
  v.node = node;
  v.dims = std::move(dims);
}

void Importer::set_unknown(const onnx::NodeProto& n) {
  for (const std::string& o : n.output())
    if (!o.empty()) mark_unknown(o);
}

void Importer::mark_unknown(const std::string& name) {
  Value& v = values_[name];
  v.kind = Value::Kind::kUnknown;
  v.node = -1;
  auto it = inferred_.find(name);
  v.dims = it != inferred_.end() ? it->second : std::vector<int64_t>{};
}

void Importer::unsupported(const onnx::NodeProto& n, const std::string& need) {
  out_.unsupported.push_back({describe(n), n.op_type(), need});
  set_unknown(n);
}

void Importer::needs_shapes(const onnx::NodeProto& n) {
  for (const std::string& in : n.input())
    if (auto it = values_.find(in); it != values_.end() && it->second.kind == Value::Kind::kUnknown)
      return set_unknown(n);
  unsupported(n, "needs its inputs' shapes");
}

std::string Importer::describe(const onnx::NodeProto& n) const {
  if (!n.name().empty()) return n.name();
  auto it = index_.find(&n);
  return n.op_type() + " #" + std::to_string(it == index_.end() ? -1 : it->second);
}

int Importer::emit(const onnx::NodeProto& n, const std::string& op, const std::vector<int>& inputs,
                   const std::map<std::string, AttrValue>& attrs, std::map<std::string, HostTensor> params,
                   const std::string& suffix) {
  for (int i : inputs)
    if (i < 0) {
      set_unknown(n);
      return -1;
    }
  Node node;
  node.schema = find_op(op);
  assert(node.schema);
  for (const AttrSpec& spec : node.schema->attrs) node.attrs.set(spec.name, spec.default_value);
  for (const auto& [k, v] : attrs) node.attrs.set(k, v);
  node.inputs = inputs;
  for (int i : inputs) node.input_shapes.push_back(out_.graph.node(i).out_shape);
  try {
    node.out_shape = node.schema->infer_shape(node.attrs, node.input_shapes);
    if (node.schema->params) node.params = node.schema->params(node.attrs, node.input_shapes);
  } catch (const Error& e) {
    unsupported(n, "needs what devmap's " + op + " refuses: " + e.what());
    return -1;
  }
  std::map<std::string, HostTensor> values;
  for (const ParamSpec& p : node.params) {
    HostTensor t;
    if (auto it = params.find(p.name); it != params.end()) {
      t = std::move(it->second);
      if (t.numel() != p.shape.numel()) {
        unsupported(n, "needs a " + p.name + " of shape " + p.shape.to_string() + " (devmap's " + op + "), has " +
                           Shape(t.dims).to_string());
        return -1;
      }
    } else {
      assert(p.init != ParamInit::kUniformFanIn);
      t.values.assign(static_cast<size_t>(p.shape.numel()), p.init == ParamInit::kOnes ? 1.0 : 0.0);
    }
    t.dims = p.shape.dims();
    t.integer = p.stored_as == FileDtype::kI64;
    values[p.name] = std::move(t);
  }
  node.name = op_name(n, suffix);
  for (auto& [pname, t] : values) out_.weights[node.name + "." + pname] = std::move(t);
  return out_.graph.add(std::move(node));
}

void Importer::same_shape_op(const onnx::NodeProto& n, const std::string& op,
                             const std::map<std::string, AttrValue>& attrs) {
  const std::string& x = input(n, 0);
  if (constant(x)) return unsupported(n, "needs a computed input (devmap folds only shape arithmetic)");
  const int in = data_node_any_shape(x);
  const int id = emit(n, op, {in}, attrs);
  if (id >= 0) set_data(n.output(0), id, data(x)->dims);
}

const onnx::AttributeProto* Importer::attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t Importer::attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const auto* a = attr(n, name);
  return a ? a->i() : fallback;
}

double Importer::attr_float(const onnx::NodeProto& n, const std::string& name, double fallback) {
  const auto* a = attr(n, name);
  if (!a) return fallback;
  // The shortest decimal of the float32 (1e-05, not 9.999999747378752e-06).
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, a->f());
  *end = '\0';
  return std::strtod(buf, nullptr);
}

std::string Importer::attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
  const auto* a = attr(n, name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> Importer::attr_ints(const onnx::NodeProto& n, const std::string& name,
                                         std::vector<int64_t> fallback) {
  const auto* a = attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

const std::vector<const onnx::NodeProto*>& Importer::consumers(const std::string& name) const {
  static const std::vector<const onnx::NodeProto*> kNone;
  auto it = consumers_.find(name);
  return it == consumers_.end() ? kNone : it->second;
}

std::string Importer::op_name(const onnx::NodeProto& n, const std::string& suffix) {
  std::string base;
  for (const std::string& in : n.input()) {
    const std::string kWeight = ".weight";
    if (initializers_.count(in) && in.size() > kWeight.size() &&
        in.compare(in.size() - kWeight.size(), kWeight.size(), kWeight) == 0) {
      base = in.substr(0, in.size() - kWeight.size());
      break;
    }
  }
  if (base.empty()) base = n.name();
  if (base.empty()) {
    base = n.op_type();
    for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return unique_name(sanitized(base) + suffix);
}

std::string Importer::unique_name(std::string base) {
  std::string name = base;
  for (int k = 2; names_.count(name); ++k) name = base + "_" + std::to_string(k);
  names_.insert(name);
  return name;
}

}  // namespace devmap::onnx_io
