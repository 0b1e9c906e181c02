#include "coordinator/onnx/import_command.h"

#include <filesystem>
#include <ostream>

#include "coordinator/onnx/config_writer.h"
#include "coordinator/onnx/onnx_import.h"
#include "coordinator/onnx/weights_file.h"
#include "coordinator/util/atomic_file.h"
#include "coordinator/util/command_name.h"
#include "core/base/error.h"

namespace devmap::onnx_io {

int run_import(const ImportCommand& command, std::ostream& out) {
  namespace fs = std::filesystem;
  const onnx::ModelProto proto = read_model(command.model_path);
  ImportedModel model = import_model(proto);
  // What a trainable config needs beyond the nodes: one image input, one
  // output of class scores.
  auto& bad = model.unsupported;
  if (model.input_nodes.size() != 1 && bad.empty())
    bad.push_back({"(model)", "inputs",
                   "needs one input (the images devmap feeds), has " + std::to_string(model.input_nodes.size())});
  if (model.output_nodes.size() != 1)
    bad.push_back({"(model)", "outputs",
                   "needs one output (the class scores), has " + std::to_string(model.output_nodes.size())});
  if (bad.empty() && model.output_nodes[0] < 0)
    bad.push_back({"output " + model.output_names[0], "output", "needs an output computed from the input"});
  if (bad.empty()) {
    const Shape& s = model.graph.node(model.output_nodes[0]).out_shape;
    if (s.rank() != 1 || s[0] < 2)
      bad.push_back({"output " + model.output_names[0], "output",
                     "needs class scores, a vector of at least 2 per sample, has " + s.to_string()});
  }
  if (!bad.empty()) throw_invalid(unsupported_message(command.model_path, bad));

  const fs::path config = command.output.empty() ? fs::path(command.model_path).filename().replace_extension(".yaml")
                                                 : fs::path(command.output);
  const fs::path weights = fs::path(config).replace_extension(".safetensors");
  write_weights(weights.string(), model.weights);
  write_file_atomically(config.string(),
                        config_yaml(model, {command.model_path, fs::absolute(weights).lexically_normal().string()}),
                        "config");
  int64_t values = 0;
  for (const auto& [name, t] : model.weights) values += t.numel();
  out << "imported " << command.model_path << " (" << (model.producer.empty() ? "?" : model.producer) << ", opset "
      << model.opset << "): " << proto.graph().node_size() << " ONNX nodes as " << model.graph.size()
      << " devmap ops (the input included), " << model.weights.size() << " weight tensors (" << values << " values)\n";
  for (const std::string& note : model.layout_notes) out << "layout: " << note << "\n";
  out << "wrote " << config.string() << " and " << weights.string() << "\n"
      << "next: fill in its data and train sections, then " << command_name() << " train " << config.string() << "\n";
  return 0;
}

}  // namespace devmap::onnx_io
