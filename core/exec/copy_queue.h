// CopyQueue: one thread that runs batches of copies between host memory and
// a device's memory, in the order they are queued, while the thread that
// queues them computes (offloaded parameters, core/plan/offload_layout.h).
//
// Contracts: only one thread queues and waits (the executor's); a batch
// runs after every batch queued before it, so a write-back queued before a
// fetch into the same memory finishes first. The copies go through the
// DeviceMemory's copy_from_host / copy_to_host from the queue's thread:
// HostMemory's (memcpy) may be called so; a device whose copies are ordered
// on one stream with its kernels (a GPU) needs its own copy stream and is
// not offloaded (the config refuses it).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/exec/device_memory.h"
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
    bool to_device = true;  // copy_from_host; false: copy_to_host
    std::vector<Copy> copies;
    // With `traced`, the batch's interval is recorded as `event` (its
    // start and end filled in when it runs) for take_events().
    bool traced = false;
    TraceEvent event;
  };

  explicit CopyQueue(DeviceMemory& memory);
  ~CopyQueue();  // waits for what is queued, then stops the thread
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  // Queues `batch`; returns its ticket (increasing from 1).
  uint64_t submit(Batch batch);
  // Blocks until the batch of `ticket`, and every one before it, has run.
  void wait(uint64_t ticket);
  // wait() for everything queued so far.
  void drain() { wait(submitted_); }
  // Appends the traced batches' intervals finished since the last call.
  void take_events(std::vector<TraceEvent>& out);

 private:
  void loop();

  DeviceMemory& memory_;
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Batch> queue_;
  std::vector<TraceEvent> events_;
  uint64_t submitted_ = 0, finished_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace devmap
