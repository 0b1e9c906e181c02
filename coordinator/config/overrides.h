// --set overrides: "KEY.PATH=VALUE" strings applied to a config's YAML tree
// before validation.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "coordinator/config/yaml/source.h"

namespace devmap {

// Applies each override in order. KEY is a path of keys joined by '.'
// (device names keep their ':'): "train.epochs", "devices.cpu:0.threads",
// model.ops.NAME.KEY for a key or attribute of the op or group NAME, found
// at any depth of groups ("model.ops.conv1.filters"), and
// device_map.place.PATTERN, where PATTERN is the rest of the path ("fc*",
// "block.*"): it replaces that pattern's device in place, or appends the
// pattern after the file's. VALUE is read as YAML, so "[1, 2]" is a list and "" an empty value. Every
// key on the path must be one the config accepts there; mappings missing on
// the way are created (an op must exist). Each value is registered with
// `src`, so later messages about it start "--set KEY=VALUE: ".
// Throws devmap::Error (kInvalidInput) "--set KEY=VALUE: ..." for a bad path.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, YamlSource& src);

}  // namespace devmap
