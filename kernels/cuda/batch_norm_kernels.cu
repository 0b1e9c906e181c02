#include "kernels/cpu/gradient_add.h"
#include "kernels/cuda/batch_norm_kernels.h"
#include "kernels/cuda/batch_norm_logic.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"

namespace devmap::cuda {
namespace {

// One block of bn::kLanes threads per channel (a grid-stride loop over the
// channels): thread t sums lane t in registers, then thread 0 adds the
// lanes in the CPU's tree. The block's `lanes` hold the 16 lanes' sums.
__device__ bn::ChannelSums block_channel_sums(const BatchNormArgs& a, const float* dy, int64_t ch,
                                              bn::LaneSums* lanes) {
  const double shift = a.n > 0 && a.hw > 0 ? a.x[ch * a.hw] : 0.0;
  lanes[threadIdx.x] = bn::lane_sums(a.x, dy, a.n, a.c, a.hw, ch, static_cast<int>(threadIdx.x), shift);
  __syncthreads();
  return bn::channel_sums(lanes, shift, static_cast<double>(a.n * a.hw));
}

// Per channel: y = (x - m) a + b's figures m, a, b (floats) into
// scratch[3ch..3ch+2]; the state updated when training.
__global__ void batch_norm_stats_kernel(BatchNormArgs a) {
  __shared__ bn::LaneSums lanes[bn::kLanes];
  for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
    double mean = a.running_mean[ch], var = a.running_var[ch];
    if (a.training) {
      const bn::ChannelSums m = block_channel_sums(a, nullptr, ch, lanes);
      mean = m.mean;
      var = m.var;
    }
    if (threadIdx.x == 0) {
      if (a.training) {
        const double count = static_cast<double>(a.n * a.hw);
        const double unbiased = var * count / (count - 1.0);
        a.running_mean[ch] = static_cast<float>((1.0 - a.momentum) * a.running_mean[ch] + a.momentum * mean);
        a.running_var[ch] = static_cast<float>((1.0 - a.momentum) * a.running_var[ch] + a.momentum * unbiased);
        if (ch == 0) a.num_batches_tracked[0] += 1.0f;
      }
      const bn::Affine f = bn::forward_affine(mean, var, a.weight[ch], a.bias[ch], a.eps);
      a.scratch[3 * ch] = f.m;
      a.scratch[3 * ch + 1] = f.a;
      a.scratch[3 * ch + 2] = f.b;
    }
    __syncthreads();  // lanes is rewritten for the next channel
  }
}

__global__ void batch_norm_apply_kernel(BatchNormArgs a, float* y) {
  DEVMAP_GRID_LOOP(i, a.n * a.c * a.hw) {
    const int64_t ch = (i / a.hw) % a.c;
    const double* s = a.scratch + 3 * ch;
    y[i] = (a.x[i] - static_cast<float>(s[0])) * static_cast<float>(s[1]) + static_cast<float>(s[2]);
  }
}

// Per channel: the parameter gradients, and dx = (dy a + (x - m) b) + c's
// figures m, a, b, c (floats) into scratch[4ch..4ch+3].
__global__ void batch_norm_backward_channels(BatchNormArgs a, BatchNormGrads g) {
  __shared__ bn::LaneSums lanes[bn::kLanes];
  for (int64_t ch = blockIdx.x; ch < a.c; ch += gridDim.x) {
    const bn::ChannelSums s = block_channel_sums(a, g.dy, ch, lanes);
    if (threadIdx.x == 0) {
      const bn::Backward f = bn::backward_figures(s, a.weight[ch], a.eps, static_cast<double>(a.n * a.hw));
      g.d_weight[ch] = add_gradient_share(g.d_weight[ch], f.d_weight, g.accumulate);
      g.d_bias[ch] = add_gradient_share(g.d_bias[ch], f.d_bias, g.accumulate);
      a.scratch[4 * ch] = f.m;
      a.scratch[4 * ch + 1] = f.a;
      a.scratch[4 * ch + 2] = f.b;
      a.scratch[4 * ch + 3] = f.c;
    }
    __syncthreads();  // lanes is rewritten for the next channel
  }
}

__global__ void batch_norm_backward_inputs(BatchNormArgs a, BatchNormGrads g) {
  DEVMAP_GRID_LOOP(i, a.n * a.c * a.hw) {
    const int64_t ch = (i / a.hw) % a.c;
    const double* s = a.scratch + 4 * ch;
    const float m = static_cast<float>(s[0]), ga = static_cast<float>(s[1]), gb = static_cast<float>(s[2]),
                gc = static_cast<float>(s[3]);
    g.dx[i] = (g.dy[i] * ga + (a.x[i] - m) * gb) + gc;
  }
}

// One block per channel, at most 65535 (the rest by the grid-stride loop).
unsigned channel_blocks(int64_t c) {
  return static_cast<unsigned>(c < 65535 ? c : 65535);
}

}  // namespace

void launch_batch_norm_forward(const BatchNormArgs& a, float* y, cudaStream_t stream) {
  if (a.c <= 0 || a.n <= 0) return;
  batch_norm_stats_kernel<<<channel_blocks(a.c), bn::kLanes, 0, stream>>>(a);
  check_launch("batch_norm statistics");
  batch_norm_apply_kernel<<<blocks_for(a.n * a.c * a.hw), kThreads, 0, stream>>>(a, y);
  check_launch("batch_norm forward");
}

void launch_batch_norm_backward(const BatchNormArgs& a, const BatchNormGrads& g, cudaStream_t stream) {
  if (a.c <= 0 || a.n <= 0) return;
  batch_norm_backward_channels<<<channel_blocks(a.c), bn::kLanes, 0, stream>>>(a, g);
  check_launch("batch_norm backward (channels)");
  if (g.dx == nullptr) return;
  batch_norm_backward_inputs<<<blocks_for(a.n * a.c * a.hw), kThreads, 0, stream>>>(a, g);
  check_launch("batch_norm backward (inputs)");
}

}  // namespace devmap::cuda
