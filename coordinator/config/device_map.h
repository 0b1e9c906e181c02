// The `device_map` section: the default device and the ordered
// pattern -> device rules of device_map.place.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/yaml/source.h"

namespace devmap {

// A device_map.place rule with the YAML key it came from, for messages.
struct PlaceEntry {
  PlaceRule rule;
  YAML::Node key;
  std::string origin;  // "cfg.yaml:40:7" or "--set KEY=VALUE": where the pattern was written
};

struct DeviceMapSection {
  std::string default_device;     // declared; the first declared device when not given
  std::vector<PlaceEntry> place;  // in document order (yaml-cpp keeps mapping order)
};

// Reads `device_map` (a Null node reads as an empty one). Checks that every
// device it names is declared and every pattern is well formed; whether a
// pattern matches an op is checked later, by check_place_matches.
DeviceMapSection read_device_map(const YamlSource& src, const YAML::Node& node, const std::vector<DeviceSpec>& devices);

// Fails at the pattern of the first rule that matches no op of `graph`:
//   "device_map.place pattern 'dense*' matches no op (ops: image, label, ...)"
//   "device_map.place 'fc9' names no op (did you mean 'fc1'?)"
//   "device_map.place 'features' names a group, not an op: ..."
void check_place_matches(const std::vector<PlaceEntry>& place, const Graph& graph,
                         const std::vector<std::string>& group_names, const YamlSource& src);

}  // namespace devmap
