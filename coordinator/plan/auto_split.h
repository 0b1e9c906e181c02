// `auto` placement's split lever (core/graph/split_op.h): when no placement
// fits and the op needing the most memory fits no device by itself, the
// planner tries that op split across the devices (auto_levers.h), each
// part's share by its device's speed within its memory_limit, or in
// proportion to the limits.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "core/graph/split_op.h"
#include "core/placement/no_fit.h"

namespace devmap {

// A split `auto` may try, and what its shares follow ("the devices' speed",
// "their memory_limit").
struct ProposedSplit {
  std::vector<SplitShare> shares;
  std::string basis;
};

// The splits `auto` tries for `no_fit.largest_op` over every declared
// device that runs it: first shares in proportion to the devices' speed
// (`flops_per_s` by device name: calibrated, else estimated; a device
// missing there counts as the slowest), each capped at the fraction of
// the op its memory_limit could hold (not on an offloaded device), the
// rest spread over the others by speed; then, when that differs, shares in
// proportion to their memory limits. A device with `offload: parameters`
// gets its share as several parts (offload_parts). Empty when the op is
// placed by the user (not `auto`), is a part already, cannot split
// (split_refusal), fits some device's limit by itself, a device has no
// limit, fewer than two devices run it, or a share rounds to no output.
// The shares do not weigh the bytes a part's input and output move.
std::vector<ProposedSplit> proposed_splits(const Config& config, const NoFit& no_fit,
                                           const std::map<std::string, double>& flops_per_s);

// `shares` (one per device, of op `node`) with each share of a device
// that has `offload: parameters` and a memory_limit cut into equal parts,
// as few as keep each part's parameters (and gradients, when training)
// within an eighth of the limit, so that the two parts it stages at a time
// take at most a quarter; at most 64 parts a device, each with an output.
std::vector<SplitShare> offload_parts(const Config& config, const Node& node, const std::vector<SplitShare>& shares);

// `config` with op `op` split by `shares`: its graph rewritten by
// split_ops() (the concat joins the parts where the op's first consumer
// runs, `auto` there), each part's placement reason "auto split", the
// shares kept in config.auto_splits.
void apply_split(Config& config, const std::string& op, const std::vector<SplitShare>& shares);

// "{cpu:0: 0.5, cpu:1: 0.5}": the shares as an op's `split` key pins them;
// consecutive parts on one device as its list ("{cpu:0: [0.25, 0.25], ...}").
// Parts on one device must be consecutive (as read_split gives them).
std::string split_key_text(const std::vector<SplitShare>& shares);

// The split as messages name it: "as `split: {cpu:0: 0.5, cpu:1: 0.5}`"
// (the key) while it has at most 4 parts; beyond, when each device's
// parts are equal, "into 14 parts (7 of 0.0714286 on cpu:0, 7 of
// 0.0714286 on cpu:1)".
std::string split_description(const std::vector<SplitShare>& shares);

}  // namespace devmap
