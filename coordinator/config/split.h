// An op's `split` key: {cpu:0: 0.25, cpu:1: 0.75} runs the op as parts on
// those devices, each with its share of the outputs (core/graph/split_op.h).
// A device's value may be a list of shares, one part each: {cpu:0: [0.25,
// 0.25], cpu:1: [0.25, 0.25]} runs four parts, two on each device, so that
// an offloaded device fetches the op's parameters a part at a time.
#pragma once

#include <yaml-cpp/yaml.h>

#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/yaml/source.h"
#include "core/graph/split_op.h"

namespace devmap {

// Reads `value` (the split key of `node`, whose attributes are read; `key`
// is the key's node) as the parts' devices and shares, in file order (a
// device's list in its order). Throws devmap::Error (kInvalidInput) at the
// offending node, exit 2, when the op cannot be split (split_refusal), the
// value is not a mapping of declared devices (not `auto`, each named once)
// to a number or a non-empty list of numbers in (0, 1], there are fewer
// than two parts, the shares do not sum to 1 (within 1e-6), or a part
// would get no output after rounding.
std::vector<SplitShare> read_split(const YamlSource& src, const YAML::Node& key, const YAML::Node& value,
                                   const Node& node, const std::vector<DeviceSpec>& devices);

}  // namespace devmap
