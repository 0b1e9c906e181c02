#include "kernels/cpu/gradient_add.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce_kernels.h"

namespace devmap::cuda {
namespace {

// One block per channel o. For each sample n in order: thread t sums the
// positions p = t, t + kThreads, ... of dy[n, o, :] in double, the block
// adds the partials by a fixed halving tree, and thread 0 adds the sample's
// total to the running sum.
__global__ void channel_sums_kernel(const float* dy, int64_t batch, int64_t channels, int64_t positions, float* db,
                                    bool accumulate) {
  __shared__ double partial[kThreads];
  const int64_t o = blockIdx.x;
  double total = 0.0;
  for (int64_t n = 0; n < batch; ++n) {
    const float* row = dy + (n * channels + o) * positions;
    double s = 0.0;
    for (int64_t p = threadIdx.x; p < positions; p += kThreads) s += static_cast<double>(row[p]);
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) total += partial[0];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[o] = add_gradient_share(db[o], total, accumulate);
}

__global__ void column_sums_kernel(const float* dy, int64_t batch, int64_t units, float* db, bool accumulate) {
  DEVMAP_GRID_LOOP(u, units) {
    double s = 0.0;
    for (int64_t n = 0; n < batch; ++n) s += static_cast<double>(dy[n * units + u]);
    db[u] = add_gradient_share(db[u], s, accumulate);
  }
}

__global__ void broadcast_rows_kernel(const float* b, int64_t batch, int64_t units, float* y) {
  DEVMAP_GRID_LOOP(i, batch * units) y[i] = b[i % units];
}

}  // namespace

void launch_channel_sums(const float* dy, int64_t batch, int64_t channels, int64_t positions, float* db,
                         bool accumulate, cudaStream_t stream) {
  if (channels <= 0) return;
  channel_sums_kernel<<<static_cast<unsigned>(channels), kThreads, 0, stream>>>(dy, batch, channels, positions, db,
                                                                                accumulate);
  check_launch("conv2d bias gradient");
}

void launch_column_sums(const float* dy, int64_t batch, int64_t units, float* db, bool accumulate,
                        cudaStream_t stream) {
  if (units <= 0) return;
  column_sums_kernel<<<blocks_for(units), kThreads, 0, stream>>>(dy, batch, units, db, accumulate);
  check_launch("dense bias gradient");
}

void launch_broadcast_rows(const float* b, int64_t batch, int64_t units, float* y, cudaStream_t stream) {
  if (batch * units <= 0) return;
  broadcast_rows_kernel<<<blocks_for(batch * units), kThreads, 0, stream>>>(b, batch, units, y);
  check_launch("dense bias");
}

}  // namespace devmap::cuda
