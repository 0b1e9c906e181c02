// The `devices` section, and the check every device name the user writes
// elsewhere (an op's, a group's, device_map's) goes through.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/yaml/map.h"
#include "coordinator/config/yaml/source.h"

namespace devmap {

// Largest CPU core id + 1 that devices.NAME.affinity accepts.
constexpr int kMaxCpuCores = 1024;

// Reads `devices`: a non-empty mapping from device name to
// {threads, memory_limit, affinity, offload}, in file order. `anchor` is where to
// point when `node` is not such a mapping. A device name may carry one of
// `hosts` ("node1/cpu:0"; see config_hosts.h).
std::vector<DeviceSpec> read_devices(const YamlSource& src, const YAML::Node& node, const YAML::Node& anchor,
                                     const std::vector<std::string>& hosts);

// The `key` of `map` (a device's or the coordinator's memory_limit, the
// coordinator's shared_memory_limit): a size such as 64MiB, >= 0.
int64_t read_memory_limit(const MapReader& map, const std::string& key = "memory_limit");

// "cpu:0, gpu:0": the declared devices, for messages.
std::string declared_devices(const std::vector<DeviceSpec>& devices);

// How a device name the user wrote is named in messages.
struct DeviceUse {
  std::string what;  // the value itself: "op 'fc1' device", "device_map.default"
  std::string who;   // what asks for the device: "op 'fc1'", "device_map.default"
  std::string verb;  // "is placed on", "is"
};

// Reads the device name at `value` and checks it is declared, or is
// kAutoDevice ("auto": the placement planner chooses). Fails at
// `anchor` with
//   "<what> must be a device name such as cpu:0, got a list"
//   "<who>: bad device name 'tpu:0' (expected cpu:N or gpu:N, e.g. cpu:0)"
//   "<who> <verb> 'cpu:7', which is not declared in devices (declared: cpu:0)"
std::string read_declared_device(const YamlSource& src, const YAML::Node& value, const YAML::Node& anchor,
                                 const DeviceUse& use, const std::vector<DeviceSpec>& devices);

}  // namespace devmap
