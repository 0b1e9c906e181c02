// Philox-4x32-10 for the kernels: the same function as core/base/random.cpp
// (philox4x32) and uniform01, bit for bit, so a GPU draws the CPU's
// numbers. Host and device (tests compare it with core's on the CPU).
#pragma once

#include <cstdint>

#include "core/base/random.h"
#include "kernels/cuda/host_device.h"

namespace devmap::cuda {

struct Words4 {
  uint32_t w[4];
};

DEVMAP_HD inline Words4 philox4x32_hd(PhiloxKey key, uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0, p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ key.k0, n1 = static_cast<uint32_t>(p1);
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ key.k1, n3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    key.k0 += kW0;
    key.k1 += kW1;
  }
  return Words4{{c0, c1, c2, c3}};
}

DEVMAP_HD inline float uniform01_hd(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

}  // namespace devmap::cuda
