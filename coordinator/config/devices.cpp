#include "coordinator/config/devices.h"

#include <algorithm>

#include "coordinator/config/hosts.h"
#include "coordinator/config/keys.h"
#include "coordinator/config/names.h"
#include "coordinator/config/size.h"
#include "coordinator/config/yaml/map.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {

int64_t read_memory_limit(const MapReader& map, const std::string& key) {
  const YAML::Node& limit = map.value(key);
  if (auto negative = scalar_int(limit); negative && *negative < 0)
    map.fail_value(key, "must be >= 0, got " + std::to_string(*negative));
  auto bytes = limit.IsScalar() ? parse_byte_size(limit.Scalar()) : std::nullopt;
  if (!bytes)
    map.fail_value(key, "must be a number of bytes or a size such as 64MiB or 1.5GiB, got " + describe_node(limit) +
                            " (units: " + kByteSizeUnits + ")");
  return *bytes;
}

namespace {

// A list of distinct core ids in [0, kMaxCpuCores); [] means not pinned.
std::vector<int> read_affinity(const YamlSource& src, const MapReader& map) {
  const YAML::Node& list = map.value("affinity");
  if (!list.IsSequence())
    map.fail_value("affinity", "must be a list of CPU core ids such as [0, 1], got " + describe_node(list));
  const std::string label = map.label("affinity");
  std::vector<int> cores;
  for (const YAML::Node& element : list) {
    auto core = scalar_int(element);
    if (!core) src.fail(element, label + " must hold CPU core ids (integers), got " + describe_node(element));
    if (*core < 0 || *core >= kMaxCpuCores)
      src.fail(element, label + " must hold core ids between 0 and " + std::to_string(kMaxCpuCores - 1) + ", got " +
                            std::to_string(*core));
    if (std::find(cores.begin(), cores.end(), *core) != cores.end())
      src.fail(element, label + " lists core " + std::to_string(*core) + " twice");
    cores.push_back(static_cast<int>(*core));
  }
  return cores;
}

DeviceSpec read_device(const YamlSource& src, const YAML::Node& key, const YAML::Node& value,
                       const std::vector<std::string>& hosts) {
  DeviceSpec spec;
  spec.name = key.Scalar();
  if (auto problem = host_problem(spec.name, hosts)) src.fail(key, "devices: " + *problem);
  spec.host = split_host(spec.name).host;
  auto parsed = parse_device_name(split_host(spec.name).device);
  if (!parsed) src.fail(key, "devices: " + bad_device_name_message(spec.name));
  spec.kind = parsed->kind;
  spec.index = parsed->index;
  spec.loc = src.loc(key);
  const std::string scope = "devices." + spec.name;
  MapReader map(src, value, {scope, "in " + scope, scope + ".", ""}, config_keys::kDevice);
  spec.threads = static_cast<int>(map.get_int("threads", 1, 1, 1024));
  if (map.has("memory_limit")) spec.memory_limit = read_memory_limit(map);
  if (map.has("affinity")) spec.affinity = read_affinity(src, map);
  if (map.has("offload")) {
    spec.offload_given = true;
    spec.offload = map.get_choice("offload", "none", {"none", "parameters"}) == "parameters";
  }
  return spec;
}

}  // namespace

std::vector<DeviceSpec> read_devices(const YamlSource& src, const YAML::Node& node, const YAML::Node& anchor,
                                     const std::vector<std::string>& hosts) {
  if (!node.IsMap() || node.size() == 0)
    src.fail(anchor, std::string("devices must ") +
                         (node.IsMap() || node.IsNull() ? "declare at least one device"
                                                        : "be a mapping of device names, got " + describe_node(node)) +
                         ", e.g. devices: {cpu:0: {threads: 2}}");
  std::vector<DeviceSpec> devices;
  for (const auto& kv : node) devices.push_back(read_device(src, kv.first, kv.second, hosts));
  return devices;
}

std::string declared_devices(const std::vector<DeviceSpec>& devices) {
  std::vector<std::string> names;
  for (const DeviceSpec& d : devices) names.push_back(d.name);
  return join_names(names);
}

std::string read_declared_device(const YamlSource& src, const YAML::Node& value, const YAML::Node& anchor,
                                 const DeviceUse& use, const std::vector<DeviceSpec>& devices) {
  auto name = scalar_string(value);
  if (!name) src.fail(anchor, use.what + " must be a device name such as cpu:0, got " + describe_node(value));
  if (*name == kAutoDevice) return *name;
  if (!is_device_name_syntax(*name)) src.fail(anchor, use.who + ": " + bad_device_name_message(*name));
  for (const DeviceSpec& d : devices)
    if (d.name == *name) return *name;
  src.fail(anchor, use.who + " " + use.verb + " '" + *name +
                       "', which is not declared in devices (declared: " + declared_devices(devices) + ")");
}

}  // namespace devmap
