#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/memory_kernels.h"
#include "kernels/cuda/sum_logic.h"

namespace devmap::cuda {
namespace {

constexpr int kMaxParts = kSumPartsPerPass;  // parts per kernel; more are folded in further passes

struct Parts {
  const float* p[kMaxParts];
  int count;
};

__global__ void fill_kernel(float* dst, float value, int64_t n) {
  DEVMAP_GRID_LOOP(i, n) dst[i] = value;
}

// out[i] = (continue_out ? out[i] : parts[0][i]) + the other parts, left to right.
__global__ void sum_kernel(float* out, Parts parts, bool continue_out, int64_t n) {
  DEVMAP_GRID_LOOP(i, n) {
    float s = continue_out ? out[i] : parts.p[0][i];
    for (int k = continue_out ? 0 : 1; k < parts.count; ++k) s += parts.p[k][i];
    out[i] = s;
  }
}

}  // namespace

void launch_fill(float* dst, float value, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, value, count);
  check_launch("fill");
}

void launch_sum(float* out, std::span<const float* const> parts, int64_t count, cudaStream_t stream) {
  if (count <= 0 || parts.empty()) return;
  check_sum_operands(out, parts, count);
  // The first pass starts from parts[0]; later passes continue from the
  // float partial sum in `out`, which is the same sequence of additions.
  for (size_t first = 0; first < parts.size(); first += kMaxParts) {
    Parts batch{};
    batch.count = static_cast<int>(std::min<size_t>(kMaxParts, parts.size() - first));
    for (int k = 0; k < batch.count; ++k) batch.p[k] = parts[first + static_cast<size_t>(k)];
    sum_kernel<<<blocks_for(count), kThreads, 0, stream>>>(out, batch, first > 0, count);
    check_launch("sum");
  }
}

}  // namespace devmap::cuda
