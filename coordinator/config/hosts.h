// The `hosts` section, and device names that carry a host ("node1/cpu:0").
// A config without hosts runs on this machine; one with hosts runs under an
// MPI launcher, one coordinator rank per host (coordinator/app/job_ranks.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "coordinator/config/yaml/source.h"

namespace devmap {

// Host names: 1-63 letters, digits, '-' and '.', starting with a letter or
// a digit (a host name or an IPv4 address, as mpirun --host takes them).
bool is_valid_host_name(const std::string& name);

// "node1/cpu:0" -> {"node1", "cpu:0"}; "cpu:0" -> {"", "cpu:0"}. Splits at
// the first '/'.
struct HostedDeviceName {
  std::string host;    // empty: this machine
  std::string device;  // "cpu:0"
};
HostedDeviceName split_host(const std::string& name);

// Whether `name` is a device name, with or without a host: cpu:N, gpu:N,
// HOST/cpu:N or HOST/gpu:N with a valid host name.
bool is_device_name_syntax(const std::string& name);

// Reads `hosts`: a non-empty list of distinct host names, in file order.
// `anchor` is where to point when `node` is not such a list.
std::vector<std::string> read_hosts(const YamlSource& src, const YAML::Node& node, const YAML::Node& anchor);

// What is wrong with the host part of device name `name` given the declared
// `hosts`, or nothing (no host part, or a declared one):
//   "bad host name '' in device name '/cpu:0' (...)"
//   "device 'node1/cpu:0' names host 'node1', but the config has no hosts section (...)"
//   "device 'node3/cpu:0' names host 'node3', which is not declared in hosts (declared: node1, node2)"
std::optional<std::string> host_problem(const std::string& name, const std::vector<std::string>& hosts);

}  // namespace devmap
