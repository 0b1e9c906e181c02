#include "coordinator/plan/device_map_writer.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <sstream>

#include "coordinator/plan/auto_split.h"
#include "core/graph/split_op.h"

namespace devmap {

namespace {

// Drops the `device` of every op and group under `ops`: the emitted
// device_map alone says where each op runs.
void drop_devices(YAML::Node ops) {
  if (!ops.IsSequence()) return;
  for (YAML::Node item : ops) {
    if (!item.IsMap()) continue;
    item.remove("device");
    if (item["ops"]) drop_devices(item["ops"]);
  }
}

// The op item named `name` under `ops` (in groups too), if there is one.
std::optional<YAML::Node> op_item(YAML::Node ops, const std::string& name) {
  if (!ops.IsSequence()) return std::nullopt;
  for (YAML::Node item : ops) {
    if (!item.IsMap()) continue;
    if (item["ops"]) {
      if (std::optional<YAML::Node> found = op_item(item["ops"], name)) return found;
    } else if (item["name"] && item["name"].as<std::string>() == name) {
      return item;
    }
  }
  return std::nullopt;
}

// What `auto` chose beyond placement written as keys: each split op's
// `split`, each conv's `algorithm`, `offload: parameters` on the devices it
// offloaded.
void write_levers(YAML::Node& root, const Config& config) {
  for (const auto& [op, shares] : config.auto_splits)
    if (std::optional<YAML::Node> item = op_item(root["model"]["ops"], op))
      (*item)["split"] = YAML::Load(split_key_text(shares));
  for (const auto& [op, algorithm] : config.auto_algorithms)
    if (std::optional<YAML::Node> item = op_item(root["model"]["ops"], op)) (*item)["algorithm"] = algorithm;
  for (const DeviceSpec& d : config.devices)
    if (d.offload && !d.offload_given) root["devices"][d.name]["offload"] = "parameters";
}

}  // namespace

std::string config_with_device_map(const EmittedMap& m) {
  const Graph& g = *m.graph;
  std::map<std::string, int> ops_on;
  for (const Node& n : g.nodes())
    if (!n.device.empty()) ++ops_on[n.device];
  std::string default_device = m.config->default_device;
  int most = -1;
  for (const auto& [device, count] : ops_on)
    if (count > most) {
      most = count;
      default_device = device;
    }
  YAML::Node root = YAML::Load(m.config->resolved_yaml);
  YAML::Node device_map;
  device_map["default"] = default_device;
  YAML::Node place(YAML::NodeType::Map);
  for (int i = 0; i < g.size(); ++i) {
    const Node& n = g.node(i);
    if (!n.device.empty() && n.device != default_device && !n.schema->fed_by_coordinator() && !made_by_split(g, i))
      place[n.name] = n.device;
  }
  if (place.size() > 0) device_map["place"] = place;
  root["device_map"] = device_map;
  if (root["model"] && root["model"]["ops"]) {
    drop_devices(root["model"]["ops"]);
    write_levers(root, *m.config);
  }
  YAML::Node train = root["train"] ? root["train"] : YAML::Node(YAML::NodeType::Map);
  YAML::Node pipeline = train["pipeline"] ? train["pipeline"] : YAML::Node(YAML::NodeType::Map);
  pipeline["micro_batches"] = m.micro_batches;
  pipeline["schedule"] = pipeline_kind_name(m.schedule);
  train["pipeline"] = pipeline;
  root["train"] = train;
  std::ostringstream out;
  std::istringstream header(m.header);
  for (std::string line; std::getline(header, line);) out << "# " << line << "\n";
  YAML::Emitter e;
  e << root;
  out << e.c_str() << "\n";
  return out.str();
}

}  // namespace devmap
