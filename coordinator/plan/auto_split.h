// `auto` placement's split lever (core/graph/split_op.h): when no placement
// fits and the op needing the most memory fits no device by itself, the
// planner tries that op split across the devices, each part's share in
// proportion to its device's memory_limit.
#pragma once

#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "core/graph/split_op.h"
#include "core/placement/no_fit.h"

namespace devmap {

// The split `auto` tries for `no_fit.largest_op`: every declared device
// that runs it, shares in proportion to their memory limits; a device with
// `offload: parameters` gets its share as several parts (offload_parts).
// Empty when
// the op is placed by the user (not `auto`), is a part already, cannot
// split (split_refusal), fits some device's limit by itself, a device has
// no limit, fewer than two devices run it, or a share rounds to no output.
std::vector<SplitShare> proposed_split(const Config& config, const NoFit& no_fit);

// `shares` (one per device, of op `node`) with each share of a device
// that has `offload: parameters` and a memory_limit cut into equal parts,
// as few as keep each part's parameters (and gradients, when training)
// within an eighth of the limit, so that the two parts it stages at a time
// take at most a quarter; at most 64 parts a device, each with an output.
std::vector<SplitShare> offload_parts(const Config& config, const Node& node, const std::vector<SplitShare>& shares);

// `config` with op `op` split by `shares`: its graph rewritten by
// split_ops() (the concat joins the parts where the op's first consumer
// runs, `auto` there), each part's placement reason "auto split".
void apply_split(Config& config, const std::string& op, const std::vector<SplitShare>& shares);

// "{cpu:0: 0.5, cpu:1: 0.5}": the shares as an op's `split` key pins them;
// consecutive parts on one device as its list ("{cpu:0: [0.25, 0.25], ...}").
// Parts on one device must be consecutive (as read_split gives them).
std::string split_key_text(const std::vector<SplitShare>& shares);

}  // namespace devmap
