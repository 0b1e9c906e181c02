// Placement: which device each op of a config runs on, and why. A pure
// pass over already-checked inputs; docs/CONFIG.md states the precedence.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/device_map.h"
#include "core/graph/graph.h"

namespace devmap {

// What the model section asks for one op; every device named is declared.
struct DeviceRequest {
  std::string own;           // the op's `device:`; "" when absent
  std::string group;         // the innermost enclosing group that names a device; "" when none
  std::string group_device;  // that group's device; "" when none
};

// Sets node.device of every op of `graph` (`requests` is parallel to its
// nodes) by the first rule that applies, highest first:
//   1. the first entry of `place` whose pattern matches the op's name
//   2. the op's own device
//   3. the device of the innermost enclosing group that names one
//   4. `default_device`
// Returns, parallel to the nodes, the rule that placed each op (the strings
// Config::placement_reason documents).
std::vector<std::string> place_ops(Graph& graph, const std::vector<DeviceRequest>& requests,
                                   const std::vector<PlaceEntry>& place, const std::string& default_device);

// Whether a device of a kind runs an op: the schema's answer
// (OpSchema::runs_on) unless a test substitutes another.
using SupportsOp = std::function<bool(const OpSchema&, DeviceKind)>;
bool schema_supports(const OpSchema& schema, DeviceKind kind);

// Asks each op's device (`devices` declares every device the ops are placed
// on; `reasons` is place_ops's answer) whether it runs the op. Throws
// devmap::Error (kInvalidInput) at the first op it does not:
//   FILE:L:C: op 'act' (gelu) is placed on 'gpu:0' (by device_map.default),
//   but gpu devices have no gelu kernel (they run: add, ...); place it on a
//   cpu device
void check_placed_ops_supported(const Graph& graph, const std::vector<DeviceSpec>& devices,
                                const std::vector<std::string>& reasons, const SupportsOp& supports = schema_supports);

}  // namespace devmap
