// The state of one import (onnx_import.cpp drives it, import_*.cpp map the
// nodes): what each ONNX value is (devmap data, a constant, or unknown
// after an unsupported node), the graph being built and its weights.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/onnx/onnx_import.h"

namespace devmap::onnx_io {

// The batch dimension of a shape constant whose value the model leaves to
// run time (Shape of a tensor with a symbolic batch).
inline constexpr double kRuntimeBatch = -9.0e15;

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const ImportOptions& options, ImportedModel& out);

  struct Value {
    enum class Kind { kData, kConst, kUnknown } kind = Kind::kUnknown;
    int node = -1;              // kData: the devmap op computing it
    std::vector<int64_t> dims;  // kData, kUnknown: ONNX's shape, batch first (-1: not known); empty: unknown
    HostTensor constant;        // kConst
  };

  // A node's input `i` ("" or past the end: absent).
  static const std::string& input(const onnx::NodeProto& n, int i);
  bool has_input(const onnx::NodeProto& n, int i) const { return !input(n, i).empty(); }

  // The constant value of `name` (an initializer, a Constant, a folded
  // value), or nullptr when it is data or unknown.
  const HostTensor* constant(const std::string& name);
  // The same for an input a node needs constant (weights, a shape, axes):
  // a bound graph input (ImportOptions::bound_inputs) counts too.
  const HostTensor* param(const std::string& name);
  // The value `name` as data, or nullptr (a constant): a graph input read
  // as data becomes an input op here.
  const Value* data(const std::string& name);
  // ONNX's shape of `name` (batch first), when known.
  std::optional<std::vector<int64_t>> dims(const std::string& name);
  // The devmap op whose output is `name`'s data in exactly its ONNX
  // per-sample shape (a reshape is added where the op's output is a view
  // of another shape); -1 when unknown.
  int data_node(const std::string& name);
  // The devmap op whose output holds `name`'s data in any shape of the
  // same elements; -1 when unknown.
  int data_node_any_shape(const std::string& name);

  void set_const(const std::string& name, HostTensor t);
  // `name` is `node`'s output viewed with ONNX shape `dims` (same elements).
  void set_data(const std::string& name, int node, std::vector<int64_t> dims);
  void set_unknown(const onnx::NodeProto& n);
  void mark_unknown(const std::string& name);
  // Records `n` as unsupported ("needs ...") and its outputs as unknown.
  void unsupported(const onnx::NodeProto& n, const std::string& need);
  // For a node that needs its inputs' shapes and has none: unsupported,
  // unless an input is unknown (past an unsupported node, already listed).
  void needs_shapes(const onnx::NodeProto& n);

  // Adds devmap op `op` for `n` with `attrs` (the schema's defaults for the
  // rest), data inputs `inputs` and the given parameter values (by
  // ParamSpec name; absent ones take the schema's initialisation). -1 when
  // an input is unknown (nothing added) or the op refuses the shapes
  // (recorded as unsupported). `suffix` tells apart several ops of one node.
  int emit(const onnx::NodeProto& n, const std::string& op, const std::vector<int>& inputs,
           const std::map<std::string, AttrValue>& attrs, std::map<std::string, HostTensor> params = {},
           const std::string& suffix = "");
  // Emits `op` on `n`'s one data input with its output the input's shape.
  void same_shape_op(const onnx::NodeProto& n, const std::string& op, const std::map<std::string, AttrValue>& attrs);

  // Attributes of `n`.
  static const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name);
  static int64_t attr_int(const onnx::NodeProto& n, const std::string& name, int64_t fallback);
  static double attr_float(const onnx::NodeProto& n, const std::string& name, double fallback);
  static std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback);
  static std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                                        std::vector<int64_t> fallback);

  // The nodes reading value `name`, and whether it is a graph output.
  const std::vector<const onnx::NodeProto*>& consumers(const std::string& name) const;
  bool is_graph_output(const std::string& name) const { return graph_outputs_.count(name) != 0; }
  // Marks `n` as done by an earlier node (a MatMul's Add, fused).
  void skip(const onnx::NodeProto& n) { skipped_.insert(&n); }
  bool skipped(const onnx::NodeProto& n) const { return skipped_.count(&n) != 0; }

  int64_t opset() const { return out_.opset; }
  ImportedModel& out() { return out_; }
  // A name for `n` in the config: its weight's PyTorch prefix ("layer1.0.conv1"
  // from "layer1.0.conv1.weight"), else its node name, made valid and unique.
  std::string op_name(const onnx::NodeProto& n, const std::string& suffix);
  std::string describe(const onnx::NodeProto& n) const;

 private:
  std::string unique_name(std::string base);

  ImportedModel& out_;
  const ImportOptions& options_;
  std::map<std::string, Value> values_;
  std::map<std::string, HostTensor> constants_;  // initializers, decoded once
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, const onnx::ValueInfoProto*> graph_inputs_;
  std::map<std::string, std::vector<int64_t>> inferred_;  // ONNX shape inference's shapes
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<const onnx::NodeProto*> skipped_;
  std::set<std::string> names_;
  std::map<const onnx::NodeProto*, int> index_;
};

// One ONNX op type's mapping: adds devmap ops (or constants) for the node,
// or records why it cannot.
using NodeImporter = std::function<void(Importer&, const onnx::NodeProto&)>;
// The op types of each family, registered by onnx_import.cpp.
void register_layer_importers(std::map<std::string, NodeImporter>& table);
void register_activation_importers(std::map<std::string, NodeImporter>& table);
void register_shape_importers(std::map<std::string, NodeImporter>& table);
void register_constant_importers(std::map<std::string, NodeImporter>& table);

}  // namespace devmap::onnx_io
