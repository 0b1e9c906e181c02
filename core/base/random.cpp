#include "core/base/random.h"

namespace devmap {

uint64_t stable_hash(std::string_view s, uint64_t seed) {
  uint64_t h = 14695981039346656037ull ^ (seed * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h += 0x9E3779B97F4A7C15ull;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

std::array<uint32_t, 4> philox4x32(PhiloxKey key, std::array<uint32_t, 4> c) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key.k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key.k1, static_cast<uint32_t>(p0)};
    key.k0 += kW0;
    key.k1 += kW1;
  }
  return c;
}

}  // namespace devmap
