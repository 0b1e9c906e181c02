// TraceBuffer: a worker's timeline of one step (--trace), as intervals of
// the host's steady clock. Off unless an executor is given one
// (Executor::set_trace): then each instruction costs two clock reads and
// one append into storage reserved up front, which after the first traced
// step never grows again (a step's events are shipped and cleared).
//
// The clock is std::chrono::steady_clock (CLOCK_MONOTONIC on Linux), which
// is one clock for every process of one machine: the coordinator and its
// workers, all on one host, share it, so their intervals line up as they
// are. Workers on another machine would need an offset; devmap runs all
// processes on one host.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace devmap {

enum class TraceKind : uint8_t {
  kStep,       // a worker's whole STEP, from receiving it to its reply
  kForward,    // id: op node
  kBackward,   // id: op node
  kSumGrads,   // id: op node whose output gradient is summed
  kSend,       // id: cut edge
  kRecv,       // id: cut edge; the wait for the tensor (and its copy to the device)
  kSlotWait,   // id: cut edge; waiting for a free slot to send into
  kOptimizer,  // id: -1
  kFetch,      // id: op node; its offloaded parameters (and gradients) copied to the device (copy thread)
  kWriteBack,  // id: op node; its offloaded parameters' gradients copied back to the host (copy thread)
};
constexpr uint8_t kMaxTraceKind = static_cast<uint8_t>(TraceKind::kWriteBack);

// One interval on a worker's track. step is the STEP's step (0-based
// training step, or the round's number); micro the micro-batch, -1 where
// none applies.
struct TraceEvent {
  int64_t start_ns = 0;  // steady_clock, since its epoch
  int64_t end_ns = 0;
  int64_t step = 0;
  int32_t micro = -1;
  int32_t id = -1;
  TraceKind kind = TraceKind::kStep;
};

inline int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class TraceBuffer {
 public:
  // Storage for `n` events up front (a step of the reference model's
  // two-way split with 4 micro-batches holds about 120).
  void reserve(size_t n) { events_.reserve(n); }
  size_t capacity() const { return events_.capacity(); }
  void add(const TraceEvent& e) { events_.push_back(e); }
  const std::vector<TraceEvent>& events() const { return events_; }
  void clear() { events_.clear(); }  // keeps the storage

 private:
  std::vector<TraceEvent> events_;
};

}  // namespace devmap
