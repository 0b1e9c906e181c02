// Groups in model.ops: {group: NAME, device: DEV, ops: [...]} entries whose
// ops hold ops and further groups. Flattening them yields the ops in
// document order, each with the device its innermost enclosing group gives.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/yaml/source.h"

namespace devmap {

// One op entry of model.ops, found at any depth of groups. Not yet checked
// beyond "not a group": the op builder reads it.
struct OpEntry {
  YAML::Node item;           // the entry (a mapping for every well-formed op)
  std::string label;         // "model.ops entry 3", "group 'features' ops entry 2": for messages
  std::string group;         // the innermost enclosing group that names a device; "" when none does
  std::string group_device;  // that group's device (declared); "" when none
};

struct FlatModel {
  std::vector<OpEntry> ops;         // in document order
  std::vector<std::string> groups;  // every group's name, in document order
};

// Flattens the list `ops` (model.ops). An entry is a group when it is a
// mapping with a `group` key. Checks each group: only the keys group, device
// and ops; a valid name (the op-name rules), unique among groups and no
// op's name; a declared device when given; a non-empty ops list. Fails at
// the offending node. Depth is bounded by check_yaml_tree's nesting limit.
FlatModel flatten_model_ops(const YAML::Node& ops, const YamlSource& src, const std::vector<DeviceSpec>& devices);

}  // namespace devmap
