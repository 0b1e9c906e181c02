// `auto` placement's split lever (core/graph/split_op.h, auto_levers.h):
// when no placement fits and the op needing the most memory fits no device
// by itself, that op split across the devices (shares balancing each
// device's compute and the bytes its part moves, within its memory_limit;
// or in proportion to the limits; or all on one offloaded device); when
// the config fits, the op with the most FLOPs split over devices of
// unequal speed, for speed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "core/graph/split_op.h"
#include "core/placement/no_fit.h"

namespace devmap {

// A split `auto` may try, and what its shares follow ("shares by the
// devices' speed, ...", "all on cpu:0, whose offload stages a part at a
// time").
struct ProposedSplit {
  std::vector<SplitShare> shares;
  std::string basis;
  std::string op;  // the op it splits
};

// How much faster the fastest device must be than the slowest before
// split_for_speed proposes anything: on devices of about equal speed a
// split op's parts only take turns with the step's other ops (measured on
// two Zen 4 cores: 38.4 and 40.4 ms split against 39.6 and 40.2 ms not).
constexpr double kUnequalSpeeds = 1.5;

// A device as a split's shares weigh it.
struct SplitDeviceRate {
  double flops_per_s = 0;       // its compute: calibrated, else estimated
  double link_bytes_per_s = 0;  // its slowest link to another device; 0: moving costs nothing
};

// The splits `auto` tries for `no_fit.largest_op` over every declared
// device that runs it (`rates` by device name; a device missing there
// counts as the slowest, with free links):
//  - shares that balance each device's time for its part: its share of the
//    op's FLOPs at its speed, plus the bytes the part moves over its link
//    (the op's whole input in and, per share, the output out; both again as
//    gradients when training), each capped at the fraction of the op its
//    memory_limit could hold (not on an offloaded device), the rest spread
//    over the others; on equal devices, equal shares;
//  - when that differs, shares in proportion to the memory limits;
//  - with `offload: parameters`, all on one such device, a part at a time.
// A device with `offload: parameters` gets its share as several parts
// (offload_parts). Empty when the op is placed by the user (not `auto`),
// is a part already, cannot split (split_refusal), the config has
// data-parallel replicas (not tested together), fits some device's
// limit by itself, a device has no limit, fewer than two devices run it,
// or a share rounds to no output.
std::vector<ProposedSplit> proposed_splits(const Config& config, const NoFit& no_fit,
                                           const std::map<std::string, SplitDeviceRate>& rates);

// A split `auto` tries when the config fits as written: the op with the
// most FLOPs among those it may split, over the devices that run it, with
// shares that balance each device's time for its part (as the first of
// proposed_splits, uncapped: the planner checks the limits). Only where
// every such device is in `rates` and the fastest is at least
// kUnequalSpeeds times the slowest (a GPU beside CPUs); else nullopt.
std::optional<ProposedSplit> split_for_speed(const Config& config, const std::map<std::string, SplitDeviceRate>& rates);

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
