// One op across devices: a dense layer split by output features, a conv2d by
// filters (OpSchema::split_attr). split_ops() rewrites a placed graph so that
// op `fc1` becomes parts `fc1/part0`, `fc1/part1`, ... (the same op with a
// share of the outputs, each on its device) and a concat named `fc1` that
// joins their outputs where the op's first consumer runs, so every consumer
// reads `fc1` unchanged. The parts read the op's inputs, whose gradient
// autodiff then sums over the parts in part order (a fixed order: the same
// split gives the same bits run to run). Where two or more parts run on a
// device other than an input's and the input can get a gradient, the parts
// on that device read it through one fan-out node there (fan_out_name), so
// their gradients are summed on that device and one gradient per device
// crosses back, not one per part. A part's parameters are rows of the
// whole op's (whole_param): they are drawn from the whole op's random
// numbers and saved as one tensor per parameter, whatever the split.
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace devmap {

// One part of a split: a device and its share of the outputs, in (0, 1].
// Several parts may share a device: each is an op of its own (so an
// offloaded device fetches the op's parameters a part at a time).
struct SplitShare {
  std::string device;
  double share = 0;
};

// Why `node` cannot be split across devices, or "" when it can: its op has
// no split_attr ("op 'relu1' (relu) cannot be split across devices (ops
// that can: conv2d, dense)"), or a conv2d has channel groups.
std::string split_refusal(const Node& node);

// The first output of each part, then the op's output count: the shares'
// running sums times `outputs`, rounded to the nearest whole output. The
// shares must sum to 1. Throws devmap::Error (kInvalidInput) naming `who`
// when a part would get no output.
std::vector<int64_t> split_bounds(int64_t outputs, const std::vector<double>& shares, const std::string& who);

// The name of part k of op `op`: "fc1/part0". Op names of a config cannot
// hold '/', so it never clashes with one.
std::string part_name(const std::string& op, size_t k);

// The name of fan-out k of op `op`: "fc1/fanout0", numbered in the order
// of the devices' first parts (then of the op's inputs).
std::string fan_out_name(const std::string& op, size_t k);

// `graph` (shapes inferred, every op placed) with each node i that has
// `splits[i]` non-empty split into parts as above (split_refusal(node) must
// be "", and split_bounds must accept the shares), shapes inferred again.
// Node order: the op's fan-outs, its parts in part order, the concat.
// `origin` gets, for every node of the result, the node of `graph` it comes
// from (the fan-outs, the parts and the concat come from the split op).
Graph split_ops(const Graph& graph, const std::vector<std::vector<SplitShare>>& splits, std::vector<int>& origin);

// Whether node `i` of `graph` is a fan-out that split_ops() put in front of
// the parts of a split op on one device.
bool is_fan_out(const Graph& graph, int i);

// Whether node `i` of `graph` is a part of a split op, a fan-out in front of
// its parts or the concat that joins them: the op's `split` key places
// those, not the device map.
bool made_by_split(const Graph& graph, int i);

// Where a node's parameter lives in the weights file: the whole op's tensor
// ("fc1.weight", the shape the unsplit op has) and the first of its
// elements this node holds (0 unless the node is a part).
struct WholeParam {
  std::string name;
  Shape shape;
  int64_t offset = 0;
};
WholeParam whole_param(const Node& node, const ParamSpec& param);

}  // namespace devmap
