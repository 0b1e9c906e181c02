#include "coordinator/onnx/config_writer.h"

#include <charconv>
#include <sstream>

#include "coordinator/config/keys.h"

namespace devmap::onnx_io {
namespace {

std::string scalar(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *d);
    std::string s(buf, end);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  const auto& list = std::get<std::vector<int64_t>>(v);
  std::string s = "[";
  for (size_t k = 0; k < list.size(); ++k) s += (k ? ", " : "") + std::to_string(list[k]);
  return s + "]";
}

std::string op_line(const Node& n, const Graph& g) {
  std::string s = "    - {name: " + n.name + ", op: " + n.op();
  if (!n.inputs.empty()) {
    s += ", inputs: [";
    for (size_t k = 0; k < n.inputs.size(); ++k) s += (k ? ", " : "") + g.node(n.inputs[k]).name;
    s += "]";
  }
  for (const AttrSpec& spec : n.schema->attrs) {
    if (!n.attrs.has(spec.name)) continue;
    const AttrValue& v = n.attrs.values().at(spec.name);
    if (!spec.required && v == spec.default_value) continue;
    s += ", " + spec.name + ": " + scalar(v);
  }
  return s + "}\n";
}

// `s` as a YAML scalar: plain where that reads back as the same string.
std::string yaml_string(const std::string& s) {
  if (!s.empty() && s.find_first_of(":#'\"{}[],&*!|>%@` \t\\") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

std::string unused_name(const Graph& g, std::string name) {
  while (g.find(name) >= 0) name += "_";
  return name;
}

}  // namespace

std::string config_yaml(const ImportedModel& model, const ConfigText& text) {
  const Graph& g = model.graph;
  const Node& out = g.node(model.output_nodes.at(0));
  // The loss reads class scores: a softmax's input where the model ends in one.
  const Node& logits = out.op() == "softmax" ? g.node(out.inputs[0]) : out;
  const std::string label = unused_name(g, "label"), loss = unused_name(g, "loss"), acc = unused_name(g, "accuracy");
  std::ostringstream y;
  y << "# Imported by devmap import from " << text.source << " (" << (model.producer.empty() ? "?" : model.producer)
    << ", opset " << model.opset << "): its forward graph as\n"
    << "# model.ops, with a labels op, a loss and an accuracy on its class scores\n"
    << "# (" << logits.name << "), and its weights as train.init_weights. Put your data in `data`\n"
    << "# (Fashion-MNIST stands in), set `train`, place the ops on your devices\n"
    << "# (devices, device_map), then: devmap train THIS_FILE. docs/CONFIG.md has every key.\n";
  for (const std::string& note : model.layout_notes) y << "# Layout: " << note << "\n";
  y << "\njob: train\n\nmodel:\n  ops:\n";
  for (const Node& n : g.nodes()) y << op_line(n, g);
  y << "    - {name: " << label << ", op: labels, classes: " << logits.out_shape.numel() << "}\n"
    << "    - {name: " << loss << ", op: softmax_cross_entropy, inputs: [" << logits.name << ", " << label << "]}\n"
    << "    - {name: " << acc << ", op: accuracy, inputs: [" << logits.name << ", " << label << "]}\n\n";
  const std::string& dir = config_keys::kDatasetDir;
  y << "data:\n"
    << "  train_images: " << dir << "train-images-idx3-ubyte.gz\n"
    << "  train_labels: " << dir << "train-labels-idx1-ubyte.gz\n"
    << "  test_images: " << dir << "t10k-images-idx3-ubyte.gz\n"
    << "  test_labels: " << dir << "t10k-labels-idx1-ubyte.gz\n\n"
    << "train:\n"
    << "  epochs: 1\n"
    << "  batch_size: 64\n"
    << "  seed: 1\n"
    << "  init_weights: " << yaml_string(text.weights_path) << "   # the imported model's weights\n"
    << "  optimizer: {type: momentum, learning_rate: 0.01, momentum: 0.9}\n\n"
    << "devices:\n"
    << "  cpu:0: {threads: 1, memory_limit: 0}\n\n"
    << "device_map:\n"
    << "  default: cpu:0\n";
  return y.str();
}

}  // namespace devmap::onnx_io
