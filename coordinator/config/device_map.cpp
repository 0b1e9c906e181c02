#include "coordinator/config/device_map.h"

#include <algorithm>

#include "coordinator/config/devices.h"
#include "coordinator/config/glob.h"
#include "coordinator/config/keys.h"
#include "coordinator/config/names.h"
#include "coordinator/config/yaml/map.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {
namespace {

constexpr size_t kOpsListed = 10;  // op names a "matches no op" message lists

std::string op_list(const Graph& graph) {
  std::vector<std::string> names;
  for (const Node& n : graph.nodes()) {
    if (names.size() == kOpsListed) {
      names.push_back("...");
      break;
    }
    names.push_back(n.name);
  }
  return join_names(names);
}

// "file:line:col" or "--set KEY=VALUE": YamlSource's prefix without ": ".
std::string origin_of(const YamlSource& src, const YAML::Node& node) {
  std::string prefix = src.prefix(node);
  return prefix.substr(0, prefix.size() - 2);
}

std::vector<PlaceEntry> read_place(const YamlSource& src, const MapReader& map,
                                   const std::vector<DeviceSpec>& devices) {
  const YAML::Node& node = map.value("place");
  if (node.IsNull()) return {};
  if (!node.IsMap())
    map.fail_value("place", "must be a mapping from op-name patterns to devices, such as {\"fc*\": cpu:1}, got " +
                                describe_node(node));
  std::vector<PlaceEntry> place;
  for (const auto& kv : node) {
    // check_yaml_tree has made every key a scalar and unique.
    PlaceEntry entry;
    entry.key = kv.first;
    entry.rule.pattern = kv.first.Scalar();
    entry.rule.loc = src.loc(kv.first);
    entry.origin = origin_of(src, kv.first);
    const std::string who = "device_map.place " + quoted(entry.rule.pattern);
    if (auto why = glob_syntax_error(entry.rule.pattern))
      src.fail(kv.first, "device_map.place pattern " + quoted(entry.rule.pattern) + " is malformed: " + *why);
    const bool empty = kv.second.IsNull() && !src.from_override(kv.second);
    entry.rule.device =
        read_declared_device(src, kv.second, empty ? kv.first : kv.second, {who, who, "places ops on"}, devices);
    place.push_back(std::move(entry));
  }
  return place;
}

}  // namespace

DeviceMapSection read_device_map(const YamlSource& src, const YAML::Node& node,
                                 const std::vector<DeviceSpec>& devices) {
  MapReader map(src, node, {"device_map", "in device_map", "device_map.", ""}, config_keys::kDeviceMap);
  DeviceMapSection out;
  out.default_device = devices.front().name;
  if (map.has("default"))
    out.default_device = read_declared_device(src, map.value("default"), map.anchor("default"),
                                              {"device_map.default", "device_map.default", "is"}, devices);
  if (map.has("place")) out.place = read_place(src, map, devices);
  return out;
}

void check_place_matches(const std::vector<PlaceEntry>& place, const Graph& graph,
                         const std::vector<std::string>& group_names, const YamlSource& src) {
  for (const PlaceEntry& entry : place) {
    const std::string& pattern = entry.rule.pattern;
    const auto& nodes = graph.nodes();
    if (std::any_of(nodes.begin(), nodes.end(), [&](const Node& n) { return glob_match(pattern, n.name); })) continue;
    if (is_glob(pattern))
      src.fail(entry.key,
               "device_map.place pattern " + quoted(pattern) + " matches no op (ops: " + op_list(graph) + ")");
    const std::string head = "device_map.place " + quoted(pattern);
    if (std::find(group_names.begin(), group_names.end(), pattern) != group_names.end())
      src.fail(entry.key, head +
                              " names a group, not an op: place patterns match op names (give the group a device, "
                              "or write a pattern for its ops)");
    std::vector<std::string> names;
    for (const Node& n : nodes) names.push_back(n.name);
    if (auto near = nearest_name(pattern, names))
      src.fail(entry.key, head + " names no op (did you mean '" + *near + "'?)");
    src.fail(entry.key, head + " names no op (ops: " + op_list(graph) + ")");
  }
}

}  // namespace devmap
