// devmap import MODEL.onnx [--output CONFIG.yaml]: writes the config and,
// beside it, the weights (CONFIG.safetensors); prints what it wrote.
#pragma once

#include <iosfwd>
#include <string>

namespace devmap::onnx_io {

struct ImportCommand {
  std::string model_path;
  std::string output;  // the config; empty: <model stem>.yaml in the working folder
};

// Returns 0. Throws devmap::Error (kInvalidInput, exit 2) listing every
// node devmap cannot import, and for a model that is not one image input
// to one vector of class scores per sample.
int run_import(const ImportCommand& command, std::ostream& out);

}  // namespace devmap::onnx_io
