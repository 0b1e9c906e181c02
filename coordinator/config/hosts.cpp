#include "coordinator/config/hosts.h"

#include <algorithm>
#include <cctype>

#include "coordinator/config/names.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {
namespace {

const char* const kHostNameRule =
    "a host name is 1-63 letters, digits, '-' and '.', starting with a letter or digit, e.g. node1";

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

bool is_valid_host_name(const std::string& name) {
  if (name.empty() || name.size() > 63 || !alnum(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return alnum(c) || c == '-' || c == '.'; });
}

HostedDeviceName split_host(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos) return {"", name};
  return {name.substr(0, slash), name.substr(slash + 1)};
}

bool is_device_name_syntax(const std::string& name) {
  const HostedDeviceName hosted = split_host(name);
  if (name.find('/') != std::string::npos && !is_valid_host_name(hosted.host)) return false;
  return parse_device_name(hosted.device).has_value();
}

std::vector<std::string> read_hosts(const YamlSource& src, const YAML::Node& node, const YAML::Node& anchor) {
  if (!node.IsSequence() || node.size() == 0)
    src.fail(anchor, std::string("hosts must be ") +
                         (node.IsSequence() ? "a list of at least one host name"
                                            : "a list of host names, got " + describe_node(node)) +
                         ", e.g. hosts: [node1, node2]");
  std::vector<std::string> hosts;
  for (const YAML::Node& element : node) {
    auto name = scalar_string(element);
    if (!name) src.fail(element, "hosts must hold host names, got " + describe_node(element));
    if (!is_valid_host_name(*name))
      src.fail(element, "hosts: bad host name " + quoted(*name) + " (" + kHostNameRule + ")");
    // Host names ignore case (RFC 4343): vm and VM are one host.
    const auto same = std::find_if(hosts.begin(), hosts.end(), [&](const std::string& h) {
      return std::equal(h.begin(), h.end(), name->begin(), name->end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
      });
    });
    if (same != hosts.end() && *same == *name) src.fail(element, "hosts lists " + quoted(*name) + " twice");
    if (same != hosts.end())
      src.fail(element, "hosts lists " + quoted(*same) + " and " + quoted(*name) +
                            ": host names ignore case, so they are the same host; list it once");
    hosts.push_back(*name);
  }
  return hosts;
}

std::optional<std::string> host_problem(const std::string& name, const std::vector<std::string>& hosts) {
  if (name.find('/') == std::string::npos) return std::nullopt;
  const HostedDeviceName hosted = split_host(name);
  if (!is_valid_host_name(hosted.host))
    return "bad host name " + quoted(hosted.host) + " in device name " + quoted(name) + " (" + kHostNameRule + ")";
  if (hosts.empty())
    return "device " + quoted(name) + " names host " + quoted(hosted.host) +
           ", but the config has no hosts section (declare it, e.g. hosts: [" + hosted.host + "], or write " +
           quoted(hosted.device) + " for this machine)";
  if (std::find(hosts.begin(), hosts.end(), hosted.host) == hosts.end())
    return "device " + quoted(name) + " names host " + quoted(hosted.host) +
           ", which is not declared in hosts (declared: " + join_names(hosts) + ")";
  return std::nullopt;
}

}  // namespace devmap
