// ShmChannel: the Channel of one worker. Every cut edge has a ring of slots
// in its own shared-memory segment (created by the coordinator, sized from
// the plan). The producer's kernel writes into a slot, a TENSOR_READY
// handle goes to each consumer over ZeroMQ (PUSH to the consumer's PULL
// socket), consumers read the slot in place and send SLOT_RELEASE when the
// step is done. Credits: a slot is reused only after every consumer has
// released it. Nothing is copied between processes; bytes_copied() counts
// the copies a transport would make (0 for CPU-to-CPU edges, by design).
// Only the worker's main thread may use it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "core/exec/channel.h"
#include "core/plan/slot_ring.h"
#include "transport/shm_segment.h"
#include "transport/wire.h"

namespace devmap {

struct ChannelEdge {
  int id = 0;
  std::string segment;      // shared-memory name of its slot ring
  uint64_t slot_bytes = 0;  // edge_slot_bytes of its tensor at the largest batch
  uint32_t slots = 2;
  std::string producer;
  std::vector<std::string> consumers;

  uint64_t ring_bytes() const { return slot_ring_bytes(slot_bytes, slots); }
};

struct ChannelStats {
  uint64_t handoffs = 0;      // tensors sent
  uint64_t bytes_handed = 0;  // bytes those tensors hold
  uint64_t bytes_copied = 0;  // bytes this transport copied (none on CPU-to-CPU edges)
  double wait_seconds = 0;    // time blocked in acquire/receive
};

class ShmChannel : public Channel {
 public:
  // `endpoints` maps every peer device to the ipc path of its PULL socket;
  // this worker binds its own (endpoints.at(device)) with mode 0600.
  // `idle` is called about every 100 ms while blocked and may throw (e.g.
  // when the coordinator is gone).
  ShmChannel(zmq::context_t& ctx, std::string device, const std::map<std::string, std::string>& endpoints,
             const std::vector<ChannelEdge>& edges, std::function<void()> idle);
  ~ShmChannel() override;

  float* acquire(int edge, int64_t step, size_t bytes, int micro = 0) override;
  void send(int edge, int64_t step, int micro = 0) override;
  float* receive(int edge, int64_t step, int micro = 0) override;
  void release(int64_t step, int micro = -1) override;

  const ChannelStats& stats() const { return stats_; }

  struct Region {
    int edge;
    void* data;
    size_t bytes;
    bool producing;  // this device writes the edge's slots
  };
  // The mapped slot rings, one per edge (for a GPU worker to pin them).
  std::vector<Region> regions() const;

 private:
  struct EdgeState;
  EdgeState& state(int edge);
  // Handles incoming handles for up to `timeout`; false when none came.
  bool pump(std::chrono::milliseconds timeout);
  void push(const std::string& peer, wire::MsgType type, const wire::TensorHandle& h);

  std::string device_;
  std::function<void()> idle_;
  zmq::socket_t pull_;
  std::map<std::string, zmq::socket_t> push_;  // by peer device
  std::map<int, std::unique_ptr<EdgeState>> edges_;
  struct Held {
    int edge;
    uint32_t slot;
    int micro;
  };
  std::vector<Held> held_;  // received and not yet released
  ChannelStats stats_;
};

}  // namespace devmap
