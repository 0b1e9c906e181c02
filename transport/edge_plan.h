// How a partition's cut edges map onto transport resources: one segment
// with a ring of slots per edge, one PULL socket per device. The
// coordinator (which creates the segments) and every worker (which opens
// them) derive the same answer from the same partition.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/plan/partition.h"
#include "core/plan/slot_ring.h"
#include "transport/run_names.h"
#include "transport/shm_channel.h"

namespace devmap {

constexpr uint32_t kEdgeSlots = 2;  // the producer may run one step ahead of its consumers

// The edges `device` produces or consumes (all edges when device is empty);
// `slots`: each edge's ring depth by edge id (empty: kEdgeSlots each).
inline std::vector<ChannelEdge> channel_edges(const Partition& p, const std::string& run_prefix, int64_t max_batch,
                                              const std::string& device = "", const std::vector<int>& slots = {}) {
  std::vector<ChannelEdge> out;
  for (const Edge& e : p.edges) {
    bool touches = device.empty() || e.producer == device;
    for (const std::string& c : e.consumers) touches = touches || c == device;
    if (!touches) continue;
    const uint32_t depth = slots.empty() ? kEdgeSlots : static_cast<uint32_t>(slots.at(static_cast<size_t>(e.id)));
    out.push_back({e.id, edge_segment_name(run_prefix, e.id),
                   edge_slot_bytes(static_cast<uint64_t>(e.bytes(max_batch))), depth, e.producer, e.consumers});
  }
  return out;
}

inline std::map<std::string, std::string> data_endpoints(const Partition& p, const std::string& run_dir) {
  std::map<std::string, std::string> m;
  for (const std::string& d : p.devices) m[d] = data_socket_path(run_dir, d);
  return m;
}

}  // namespace devmap
