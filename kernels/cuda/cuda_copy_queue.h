// CudaCopyQueue: a GPU's CopyQueue (contract in core/exec/copy_queue.h) for
// offloaded parameters. Its batches are cudaMemcpyAsync calls on a copy
// stream of its own (non-blocking: it never waits for the legacy default
// stream), between the device's pool and the worker's pinned host memory
// (PinnedHostMemory, so each copy is DMA that overlaps the kernels).
//
// Ordering, all on the device and none of it blocking the host, except
// wait():
//  - submit() records an event on the compute stream (CudaDevice::stream)
//    and makes the copy stream wait for it, so a fetch into a staging
//    region starts after the kernels issued before it (those that last read
//    the region) and a write-back copies what the kernels before it wrote;
//    the copy stream runs the batches in submit order. It then records a
//    "done" event per batch on the copy stream.
//  - order(ticket) makes the compute stream wait for that batch's event
//    (cudaStreamWaitEvent): the kernels issued afterwards read the fetch.
//  - wait(ticket) blocks the host on that event (cudaEventSynchronize): a
//    write-back's gradients are on the host for the host's optimizer.
// A pinned host source must stay unchanged until its copy is done, and a
// host destination is not to be read before wait(): the executor writes
// offloaded state only between passes, and each pass ends with drain().
//
// Not traced: its batches run on the device's timeline, which the host's
// trace clock does not see without a cudaEvent pair per batch and an anchor
// between the two clocks; take_events() returns nothing, so a GPU's trace
// has no "parameter copies" track. Not thread-safe (the executor's thread
// drives it, as it drives the device). Unverified on a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <deque>
#include <vector>

#include "core/exec/copy_queue.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

class CudaCopyQueue final : public CopyQueue {
 public:
  // Creates the copy stream and its events on `device` (initialising it).
  // Throws devmap::Error when the CUDA runtime refuses.
  explicit CudaCopyQueue(CudaDevice& device);
  ~CudaCopyQueue() override;  // waits for the copy stream, then destroys it and the events

  uint64_t submit(Batch batch) override;
  void order(uint64_t ticket) override;
  void wait(uint64_t ticket) override;
  uint64_t submitted() const override { return submitted_; }
  void take_events(std::vector<TraceEvent>& /*out*/) override {}

 private:
  // The "done" event of a batch not yet waited for.
  cudaEvent_t done_event(uint64_t ticket) const;

  CudaDevice& device_;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t issued_ = nullptr;    // re-recorded on the compute stream by each submit
  std::deque<cudaEvent_t> done_;    // of tickets waited_ + 1 .. submitted_
  std::vector<cudaEvent_t> spare_;  // done events of batches waited for, for reuse
  uint64_t submitted_ = 0, waited_ = 0, ordered_ = 0;
};

}  // namespace devmap::cuda
