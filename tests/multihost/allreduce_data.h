// The data the multi-host tests reduce, shared by the rank program
// (mpi_session_ranks.cpp) and the test that checks its output: each rank's
// contribution, the rank-order sum MpiSession::allreduce_sum_ordered must
// equal to the bit, and a digest of a float buffer's bits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace devmap::testing {

// Rank `rank`'s element `i`: signed magnitudes from 2^-10 to 2^20, so the
// order in which ranks are added changes the bits of the sum.
inline float contribution(int rank, size_t i) {
  uint64_t h = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  float m = std::ldexp(1.0f + static_cast<float>(h & 0xffff) / 65536.0f, static_cast<int>((h >> 16) % 31) - 10);
  return (h >> 63) ? -m : m;
}

// ((x_0 + x_1) + x_2) + ... element by element, or the reverse order.
inline std::vector<float> rank_order_sum(int ranks, size_t count, bool reverse = false) {
  std::vector<float> sum(count);
  for (size_t i = 0; i < count; ++i) {
    float s = contribution(reverse ? ranks - 1 : 0, i);
    for (int k = 1; k < ranks; ++k) s += contribution(reverse ? ranks - 1 - k : k, i);
    sum[i] = s;
  }
  return sum;
}

// FNV-1a over the bytes of `n` floats.
inline uint64_t bits_digest(const float* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// The value of element `i` of the tensor the tensor test sends.
inline float tensor_element(size_t i) {
  return static_cast<float>(i % 65521) * 0.5f - 7.25f;
}

}  // namespace devmap::testing
