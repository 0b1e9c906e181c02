// CopyQueue: batches of copies between host memory and one device's memory
// (offloaded parameters, core/plan/offload_layout.h) that run in the order
// they are submitted while the device computes. The device's memory makes
// its own (DeviceMemory::make_copy_queue): a thread for memory the CPU
// addresses (ThreadCopyQueue, core/exec/thread_copy_queue.h), a copy stream
// on a GPU (kernels/cuda/cuda_copy_queue.h).
//
// Contracts: one thread submits and waits (the executor's). A batch runs
// after every batch submitted before it, so a write-back submitted before a
// fetch into the same memory finishes first, and after the device's work
// issued before its submit(), so a fetch never overwrites memory that
// earlier kernels still read and a write-back copies what they wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/exec/trace.h"

namespace devmap {

class CopyQueue {
 public:
  struct Copy {
    void* dst = nullptr;
    const void* src = nullptr;
    size_t bytes = 0;
  };
  struct Batch {
    bool to_device = true;  // host to device; false: device to host
    std::vector<Copy> copies;
    // With `traced`, the batch's interval is recorded as `event` (its
    // start and end filled in when it runs) for take_events(), where the
    // queue traces (ThreadCopyQueue does; a GPU's does not).
    bool traced = false;
    TraceEvent event;
  };

  CopyQueue() = default;
  virtual ~CopyQueue() = default;  // implementations finish what is queued first
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  // Queues `batch`; returns its ticket (increasing from 1).
  virtual uint64_t submit(Batch batch) = 0;
  // The device's work issued after this call starts once the batch of
  // `ticket`, and every one before it, has run: a fetch's data is there for
  // the next kernel. Blocks where the device's work is the calling thread's
  // (the CPU); a GPU's queue makes its compute stream wait instead.
  virtual void order(uint64_t ticket) = 0;
  // Blocks the calling thread until the batch of `ticket`, and every one
  // before it, has run: a write-back's data is on the host.
  virtual void wait(uint64_t ticket) = 0;
  // wait() for everything submitted so far.
  void drain() { wait(submitted()); }
  virtual uint64_t submitted() const = 0;
  // Appends the traced batches' intervals finished since the last call.
  virtual void take_events(std::vector<TraceEvent>& out) = 0;
};

}  // namespace devmap
