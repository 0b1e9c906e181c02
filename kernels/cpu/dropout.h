// dropout on the CPU: inverted dropout with a counter-based mask.
#pragma once

#include <cstdint>

#include "core/base/random.h"
#include "core/exec/kernel.h"

namespace devmap::cpu {

// The mask of one dropout node in one step. Element i of the step's sample s
// (s counts from the start of the whole step's batch, i.e. it includes
// ctx.sample_offset) is kept when
//   uniform_at(philox_key(seed, node name), s * per_sample_numel + i,
//              low 32 bits of step, high 32 bits of step) >= rate,
// so it is the same in every process, for any micro-batch split, in forward
// and backward.
class DropoutMask {
 public:
  DropoutMask(const Node& node, const KernelContext& ctx);

  // Calls fn(j, keep) for the elements j in [begin, end) of a (micro-)batch
  // tensor whose first sample is ctx.sample_offset.
  template <class Fn>
  void for_each(int64_t begin, int64_t end, const Fn& fn) const;

  float rate() const { return rate_; }
  float scale() const { return scale_; }  // 1 / (1 - rate)

 private:
  PhiloxKey key_;
  uint32_t c2_, c3_;
  uint64_t first_;  // counter index of the micro-batch's first element
  float rate_, scale_;
};

// Training: y = x * mask * scale; evaluation (ctx.training false): y = x.
// Backward (inputs are not kept): dx = dy * mask * scale, recomputing the
// mask from the same (seed, name, step, sample offset). In-place use allowed.
class DropoutKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

template <class Fn>
void DropoutMask::for_each(int64_t begin, int64_t end, const Fn& fn) const {
  // One Philox call yields the words of four consecutive counter indices.
  int64_t j = begin;
  while (j < end) {
    const uint64_t index = first_ + static_cast<uint64_t>(j);
    const uint64_t block = index / 4;
    const auto words = philox4x32(key_, {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), c2_, c3_});
    for (uint64_t w = index % 4; w < 4 && j < end; ++w, ++j) fn(j, uniform01(words[w]) >= rate_);
  }
}

}  // namespace devmap::cpu
