#include "core/plan/arena.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <numeric>

namespace devmap {
namespace {

uint64_t aligned(uint64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool overlap_in_time(const ArenaBuffer& a, const ArenaBuffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

ArenaLayout place_buffers(const std::vector<ArenaBuffer>& buffers) {
  const size_t n = buffers.size();
  ArenaLayout layout;
  layout.offsets.assign(n, 0);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const uint64_t sa = aligned(buffers[a].bytes), sb = aligned(buffers[b].bytes);
    if (sa != sb) return sa > sb;
    if (buffers[a].first != buffers[b].first) return buffers[a].first < buffers[b].first;
    return a < b;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> taken;  // [begin, end) of the placed buffers alive with this one
  for (size_t i : order) {
    const ArenaBuffer& b = buffers[i];
    assert(b.first <= b.last);
    const uint64_t size = aligned(b.bytes);
    taken.clear();
    for (size_t j : placed)
      if (overlap_in_time(b, buffers[j]))
        taken.emplace_back(layout.offsets[j], layout.offsets[j] + aligned(buffers[j].bytes));
    std::sort(taken.begin(), taken.end());
    uint64_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + size) break;  // the gap before it fits
      offset = std::max(offset, end);
    }
    layout.offsets[i] = offset;
    layout.bytes = std::max(layout.bytes, offset + size);
    placed.push_back(i);
  }
  // The live bytes at each position where a lifetime starts (the maximum is at one of them).
  std::map<int, int64_t> delta;
  for (const ArenaBuffer& b : buffers) {
    delta[b.first] += static_cast<int64_t>(aligned(b.bytes));
    delta[b.last + 1] -= static_cast<int64_t>(aligned(b.bytes));
  }
  int64_t live = 0;
  for (const auto& [position, change] : delta) {
    live += change;
    layout.lower_bound = std::max(layout.lower_bound, static_cast<uint64_t>(live));
  }
  return layout;
}

}  // namespace devmap
