// Channel: how an executor exchanges the tensors of cut edges with the
// executors of other devices. Implemented by transport/ (shared-memory
// slot rings signalled over ZeroMQ); core only sees this interface.
//
// Contract, per edge: the producer acquires a slot, its kernel writes the
// tensor straight into it, then send() signals the consumers; each consumer
// receive()s the slot and reads it in place until release(). A producer
// never overwrites a slot that a consumer has not released (credits).
// Tensors of an edge are sent and received in order of (step, micro-batch);
// several micro-batches of a step may be in flight at once (pipelines).
#pragma once

#include <cstddef>
#include <cstdint>

namespace devmap {

class Channel {
 public:
  virtual ~Channel() = default;
  // Producer: memory of a free slot of `edge` with room for `bytes`; blocks
  // until every consumer has released it.
  virtual float* acquire(int edge, int64_t step, size_t bytes, int micro = 0) = 0;
  // Producer: the slot acquired for `edge` now holds the step's tensor.
  virtual void send(int edge, int64_t step, int micro = 0) = 0;
  // Consumer: blocks until the step's tensor of `edge` arrives; returns the
  // slot's memory, valid until release(step).
  virtual float* receive(int edge, int64_t step, int micro = 0) = 0;
  // Consumer: gives every slot received for `step` (only those of
  // micro-batch `micro` when it is >= 0) back to its producer.
  virtual void release(int64_t step, int micro = -1) = 0;
};

}  // namespace devmap
