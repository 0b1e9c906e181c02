#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/loss_kernels.h"
#include "kernels/cuda/loss_logic.h"

namespace devmap::cuda {
namespace {

using loss::valid_label;

__global__ void cross_entropy_per_sample(const float* logits, const float* labels, int64_t batch, int64_t classes,
                                         double* values, int* bad) {
  DEVMAP_GRID_LOOP(n, batch) {
    const float label = labels[n];
    if (!valid_label(label, classes)) {
      atomicMin(bad, static_cast<int>(n));
      values[n] = 0.0;
      continue;
    }
    values[n] = loss::cross_entropy(logits + n * classes, classes, static_cast<int64_t>(label));
  }
}

__global__ void accuracy_per_sample(const float* logits, const float* labels, int64_t batch, int64_t classes,
                                    double* correct, int* bad) {
  DEVMAP_GRID_LOOP(n, batch) {
    const float label = labels[n];
    if (!valid_label(label, classes)) {
      atomicMin(bad, static_cast<int>(n));
      correct[n] = 0.0;
      continue;
    }
    correct[n] = loss::first_argmax(logits + n * classes, classes) == static_cast<int64_t>(label) ? 1.0 : 0.0;
  }
}

// out[0] = (sum of v[0..n) in sample order) / divisor, one thread.
__global__ void ordered_mean(const double* v, int64_t n, double divisor, float* out) {
  out[0] = static_cast<float>(loss::batch_sum(v, n) / divisor);
}

__global__ void cross_entropy_backward(const float* logits, const float* labels, const float* dy, int64_t batch,
                                       int64_t classes, double batch_total, float* d_logits) {
  const double scale = static_cast<double>(dy[0]) / batch_total;
  DEVMAP_GRID_LOOP(n, batch) {
    const float label = labels[n];
    const int64_t target = valid_label(label, classes) ? static_cast<int64_t>(label) : -1;
    loss::cross_entropy_gradient(logits + n * classes, classes, target, scale, d_logits + n * classes);
  }
}

__global__ void argmax_kernel(const float* logits, int64_t batch, int64_t classes, float* y) {
  DEVMAP_GRID_LOOP(n, batch) y[n] = static_cast<float>(loss::first_argmax(logits + n * classes, classes));
}

void reset_bad(int* bad, cudaStream_t stream) {
  check(cudaMemsetAsync(bad, 0x7f, sizeof(int), stream), "cudaMemsetAsync (label check)");
}

}  // namespace

void launch_softmax_cross_entropy_forward(const float* logits, const float* labels, int64_t batch, int64_t classes,
                                          double batch_total, double* scratch, int* bad_sample, float* out,
                                          cudaStream_t stream) {
  reset_bad(bad_sample, stream);
  cross_entropy_per_sample<<<blocks_for(batch), kThreads, 0, stream>>>(logits, labels, batch, classes, scratch,
                                                                       bad_sample);
  check_launch("softmax_cross_entropy forward");
  ordered_mean<<<1, 1, 0, stream>>>(scratch, batch, batch_total, out);
  check_launch("softmax_cross_entropy sum");
}

void launch_softmax_cross_entropy_backward(const float* logits, const float* labels, const float* dy, int64_t batch,
                                           int64_t classes, double batch_total, float* d_logits, cudaStream_t stream) {
  cross_entropy_backward<<<blocks_for(batch), kThreads, 0, stream>>>(logits, labels, dy, batch, classes, batch_total,
                                                                     d_logits);
  check_launch("softmax_cross_entropy backward");
}

void launch_accuracy(const float* logits, const float* labels, int64_t batch, int64_t classes, double batch_total,
                     double* scratch, int* bad_sample, float* out, cudaStream_t stream) {
  reset_bad(bad_sample, stream);
  accuracy_per_sample<<<blocks_for(batch), kThreads, 0, stream>>>(logits, labels, batch, classes, scratch, bad_sample);
  check_launch("accuracy");
  ordered_mean<<<1, 1, 0, stream>>>(scratch, batch, batch_total, out);
  check_launch("accuracy sum");
}

void launch_argmax(const float* logits, int64_t batch, int64_t classes, float* y, cudaStream_t stream) {
  argmax_kernel<<<blocks_for(batch), kThreads, 0, stream>>>(logits, batch, classes, y);
  check_launch("argmax");
}

}  // namespace devmap::cuda
