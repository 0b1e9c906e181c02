// The batch-reduced ops as CUDA kernels (see loss.h for their contracts).
// Each per-sample pass is one thread per sample; the batch sum is one block
// with a fixed order (thread t sums samples t, t+256, ... in order, then
// thread 0 adds the 256 partials in order), so the bits are the same on
// every run. Labels that are not class indices set *bad_sample to the
// smallest such sample (atomicMin: the value does not depend on timing).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace devmap::cuda {

// The value *bad_sample holds when every label was valid.
constexpr int kNoBadSample = 0x7f7f7f7f;

// out[0] = (sum over samples of -log softmax(logits)[label]) / batch_total,
// in double; scratch: `batch` doubles; bad_sample: one int.
void launch_softmax_cross_entropy_forward(const float* logits, const float* labels, int64_t batch, int64_t classes,
                                          double batch_total, double* scratch, int* bad_sample, float* out,
                                          cudaStream_t stream);

// d_logits = dy[0] * (softmax - onehot(label)) / batch_total (overwritten).
// A label that is not a class index gets no one-hot (no memory outside the
// row is touched); the forward pass of the same step has reported it.
void launch_softmax_cross_entropy_backward(const float* logits, const float* labels, const float* dy, int64_t batch,
                                           int64_t classes, double batch_total, float* d_logits, cudaStream_t stream);

// out[0] = (samples whose first largest logit is the label) / batch_total;
// scratch: `batch` doubles (used as counts); bad_sample: one int.
void launch_accuracy(const float* logits, const float* labels, int64_t batch, int64_t classes, double batch_total,
                     double* scratch, int* bad_sample, float* out, cudaStream_t stream);

// y[n] = the index of sample n's first largest logit (a NaN wins), as a float.
void launch_argmax(const float* logits, int64_t batch, int64_t classes, float* y, cudaStream_t stream);

}  // namespace devmap::cuda
