#include "coordinator/config_placement.h"

#include <cassert>

#include "coordinator/config_glob.h"

namespace devmap {

std::vector<std::string> place_ops(Graph& graph, const std::vector<DeviceRequest>& requests,
                                   const std::vector<PlaceEntry>& place, const std::string& default_device) {
  assert(requests.size() == graph.nodes().size());
  std::vector<std::string> reasons;
  for (int i = 0; i < graph.size(); ++i) {
    Node& node = graph.node(i);
    const DeviceRequest& request = requests[static_cast<size_t>(i)];
    const PlaceEntry* rule = nullptr;
    for (const PlaceEntry& entry : place)
      if (glob_match(entry.rule.pattern, node.name)) {
        rule = &entry;
        break;
      }
    if (rule) {
      node.device = rule->rule.device;
      reasons.push_back("device_map.place '" + rule->rule.pattern + "' (" + rule->origin + ")");
    } else if (!request.own.empty()) {
      node.device = request.own;
      reasons.push_back("op's device");
    } else if (!request.group_device.empty()) {
      node.device = request.group_device;
      reasons.push_back("group '" + request.group + "'");
    } else {
      node.device = default_device;
      reasons.push_back("device_map.default");
    }
  }
  return reasons;
}

}  // namespace devmap
