// MpiSession: this process's place in an MPI job (Open MPI), and the
// messages devmap sends between hosts through it. Built only where MPI is
// found (DEVMAP_ENABLE_MPI; the target devmap_mpi). Inside one host,
// tensors keep crossing processes through shared memory (shm_channel.h);
// between hosts, every byte goes through MPI.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace devmap {

// Throws devmap::Error (kRuntime) "MPI: <what> failed: <MPI's text>" unless
// `rc` is MPI_SUCCESS (0).
void check_mpi(int rc, const char* what);

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

  // Replaces `data[0..count)` on every rank with the element-wise sum of
  // every rank's buffer, added in rank order: ((x0 + x1) + x2) + ... for
  // every element, whatever the rank count, the hosts or MPI's choice of
  // algorithm, so every rank gets the same bits and a run repeats them.
  // Collective: every rank calls it with the same count. Moves about
  // 2 (size-1)/size of the buffer in and out of each rank, as a
  // reduce-scatter followed by an all-gather does. With two ranks it is
  // MPI_Allreduce itself: each element is then one addition of x0 and x1,
  // which gives the same bits in either order, whatever MPI's algorithm.
  // Not thread-safe: one call at a time per session (it keeps a scratch
  // buffer between calls).
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

 private:
  int rank_ = 0, size_ = 1;
  std::string host_;
  mutable std::vector<float> slices_;  // allreduce_sum_ordered's receive buffer, kept between calls
};

}  // namespace devmap
