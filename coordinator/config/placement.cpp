#include "coordinator/config/placement.h"

#include <cassert>

#include "coordinator/config/glob.h"
#include "core/graph/op_schema.h"

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
      reasons.push_back(Config::kPlacedByDefault);
    }
  }
  return reasons;
}

bool schema_supports(const OpSchema& schema, DeviceKind kind) {
  return schema.runs_on(kind);
}

void check_placed_ops_supported(const Graph& graph, const std::vector<DeviceSpec>& devices,
                                const std::vector<std::string>& reasons, const SupportsOp& supports) {
  for (int i = 0; i < graph.size(); ++i) {
    const Node& node = graph.node(i);
    if (node.device == kAutoDevice) continue;  // the planner's to place (coordinator/plan/auto_placement.h)
    const DeviceSpec* device = nullptr;
    for (const DeviceSpec& d : devices)
      if (d.name == node.device) device = &d;
    assert(device != nullptr && "placement puts ops on declared devices only");
    if (device == nullptr || supports(*node.schema, device->kind)) continue;
    const std::string kind = device_kind_name(device->kind);
    std::string runs;
    for (const std::string& op : known_op_names())
      if (supports(*find_op(op), device->kind)) runs += (runs.empty() ? "" : ", ") + op;
    std::string other;
    for (DeviceKind k : {DeviceKind::kCpu, DeviceKind::kGpu})
      if (k != device->kind && supports(*node.schema, k)) other = device_kind_name(k);
    const std::string by =
        static_cast<size_t>(i) < reasons.size() ? " (by " + reasons[static_cast<size_t>(i)] + ")" : "";
    throw_invalid(node.loc.prefix() + "op '" + node.name + "' (" + node.op() + ") is placed on '" + node.device + "'" +
                  by + ", but " + kind + " devices have no " + node.op() + " kernel (they run: " + runs + ")" +
                  (other.empty() ? "" : "; place it on a " + other + " device"));
  }
}

}  // namespace devmap
