// Builds a config's graph from its `model` section.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "coordinator/config.h"
#include "coordinator/yaml_source.h"

namespace devmap {

// Reads model.ops in order: checks names (valid, unique), ops (known),
// attributes (against the op's AttrSpecs; absent optional ones are set to
// their defaults so kernels can read every attribute), inputs (defined
// earlier, as many as the op takes) and devices (declared; ops without one
// go on `default_device`). Then infers shapes and checks the roles `job`
// needs: one input op, and for "train" one labels op and one loss op.
// Throws devmap::Error (kInvalidInput) located at the offending node.
Graph build_model_graph(const YAML::Node& model, const YamlSource& src, const std::string& job,
                        const std::vector<DeviceSpec>& devices, const std::string& default_device);

}  // namespace devmap
