// ThreadCopyQueue: the CopyQueue (core/exec/copy_queue.h) of memory the CPU
// addresses. One thread runs the batches, in submit order, through the
// DeviceMemory's copy_from_host / copy_to_host (HostMemory's memcpy may be
// called from any thread), while the submitting thread computes. The
// device's work is the submitting thread's, so order() blocks as wait()
// does, and every batch submitted follows the work done before it.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "core/exec/copy_queue.h"
#include "core/exec/device_memory.h"

namespace devmap {

class ThreadCopyQueue final : public CopyQueue {
 public:
  explicit ThreadCopyQueue(DeviceMemory& memory);
  ~ThreadCopyQueue() override;  // waits for what is queued, then stops the thread

  uint64_t submit(Batch batch) override;
  void order(uint64_t ticket) override { wait(ticket); }
  void wait(uint64_t ticket) override;
  uint64_t submitted() const override;
  void take_events(std::vector<TraceEvent>& out) override;

 private:
  void loop();

  DeviceMemory& memory_;
  mutable std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<Batch> queue_;
  std::vector<TraceEvent> events_;
  uint64_t submitted_ = 0, finished_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace devmap
