#include "coordinator/onnx/onnx_export.h"

#include <cmath>
#include <set>

#include "coordinator/util/version.h"
#include "core/base/error.h"
#include "core/graph/split_op.h"

namespace devmap::onnx_io {
namespace {

class Exporter {
 public:
  Exporter(const Graph& g, const std::map<std::string, HostTensor>& w, onnx::GraphProto& out)
      : g_(g), weights_(w), out_(out) {}

  onnx::NodeProto& node(const std::string& type, const std::string& name, std::vector<std::string> inputs,
                        const std::string& output) {
    onnx::NodeProto& n = *out_.add_node();
    n.set_op_type(type);
    n.set_name(name);
    for (const std::string& i : inputs) n.add_input(i);
    n.add_output(output);
    return n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, double v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  // The initializer of parameter `param` of `n`, checked against its ParamSpec;
  // a part of a split op (core/graph/split_op.h) takes its rows of the whole
  // op's tensor.
  std::string weight(const Node& n, const std::string& param) {
    const ParamSpec* spec = nullptr;
    for (const ParamSpec& p : n.params)
      if (p.name == param) spec = &p;
    if (!spec) throw_invalid("op " + n.name + " has no parameter '" + param + "'");
    const WholeParam whole = whole_param(n, *spec);
    const std::string& key = whole.name;
    auto it = weights_.find(key);
    if (it == weights_.end()) throw_invalid("the weights have no tensor '" + key + "' that op " + n.name + " needs");
    if (Shape(it->second.dims) != whole.shape)
      throw_invalid("the weights' tensor '" + key + "' has shape " + Shape(it->second.dims).to_string() + ", op " +
                    n.name + "'s is " + whole.shape.to_string());
    const auto first = it->second.values.begin() + whole.offset;
    return constant(n.name + "." + param, spec->shape.dims(), std::vector<float>(first, first + spec->shape.numel()));
  }
  std::string constant(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    *out_.add_initializer() = float_tensor(name, dims, values);
    return name;
  }
  std::string shape_constant(const std::string& name, const std::vector<int64_t>& values) {
    *out_.add_initializer() = int64_tensor(name, values);
    return name;
  }

  void value_info(onnx::ValueInfoProto& v, const std::string& name, const Shape& sample) {
    v.set_name(name);
    auto* t = v.mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("N");
    for (int64_t d : sample.dims()) t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  void gelu(const Node& n, const std::string& x) {
    const std::string& y = n.name;
    const std::string half = constant(y + ".half", {}, {0.5f}), one = constant(y + ".one", {}, {1.0f});
    std::string inner;
    if (n.attrs.get_string("approximate") == "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const std::string c = constant(y + ".c", {}, {0.044715f});
      const std::string k = constant(y + ".k", {}, {static_cast<float>(std::sqrt(2.0 / M_PI))});
      node("Mul", y + ".x2", {x, x}, y + ".x2");
      node("Mul", y + ".x3", {y + ".x2", x}, y + ".x3");
      node("Mul", y + ".cx3", {y + ".x3", c}, y + ".cx3");
      node("Add", y + ".sum", {x, y + ".cx3"}, y + ".sum");
      node("Mul", y + ".ksum", {y + ".sum", k}, y + ".ksum");
      node("Tanh", y + ".tanh", {y + ".ksum"}, y + ".inner");
    } else {
      // 0.5 x (1 + erf(x / sqrt(2)))
      const std::string r = constant(y + ".sqrt2", {}, {static_cast<float>(std::sqrt(2.0))});
      node("Div", y + ".scaled", {x, r}, y + ".scaled");
      node("Erf", y + ".erf", {y + ".scaled"}, y + ".inner");
    }
    node("Add", y + ".plus1", {y + ".inner", one}, y + ".plus1");
    node("Mul", y + ".times_x", {y + ".plus1", x}, y + ".times_x");
    node("Mul", y, {y + ".times_x", half}, y);
  }

  void op(const Node& n) {
    std::vector<std::string> in;
    for (int i : n.inputs) in.push_back(g_.node(i).name);
    const std::string& y = n.name;
    const std::string& t = n.op();
    if (t == "conv2d") {
      std::vector<std::string> inputs{in[0], weight(n, "weight")};
      if (n.attrs.get_bool("bias")) inputs.push_back(weight(n, "bias"));
      auto& c = node("Conv", y, inputs, y);
      const int64_t k = n.attrs.get_int("kernel"), s = n.attrs.get_int("stride"), p = n.attrs.get_int("padding"),
                    d = n.attrs.get_int("dilation");
      attr(c, "kernel_shape", std::vector<int64_t>{k, k});
      attr(c, "strides", std::vector<int64_t>{s, s});
      attr(c, "pads", std::vector<int64_t>{p, p, p, p});
      attr(c, "dilations", std::vector<int64_t>{d, d});
      attr(c, "group", n.attrs.get_int("groups"));
    } else if (t == "dense") {
      std::vector<std::string> inputs{in[0], weight(n, "weight")};
      if (n.attrs.get_bool("bias")) inputs.push_back(weight(n, "bias"));
      attr(node("Gemm", y, inputs, y), "transB", int64_t{1});
    } else if (t == "batch_norm") {
      auto& b =
          node("BatchNormalization", y,
               {in[0], weight(n, "weight"), weight(n, "bias"), weight(n, "running_mean"), weight(n, "running_var")}, y);
      attr(b, "epsilon", n.attrs.get_float("eps"));
      attr(b, "momentum", 1.0 - n.attrs.get_float("momentum"));
    } else if (t == "layer_norm") {
      auto& l = node("LayerNormalization", y, {in[0], weight(n, "weight"), weight(n, "bias")}, y);
      attr(l, "axis", int64_t{1});
      attr(l, "epsilon", n.attrs.get_float("eps"));
    } else if (t == "relu" || t == "sigmoid" || t == "tanh") {
      node(t == "relu" ? "Relu" : t == "sigmoid" ? "Sigmoid" : "Tanh", y, in, y);
    } else if (t == "leaky_relu") {
      attr(node("LeakyRelu", y, in, y), "alpha", n.attrs.get_float("negative_slope"));
    } else if (t == "gelu") {
      gelu(n, in[0]);
    } else if (t == "softmax") {
      attr(node("Softmax", y, in, y), "axis", int64_t{1});
    } else if (t == "max_pool2d" || t == "avg_pool2d") {
      const int64_t k = n.attrs.get_int("kernel"), p = n.attrs.get_int("padding");
      const int64_t s = n.attrs.get_int("stride") == 0 ? k : n.attrs.get_int("stride");
      auto& pool = node(t == "max_pool2d" ? "MaxPool" : "AveragePool", y, in, y);
      attr(pool, "kernel_shape", std::vector<int64_t>{k, k});
      attr(pool, "strides", std::vector<int64_t>{s, s});
      attr(pool, "pads", std::vector<int64_t>{p, p, p, p});
      if (t == "avg_pool2d") attr(pool, "count_include_pad", int64_t{1});
    } else if (t == "global_avg_pool") {
      node("GlobalAveragePool", y, in, y + ".pool");
      attr(node("Flatten", y + ".flatten", {y + ".pool"}, y), "axis", int64_t{1});
    } else if (t == "add") {
      node("Add", y, in, y);
    } else if (t == "concat") {
      attr(node("Concat", y, in, y), "axis", int64_t{1});
    } else if (t == "flatten") {
      attr(node("Flatten", y, in, y), "axis", int64_t{1});
    } else if (t == "reshape") {
      std::vector<int64_t> shape{-1};
      for (int64_t d : n.out_shape.dims()) shape.push_back(d);
      node("Reshape", y, {in[0], shape_constant(y + ".shape", shape)}, y);
    } else if (t == "dropout") {
      // Off at inference: ONNX's Dropout without training_mode.
      node("Dropout", y, {in[0], constant(y + ".ratio", {}, {static_cast<float>(n.attrs.get_float("rate"))})}, y);
    } else {
      throw_invalid("op " + y + " (" + t + ") has no ONNX export (export covers the ops import maps: docs/ONNX.md)");
    }
  }

 private:
  const Graph& g_;
  const std::map<std::string, HostTensor>& weights_;
  onnx::GraphProto& out_;
};

bool left_out(const Node& n) {
  const OpRole r = n.schema->role;
  return r == OpRole::kLabelInput || r == OpRole::kLoss || r == OpRole::kMetric || n.op() == "argmax";
}

}  // namespace

onnx::ModelProto export_model(const Graph& g, const std::map<std::string, HostTensor>& weights) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("devmap");
  m.set_producer_version(devmap_version());
  bool layer_norm = false;
  for (const Node& n : g.nodes()) layer_norm = layer_norm || n.op() == "layer_norm";
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(layer_norm ? 17 : 13);
  onnx::GraphProto& out = *m.mutable_graph();
  out.set_name("devmap");
  Exporter ex(g, weights, out);
  std::set<int> outputs;
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (left_out(n)) {
      if (n.schema->role == OpRole::kLoss && !n.inputs.empty()) outputs.insert(n.inputs[0]);
      continue;
    }
    if (n.schema->role == OpRole::kImageInput) {
      ex.value_info(*out.add_input(), n.name, n.out_shape);
      continue;
    }
    ex.op(n);
    bool read = false;
    for (int c : g.consumers(i)) read = read || !left_out(g.node(c));
    if (!read) outputs.insert(i);
  }
  for (int i : outputs) ex.value_info(*out.add_output(), g.node(i).name, g.node(i).out_shape);
  return m;
}

}  // namespace devmap::onnx_io
