// The ONNX ops that keep the shape: Relu, LeakyRelu, Sigmoid, Tanh, Gelu,
// Softmax, Dropout, Identity.
#include "coordinator/onnx/import_state.h"

namespace devmap::onnx_io {
namespace {

// Makes `out` the same value as `in` (constant, data or unknown).
void alias(Importer& im, const onnx::NodeProto& n, const std::string& in, const std::string& out) {
  if (const HostTensor* c = im.constant(in)) return im.set_const(out, *c);
  const Importer::Value* v = im.data(in);
  if (v && v->kind == Importer::Value::Kind::kData) return im.set_data(out, v->node, v->dims);
  im.set_unknown(n);
}

void import_softmax(Importer& im, const onnx::NodeProto& n) {
  const std::string& x = Importer::input(n, 0);
  const std::optional<std::vector<int64_t>> xd = im.dims(x);
  if (!xd) return im.needs_shapes(n);
  const int64_t rank = static_cast<int64_t>(xd->size());
  int64_t axis = Importer::attr_int(n, "axis", im.opset() < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  // Before opset 13 Softmax flattens from `axis`: axis 1 is each sample's features.
  const bool per_sample = axis == 1 && (rank == 2 || im.opset() < 13);
  if (!per_sample)
    return im.unsupported(n, "needs softmax over each sample's features (axis 1 of [N, F]), has axis " +
                                 std::to_string(Importer::attr_int(n, "axis", im.opset() < 13 ? 1 : -1)) +
                                 " of a rank-" + std::to_string(rank) + " tensor");
  int in = im.data_node_any_shape(x);
  if (in >= 0 && im.out().graph.node(in).out_shape.rank() != 1) in = im.emit(n, "flatten", {in}, {}, {}, ".flat");
  const int id = im.emit(n, "softmax", {in}, {});
  if (id >= 0) im.set_data(n.output(0), id, *xd);
}

void import_dropout(Importer& im, const onnx::NodeProto& n) {
  if (n.output_size() > 1 && !n.output(1).empty() &&
      (!im.consumers(n.output(1)).empty() || im.is_graph_output(n.output(1))))
    return im.unsupported(n, "needs the dropout mask as an output");
  double rate = Importer::attr_float(n, "ratio", 0.5);
  if (im.opset() < 7 && Importer::attr_int(n, "is_test", 0) == 0)
    return im.unsupported(n, "needs dropout that is off at inference (is_test is 0: a random output)");
  if (im.opset() >= 12) {
    rate = 0.5;
    if (im.has_input(n, 1)) {
      const HostTensor* r = im.param(Importer::input(n, 1));
      if (!r || r->numel() != 1) return im.unsupported(n, "needs a constant ratio");
      rate = r->values[0];
    }
    if (im.has_input(n, 2)) {
      const HostTensor* t = im.param(Importer::input(n, 2));
      if (!t || t->numel() != 1) return im.unsupported(n, "needs a constant training_mode");
      if (t->values[0] != 0)
        return im.unsupported(n, "needs dropout that is off at inference (training_mode is true: a random output)");
    }
  }
  if (rate == 0.0) return alias(im, n, Importer::input(n, 0), n.output(0));
  im.same_shape_op(n, "dropout", {{"rate", rate}});
}

}  // namespace

void register_activation_importers(std::map<std::string, NodeImporter>& table) {
  table["Relu"] = [](Importer& im, const onnx::NodeProto& n) { im.same_shape_op(n, "relu", {}); };
  table["Sigmoid"] = [](Importer& im, const onnx::NodeProto& n) { im.same_shape_op(n, "sigmoid", {}); };
  table["Tanh"] = [](Importer& im, const onnx::NodeProto& n) { im.same_shape_op(n, "tanh", {}); };
  table["LeakyRelu"] = [](Importer& im, const onnx::NodeProto& n) {
    im.same_shape_op(n, "leaky_relu", {{"negative_slope", Importer::attr_float(n, "alpha", 0.01)}});
  };
  table["Gelu"] = [](Importer& im, const onnx::NodeProto& n) {
    const std::string approximate = Importer::attr_string(n, "approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      return im.unsupported(n, "needs approximate none or tanh, has " + approximate);
    im.same_shape_op(n, "gelu", {{"approximate", approximate}});
  };
  table["Softmax"] = import_softmax;
  table["Dropout"] = import_dropout;
  table["Identity"] = [](Importer& im, const onnx::NodeProto& n) { alias(im, n, Importer::input(n, 0), n.output(0)); };
}

}  // namespace devmap::onnx_io
