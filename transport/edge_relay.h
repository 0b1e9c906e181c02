// EdgeRelay: carries the cut edges between this host's workers and other
// hosts' (pipeline stages across hosts). The workers do not know: a worker
// hands a tensor to a device on another host exactly as to one on its own
// (a TENSOR_READY to the device's data socket, shm_channel.h), and the
// relay is what listens on that socket here. It sends the slot's bytes to
// the consumer's host, whose relay writes them into that host's ring of
// the edge and hands them on to the consumers there; their SLOT_RELEASE
// comes back to it the same way. Which engine moves the bytes between
// hosts is the implementation's (MPI: mpi_edge_relay.h); nothing else
// crosses hosts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "transport/shm_channel.h"

namespace devmap {

// One cut edge with a device on this host and one on another.
struct RelayEdge {
  ChannelEdge edge;                 // its ring on this host (created by the coordinator), producer, consumers
  int producer_rank = 0;            // the rank of the producer's host
  std::vector<int> consumer_ranks;  // the rank of each consumer's host, parallel to edge.consumers
};

struct RelayPlan {
  int rank = 0;                                  // this host's rank
  std::map<std::string, std::string> endpoints;  // every device's data socket path on this host
  std::vector<RelayEdge> edges;                  // those with a device here and one elsewhere
};

class EdgeRelay {
 public:
  virtual ~EdgeRelay() = default;
  // Moves whatever can move now, without blocking: handles from this host's
  // workers, completed sends and receives. True when the caller should call
  // again within a fraction of a millisecond (a relay with edges: tensors
  // move only while it is pumped).
  virtual bool pump() = 0;
};

}  // namespace devmap
