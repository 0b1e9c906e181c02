#include "coordinator/config/split.h"

#include <cmath>
#include <sstream>

#include "coordinator/config/devices.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {

std::vector<SplitShare> read_split(const YamlSource& src, const YAML::Node& key, const YAML::Node& value,
                                   const Node& node, const std::vector<DeviceSpec>& devices) {
  const std::string who = "op '" + node.name + "' split";
  const YAML::Node& anchor = value.IsNull() ? key : value;
  if (const std::string refusal = split_refusal(node); !refusal.empty()) src.fail(key, refusal);
  if (!value.IsMap() || value.size() < 2)
    src.fail(anchor,
             who + " must map two or more devices to their shares of the op's " + node.schema->split_attr +
                 ", such as {cpu:0: 0.25, cpu:1: 0.75}, got " +
                 (value.IsMap() ? std::string(value.size() == 1 ? "one device" : "no devices") : describe_node(value)));
  std::vector<SplitShare> out;
  double sum = 0;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const YAML::Node device_node = it->first, share_node = it->second;
    SplitShare part;
    part.device =
        read_declared_device(src, device_node, device_node, {who + " device", who, "puts a part on"}, devices);
    if (part.device == kAutoDevice)
      src.fail(device_node, who + " names 'auto': a split names the devices of its parts (declared: " +
                                declared_devices(devices) + ")");
    for (const SplitShare& earlier : out)
      if (earlier.device == part.device) src.fail(device_node, who + " names device '" + part.device + "' twice");
    const std::optional<double> share = scalar_number(share_node);
    if (!share || !(*share > 0 && *share <= 1))
      src.fail(share_node.IsNull() ? device_node : share_node,
               who + " share of " + part.device + " must be a number in (0, 1], got " + describe_node(share_node));
    part.share = *share;
    sum += *share;
    out.push_back(part);
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
