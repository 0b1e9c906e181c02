// Small ONNX models built in code for the import and export tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "coordinator/onnx/onnx_tensor.h"

namespace devmap::test {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("devmap-test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  onnx::NodeProto& node(const std::string& type, const std::string& name, std::vector<std::string> inputs,
                        std::vector<std::string> outputs) {
    onnx::NodeProto& n = *model_.mutable_graph()->add_node();
    n.set_op_type(type);
    n.set_name(name);
    for (auto& i : inputs) n.add_input(i);
    for (auto& o : outputs) n.add_output(o);
    return n;
  }
  static void ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void real(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  // A float initializer whose values are a pure function of its name and index.
  std::vector<float> weight(const std::string& name, std::vector<int64_t> dims, float scale = 0.1f) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    uint32_t h = 2166136261u;
    for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    for (size_t i = 0; i < v.size(); ++i) {
      h = h * 1664525u + 1013904223u;
      v[i] = scale * (static_cast<float>(h >> 8) / 16777216.0f - 0.5f);
    }
    *model_.mutable_graph()->add_initializer() = onnx_io::float_tensor(name, dims, v);
    return v;
  }
  // Values in [0.5, 1.5): variances.
  std::vector<float> positive_weight(const std::string& name, std::vector<int64_t> dims) {
    std::vector<float> v = weight(name + ".raw", dims, 1.0f);
    for (float& x : v) x += 1.0f;
    auto* init = model_.mutable_graph()->mutable_initializer();
    init->RemoveLast();
    *model_.mutable_graph()->add_initializer() = onnx_io::float_tensor(name, dims, v);
    return v;
  }
  void ints_initializer(const std::string& name, std::vector<int64_t> values) {
    *model_.mutable_graph()->add_initializer() = onnx_io::int64_tensor(name, values);
  }
  void input(const std::string& name, std::vector<int64_t> dims) {
    info(*model_.mutable_graph()->add_input(), name, dims);
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }
  onnx::ModelProto& model() { return model_; }

 private:
  static void info(onnx::ValueInfoProto& v, const std::string& name, const std::vector<int64_t>& dims) {
    v.set_name(name);
    auto* t = v.mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param("N");
      else
        dim->set_dim_value(d);
    }
  }
  onnx::ModelProto model_;
};

}  // namespace devmap::test
