#include "coordinator/onnx/export_command.h"

#include <ostream>

#include "coordinator/config/loader.h"
#include "coordinator/onnx/onnx_export.h"
#include "coordinator/onnx/weights_file.h"
#include "core/base/error.h"

namespace devmap::onnx_io {

int run_export(const ExportCommand& command, std::ostream& out) {
  if (command.weights.empty()) throw_invalid("export needs --weights FILE (the safetensors train wrote)");
  if (command.output.empty()) throw_invalid("export needs --output FILE.onnx");
  // Loaded as a prediction job: the forward graph, no labels needed.
  std::vector<std::string> overrides{"job=predict"};
  overrides.insert(overrides.end(), command.overrides.begin(), command.overrides.end());
  const Config config = load_config(command.config_path, overrides);
  const std::map<std::string, HostTensor> weights = read_weights(command.weights);
  onnx::ModelProto model;
  try {
    model = export_model(config.graph, weights);
  } catch (const Error& e) {
    throw_invalid(command.weights + " with " + command.config_path + ": " + e.what());
  }
  write_model(model, command.output);
  out << "wrote " << command.output << ": " << model.graph().node_size() << " ONNX nodes (opset "
      << model.opset_import(0).version() << "), " << model.graph().initializer_size() << " initializers; input";
  for (const auto& i : model.graph().input()) out << " " << i.name();
  out << ", output";
  for (const auto& o : model.graph().output()) out << " " << o.name();
  out << "\n";
  return 0;
}

}  // namespace devmap::onnx_io
