// The per-thread logic of the dropout kernel, host and device: the mask of
// cpu::DropoutMask (kernels/cpu/dropout.h).
#pragma once

#include <cstdint>

#include "core/base/random.h"
#include "kernels/cuda/host_device.h"
#include "kernels/cuda/philox.h"

namespace devmap::cuda {

// Element j of the (micro-)batch tensor is kept when uniform01(word
// (first + j) % 4 of philox4x32(key, {block lo, block hi, c2, c3})) >= rate,
// block = (first + j) / 4; then y[j] = keep ? x[j] * scale : 0.
struct DropoutParams {
  PhiloxKey key;
  uint32_t c2, c3;
  uint64_t first;  // counter index of the tensor's first element
  float rate, scale;
};

// Philox blocks that cover the n elements.
DEVMAP_HD inline int64_t dropout_blocks(const DropoutParams& p, int64_t n) {
  return n <= 0 ? 0 : static_cast<int64_t>((p.first + static_cast<uint64_t>(n) - 1) / 4 - p.first / 4 + 1);
}

// Thread t: the (up to four) elements whose counters lie in Philox block
// first/4 + t. x and y may be the same memory.
DEVMAP_HD inline void dropout_block(const DropoutParams& p, const float* x, float* y, int64_t n, int64_t t) {
  const uint64_t block = p.first / 4 + static_cast<uint64_t>(t);
  const Words4 words =
      philox4x32_hd(p.key, static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), p.c2, p.c3);
  for (uint32_t w = 0; w < 4; ++w) {
    const uint64_t index = block * 4 + w;
    if (index < p.first) continue;
    const int64_t j = static_cast<int64_t>(index - p.first);
    if (j >= n) break;
    y[j] = uniform01_hd(words.w[w]) >= p.rate ? x[j] * p.scale : 0.0f;
  }
}

}  // namespace devmap::cuda
