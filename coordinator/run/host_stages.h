// HostStages: this rank's part of a training job whose devices span hosts
// (pipeline stages across hosts). Every rank runs the same training loop
// over the same steps, with its own host's workers: its Session starts
// only those, creates the rings of the cut edges that touch them, and
// relays the edges that cross hosts (transport/edge_relay.h). After each
// step every rank adds up every rank's result, so each holds the job's
// loss, and rank 0 writes the metrics and checkpoints (the other hosts'
// parameters come to it through MPI). docs/ARCHITECTURE.md, "Several
// hosts", says why.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/run/step_result.h"
#include "transport/edge_relay.h"

namespace devmap {

// What moves bytes between the ranks (JobRanks makes them from its MPI
// session; blocking unless said otherwise).
struct HostLinks {
  // Every rank's string in rank order; `pump` runs while waiting.
  std::function<std::vector<std::string>(const std::string&, const std::function<void()>& pump)> allgather;
  std::function<void(const void* data, size_t bytes, int dest)> send;
  std::function<void(void* data, size_t bytes, int source)> recv;
  std::function<std::unique_ptr<EdgeRelay>(RelayPlan)> relay;
};

class HostStages {
 public:
  // `device_ranks`: the rank whose host runs each device of the config.
  HostStages(int rank, std::map<std::string, int> device_ranks, HostLinks links);

  int rank() const { return rank_; }
  bool local(const std::string& device) const { return rank_of(device) == rank_; }
  // Throws devmap::Error for a device the config does not declare.
  int rank_of(const std::string& device) const;

  // The relay of `edges` (every cut edge's ring, as channel_edges gives
  // them) that have a device on this host and one on another; null when
  // none has.
  std::unique_ptr<EdgeRelay> relay(const std::vector<ChannelEdge>& edges,
                                   const std::map<std::string, std::string>& endpoints) const;

  // Replaces `result` (this host's workers' answers to a step) with every
  // rank's added up in rank order, the same on every rank: the loss and
  // metrics come from whichever host runs their ops. `pump` runs while
  // waiting for the other ranks. Collective: every rank calls it once per
  // collected step.
  void combine(StepResult& result, const std::function<void()>& pump) const;

  // Rank 0's `mine` on every rank (the others pass anything). Collective.
  std::string from_rank0(const std::string& mine) const { return links_.allgather(mine, {}).at(0); }

  // Bytes of a checkpoint between rank 0 and the rank that holds them.
  void send(const void* data, size_t bytes, int dest) const { links_.send(data, bytes, dest); }
  void recv(void* data, size_t bytes, int source) const { links_.recv(data, bytes, source); }

 private:
  int rank_;
  std::map<std::string, int> device_ranks_;
  HostLinks links_;
};

// A step's result as bytes and back (what combine() sends).
std::string encode_step_result(const StepResult& r);
StepResult decode_step_result(const std::string& bytes);  // throws devmap::Error on malformed bytes

}  // namespace devmap
