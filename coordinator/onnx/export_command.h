// devmap export CONFIG --weights W --output MODEL.onnx: the config's
// forward graph with the weights (running statistics included) as ONNX.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace devmap::onnx_io {

struct ExportCommand {
  std::string config_path;
  std::vector<std::string> overrides;  // --set
  std::string weights;                 // safetensors written by train
  std::string output;                  // the ONNX file
};

// Returns 0. Throws devmap::Error (kInvalidInput, exit 2) for a missing
// option, a config or weights that do not fit, or an op with no export.
int run_export(const ExportCommand& command, std::ostream& out);

}  // namespace devmap::onnx_io
