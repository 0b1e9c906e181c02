#include "coordinator/config/split.h"

#include <cmath>
#include <sstream>

#include "coordinator/config/devices.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {
namespace {

// What `value` (a split mapping) gives: "no devices", "one part", else what
// describe_node says (for a value that is not a mapping).
std::string describe_split(const YAML::Node& value, size_t parts) {
  if (!value.IsMap()) return describe_node(value);
  return value.size() == 0 ? "no devices" : parts == 1 ? "one part" : std::to_string(parts) + " parts";
}

// Parts in a mapping's values: a list counts its items, anything else one.
size_t count_parts(const YAML::Node& value) {
  size_t parts = 0;
  if (value.IsMap())
    for (auto it = value.begin(); it != value.end(); ++it) parts += it->second.IsSequence() ? it->second.size() : 1;
  return parts;
}

}  // namespace

std::vector<SplitShare> read_split(const YamlSource& src, const YAML::Node& key, const YAML::Node& value,
                                   const Node& node, const std::vector<DeviceSpec>& devices) {
  const std::string who = "op '" + node.name + "' split";
  const YAML::Node& anchor = value.IsNull() ? key : value;
  if (const std::string refusal = split_refusal(node); !refusal.empty()) src.fail(key, refusal);
  const size_t parts = count_parts(value);
  if (!value.IsMap() || parts < 2)
    src.fail(anchor, who + " must map devices to their shares of the op's " + node.schema->split_attr +
                         ", two or more parts in all (a list of shares runs several parts on one device), such as " +
                         "{cpu:0: 0.25, cpu:1: 0.75} or {cpu:0: [0.5, 0.5]}, got " + describe_split(value, parts));
  std::vector<SplitShare> out;
  double sum = 0;
  // A device named twice is a duplicate key, refused by the YAML reader.
  for (auto it = value.begin(); it != value.end(); ++it) {
    const YAML::Node device_node = it->first, shares_node = it->second;
    const std::string device =
        read_declared_device(src, device_node, device_node, {who + " device", who, "puts a part on"}, devices);
    if (device == kAutoDevice)
      src.fail(device_node, who + " names 'auto': a split names the devices of its parts (declared: " +
                                declared_devices(devices) + ")");
    if (shares_node.IsSequence() && shares_node.size() == 0)
      src.fail(shares_node, who + " shares of " + device + " must be a number or a list of one or more numbers, got " +
                                "an empty list");
    const bool list = shares_node.IsSequence();
    for (size_t k = 0; k < (list ? shares_node.size() : 1); ++k) {
      const YAML::Node share_node = list ? shares_node[k] : shares_node;
      const std::optional<double> share = scalar_number(share_node);
      if (!share || !(*share > 0 && *share <= 1))
        src.fail(share_node.IsNull() ? device_node : share_node,
                 who + " share " + (list ? std::to_string(k) + " " : std::string()) + "of " + device +
                     " must be a number in (0, 1], got " + describe_node(share_node));
      out.push_back({device, *share});
      sum += *share;
    }
  }
  if (std::abs(sum - 1.0) > 1e-6) {
    std::ostringstream total;
    total << sum;
    src.fail(anchor, who + " shares sum to " + total.str() + "; they must sum to 1");
  }
  std::vector<double> shares;
  for (const SplitShare& s : out) shares.push_back(s.share);
  try {
    split_bounds(node.attrs.get_int(node.schema->split_attr), shares, who);
  } catch (const Error& e) {
    src.fail(anchor, e.what());
  }
  return out;
}

}  // namespace devmap
