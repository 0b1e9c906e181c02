// Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011): the
// value at (key, counter) is a pure function, so any process or thread that
// asks for the same (seed, op name, step, sample, element) gets the same
// bits. Keys are derived from strings with a fixed 64-bit hash.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace devmap {

struct PhiloxKey {
  uint32_t k0, k1;
};

// FNV-1a over the bytes, then a SplitMix64 finaliser. Stable across builds.
uint64_t stable_hash(std::string_view s, uint64_t seed);

inline PhiloxKey philox_key(uint64_t seed, std::string_view stream) {
  uint64_t h = stable_hash(stream, seed);
  return {static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}

// Four 32-bit random words for a 128-bit counter.
std::array<uint32_t, 4> philox4x32(PhiloxKey key, std::array<uint32_t, 4> counter);

// A float uniform in [0, 1) from 32 random bits (24 significant bits).
inline float uniform01(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

// Uniform [0,1) value number `index` of the stream (key, c2, c3): element
// `index` uses word index % 4 of counter (index / 4, c1_hi, c2, c3).
inline float uniform_at(PhiloxKey key, uint64_t index, uint32_t c2 = 0, uint32_t c3 = 0) {
  uint64_t block = index / 4;
  auto w = philox4x32(key, {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), c2, c3});
  return uniform01(w[index % 4]);
}

}  // namespace devmap
