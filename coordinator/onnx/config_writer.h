// The devmap config `devmap import` writes: the imported graph as
// model.ops, a labels op, a loss and an accuracy on the model's class
// scores, data and train sections to fill in (train.init_weights naming
// the imported weights) and one CPU device.
#pragma once

#include <string>

#include "coordinator/onnx/onnx_import.h"

namespace devmap::onnx_io {

struct ConfigText {
  std::string source;        // the ONNX file, for the header
  std::string weights_path;  // train.init_weights
};

// The config as YAML text. `model` has one input op and one output whose
// per-sample shape is [classes] (import_command checks): the loss reads
// it, or the input of a softmax computing it.
std::string config_yaml(const ImportedModel& model, const ConfigText& text);

}  // namespace devmap::onnx_io
