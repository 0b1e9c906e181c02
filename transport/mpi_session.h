// MpiSession: this process's place in an MPI job (Open MPI), and the
// messages devmap sends between hosts through it. Built only where MPI is
// found (DEVMAP_ENABLE_MPI; the target devmap_mpi). Inside one host,
// tensors keep crossing processes through shared memory (shm_channel.h);
// between hosts, every byte goes through MPI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/tensor.h"

namespace devmap {

// Throws devmap::Error (kRuntime) "MPI: <what> failed: <MPI's text>" unless
// `rc` is MPI_SUCCESS (0).
void check_mpi(int rc, const char* what);

// The tags of devmap's messages between ranks, all below kMaxTag (MPI
// guarantees MPI_TAG_UB >= 32767):
constexpr int kMaxTag = 1 << 15;
constexpr int kCheckpointTag = 7;  // checkpoint byte ranges (job_ranks.cpp)
// The sums in rank order, two tags per sum: [kSumTagBase, kSumTagBase + kSumTags).
constexpr int kSumTagBase = 1 << 10;
constexpr int kSumTags = 1 << 12;
// An edge relay's (mpi_edge_relay.h), two per edge: [kRelayTagBase, kMaxTag).
constexpr int kRelayTagBase = 1 << 14;

class MpiSession {
 public:
  // Initialises MPI (MPI_THREAD_FUNNELED: only the thread that made the
  // session calls MPI) with errors returned, not fatal. One session per
  // process: a second one, or one after MPI was finalized, throws
  // devmap::Error (kRuntime), as does a failing MPI_Init.
  MpiSession(int* argc, char*** argv);
  // Finalizes MPI. Every rank must destroy its session (MPI_Finalize is
  // collective).
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The host this rank runs on, as MPI names it (MPI_Get_processor_name).
  const std::string& host() const { return host_; }

  // Sends `t`'s shape, then its bytes, to rank `dest`; blocks until the
  // buffer may be reused. Tags below 0 or at or above 2^15 are rejected.
  void send_tensor(const TensorView& t, int dest, int tag) const;
  // Receives a tensor sent by send_tensor from rank `source` into `t`,
  // whose shape must equal the sender's: a different shape throws
  // devmap::Error (kRuntime) naming both, and leaves `t`'s data untouched.
  void recv_tensor(const TensorView& t, int source, int tag) const;

  // A sum in flight (start_sum_ordered). MPI moves its bytes only while it
  // is tested: test() moves it on and is true once `data` holds the sum.
  // Dropping a sum before it is done leaves requests in MPI that may still
  // write into its buffers: only a rank that is about to abort does that.
  class PendingSum {
   public:
    virtual ~PendingSum() = default;
    virtual bool test() = 0;
  };

  // Starts replacing `data[0..count)` on every rank with the element-wise
  // sum of every rank's buffer, added in rank order: ((x0 + x1) + x2) + ...
  // for every element, whatever the rank count or the hosts, so every rank
  // gets the same bits and a run repeats them. Collective and matched by
  // order: every rank starts its sums in the same order, each with the same
  // count; several may be in flight at once. A reduce-scatter then an
  // all-gather, by point-to-point messages: each rank moves about
  // 2 (size-1)/size of the buffer in and out (two ranks swap their buffers
  // in one round). `data` must stay valid and untouched until the sum is
  // done.
  std::unique_ptr<PendingSum> start_sum_ordered(float* data, size_t count) const;
  // The same, waiting until it is done (testing in a loop).
  void allreduce_sum_ordered(float* data, size_t count) const;

  // Every rank's `mine`, in rank order, on every rank. Collective.
  std::vector<std::string> allgather(const std::string& mine) const;
  // The same, started non-blocking: `pump` is called between tests of the
  // request (every 50 µs or so), so a rank can move other messages (a
  // relay's) while it waits for the slowest rank.
  std::vector<std::string> allgather_while(const std::string& mine, const std::function<void()>& pump) const;

  // Bytes to and from one rank (blocking, any size: sent in chunks of
  // 1 GiB). Tags as for send_tensor.
  void send_bytes(const void* data, size_t bytes, int dest, int tag) const;
  void recv_bytes(void* data, size_t bytes, int source, int tag) const;

  // Rank `root`'s `value` on every rank. Collective. A rank waits by testing
  // the request every few milliseconds and sleeping in between, so a rank
  // that waits for the job's end leaves the host's cores to its workers
  // (MPI's blocking calls poll in a loop).
  int broadcast_sleeping(int value, int root) const;

  void barrier() const;

  // Ends every rank of the job (MPI_Abort): for a rank that failed while
  // others may wait for it inside a collective, where returning would leave
  // them waiting. The launcher stops the other ranks.
  [[noreturn]] void abort(int exit_code) const;

  // The sums' scratch buffers: spare ones, kept between steps, and those of
  // sums dropped before they were done, where MPI may still write.
  struct SumScratch {
    std::vector<std::vector<float>> spare, abandoned;
  };

 private:
  int rank_ = 0, size_ = 1;
  std::string host_;
  mutable uint32_t sums_started_ = 0;  // gives each sum its tags
  mutable SumScratch sum_scratch_;
};

}  // namespace devmap
