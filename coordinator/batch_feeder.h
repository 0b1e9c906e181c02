// BatchFeeder: feeds one pass over a data set's samples through the
// workers in batches, double buffered: while the workers compute batch i
// from one input slot, batch i + 1 is written into the other.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "coordinator/dataset.h"
#include "coordinator/signals.h"
#include "coordinator/worker_group.h"
#include "core/error.h"
#include "transport/shm_segment.h"

namespace devmap {

class BatchFeeder {
 public:
  BatchFeeder(WorkerGroup& group, ShmSegment& segment, const InputLayout& layout, int image_node, int label_node)
      : group_(group), segment_(segment), layout_(layout) {
    for (size_t k = 0; k < layout.input_nodes.size(); ++k) {
      if (layout.input_nodes[k] == image_node) image_off_ = layout.input_offsets[k];
      if (layout.input_nodes[k] == label_node) label_off_ = layout.input_offsets[k];
    }
  }

  // Calls on_done(index, batch, result, slot) after each batch; the results
  // of batch i stay in output slot `slot` until batch i + 2 is sent.
  template <typename OnDone>
  void run(const Dataset& data, const std::vector<int64_t>& order, int64_t batch_size, int64_t first_step,
           uint32_t flags, int64_t max_batches, OnDone on_done) {
    const int64_t count = static_cast<int64_t>(order.size());
    int64_t batches = (count + batch_size - 1) / batch_size;
    if (max_batches >= 0) batches = std::min(batches, max_batches);
    auto size_of = [&](int64_t i) { return std::min(batch_size, count - i * batch_size); };
    if (batches == 0) return;
    fill(data, order, 0, batch_size, size_of(0));
    for (int64_t i = 0; i < batches; ++i) {
      if (interrupted()) throw_runtime("interrupted");
      wire::Step s{};
      s.step = first_step + i;
      s.batch = size_of(i);
      s.sample_offset = 0;
      s.batch_total = s.batch;
      s.slot = static_cast<uint32_t>(i % layout_.slots);
      s.flags = flags;
      if (i == 0 && first_step == 0 && (flags & wire::kTrain)) s.flags |= extra_first_flags_;
      group_.send(s);
      if (i + 1 < batches) fill(data, order, i + 1, batch_size, size_of(i + 1));
      StepResult r = group_.collect();
      on_done(i, s.batch, r, s.slot);
    }
  }
  void set_first_step_flags(uint32_t f) { extra_first_flags_ = f; }

 private:
  void fill(const Dataset& data, const std::vector<int64_t>& order, int64_t index, int64_t batch_size, int64_t n) {
    char* base =
        static_cast<char*>(segment_.data()) + static_cast<uint64_t>(index % layout_.slots) * layout_.slot_bytes;
    fill_batch(data, order, index * batch_size, n, reinterpret_cast<float*>(base + image_off_),
               reinterpret_cast<float*>(base + label_off_));
  }

  WorkerGroup& group_;
  ShmSegment& segment_;
  const InputLayout& layout_;
  uint64_t image_off_ = 0, label_off_ = 0;
  uint32_t extra_first_flags_ = 0;
};

}  // namespace devmap
