#include "coordinator/onnx/onnx_import.h"

#include "coordinator/onnx/import_state.h"
#include "coordinator/onnx/layout_pass.h"
#include "core/base/error.h"

namespace devmap::onnx_io {
namespace {

const std::map<std::string, NodeImporter>& importers() {
  static const std::map<std::string, NodeImporter> kTable = [] {
    std::map<std::string, NodeImporter> t;
    register_layer_importers(t);
    register_activation_importers(t);
    register_shape_importers(t);
    register_constant_importers(t);
    return t;
  }();
  return kTable;
}

// What devmap would need for an op type it has no mapping for.
std::string need_for(const std::string& op_type) {
  if (op_type == "LSTM" || op_type == "GRU" || op_type == "RNN") return "needs a recurrent op";
  if (op_type == "Loop" || op_type == "If" || op_type == "Scan") return "needs control flow";
  if (op_type == "ConvTranspose") return "needs a transposed convolution";
  if (op_type == "Resize" || op_type == "Upsample") return "needs an upsampling op";
  return "needs a devmap op for ONNX's " + op_type;
}

}  // namespace

ImportedModel import_model(const onnx::ModelProto& original, const ImportOptions& options) {
  ImportedModel out;
  onnx::ModelProto model = original;
  out.layout_notes = fold_nhwc_layout(model);
  Importer im(model, options, out);
  if (out.opset < kMinOpset || out.opset > kMaxOpset)
    out.unsupported.push_back({"(model)", "opset",
                               "needs opset " + std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) +
                                   " of the default domain, has " + std::to_string(out.opset)});
  // Constant nodes read nothing: their values first, so that a pattern
  // starting earlier in the graph (GELU's) sees the constants after it.
  const auto& table = importers();
  for (const onnx::NodeProto& n : model.graph().node())
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      try {
        table.at("Constant")(im, n);
      } catch (const Error& e) {
        im.unsupported(n, e.what());
      }
      im.skip(n);
    }
  for (const onnx::NodeProto& n : model.graph().node()) {
    if (im.skipped(n)) continue;
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    auto it = table.find(n.op_type());
    if (!default_domain && n.op_type() != "Gelu") {
      im.unsupported(n, "needs an op of ONNX's default domain (this one is in " + n.domain() + ")");
      continue;
    }
    if (it == table.end()) {
      im.unsupported(n, need_for(n.op_type()));
      continue;
    }
    try {
      it->second(im, n);
    } catch (const Error& e) {
      im.unsupported(n, e.what());
    }
  }
  for (const auto& o : model.graph().output()) {
    out.output_names.push_back(o.name());
    const HostTensor* c = im.constant(o.name());
    if (c) out.output_constants[o.name()] = *c;
    out.output_nodes.push_back(c ? -1 : im.data_node(o.name()));
  }
  if (out.unsupported.empty()) out.graph.infer();
  return out;
}

std::vector<std::string> imported_op_types() {
  std::vector<std::string> types;
  for (const auto& [type, mapper] : importers()) types.push_back(type);
  return types;
}

std::string unsupported_message(const std::string& file, const std::vector<UnsupportedNode>& nodes) {
  std::string s =
      file + ": " + std::to_string(nodes.size()) + (nodes.size() == 1 ? " node" : " nodes") + " devmap cannot import:";
  for (const UnsupportedNode& n : nodes) s += "\n  " + n.node + " (" + n.op_type + ": " + n.need + ")";
  return s;
}

}  // namespace devmap::onnx_io
