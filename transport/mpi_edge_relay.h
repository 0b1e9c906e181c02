// The EdgeRelay of a job across hosts, over MPI point-to-point messages:
// each tensor goes as two messages to the consumer host's rank (its
// TensorHandle, then the slot's bytes, sent straight from the producer's
// ring and received straight into the consumer host's ring), tagged by
// edge, so MPI's ordering per sender and tag keeps every edge's tensors in
// order. A host receives an edge's tensors only into free slots of its
// ring, and the producer's slot is released only when its bytes are sent,
// so the rings' depths bound what is in flight, as on one host. Everything
// runs in the caller's thread (MPI_THREAD_FUNNELED).
#pragma once

#include <memory>

#include "transport/edge_relay.h"
#include "transport/mpi_session.h"

namespace devmap {

// The relay's tags are [kRelayTagBase, kMaxTag) (mpi_session.h): two per
// edge, so a job relays edges with ids below (kMaxTag - kRelayTagBase) / 2.

// Binds this host's sockets for the other hosts' devices and posts the
// first receives. Throws devmap::Error when an edge's id or slot is beyond
// what MPI's tags and counts can carry.
std::unique_ptr<EdgeRelay> make_mpi_edge_relay(const MpiSession& mpi, RelayPlan plan);

}  // namespace devmap
