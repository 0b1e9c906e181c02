// Bias gradients and bias broadcasts as deterministic CUDA kernels: every
// output element is reduced by one thread (or one block with a fixed tree)
// over its inputs in a fixed order, in double, never with atomics, so the
// bits are the same on every run and the sums are those of the CPU kernels
// up to the rounding of double additions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmap::cuda {

// db[o] (+)= sum over n of sum over p of dy[n, o, p]  (dy [batch, channels, positions]),
// one block per channel: each sample's positions are summed by a fixed tree
// of per-thread partials, the samples are added in order (the CPU's order
// over samples). accumulate: add to db instead of overwriting.
void launch_channel_sums(const float* dy, int64_t batch, int64_t channels, int64_t positions, float* db,
                         bool accumulate, cudaStream_t stream);

// db[u] (+)= sum over n of dy[n, u] (dy [batch, units]), samples added in
// order in double: the CPU dense kernel's exact sum.
void launch_column_sums(const float* dy, int64_t batch, int64_t units, float* db, bool accumulate, cudaStream_t stream);

// y[n, u] = b[u] for every sample n (y [batch, units]).
void launch_broadcast_rows(const float* b, int64_t batch, int64_t units, float* y, cudaStream_t stream);

}  // namespace devmap::cuda
