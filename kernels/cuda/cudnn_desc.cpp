#include "kernels/cuda/cudnn_desc.h"

#include <limits>
#include <string>

#include "core/base/error.h"
#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {

int to_cudnn_int(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw_runtime(std::string(what) + " of " + std::to_string(v) + " is too large for cuDNN (at most 2^31-1)");
  return static_cast<int>(v);
}

TensorDesc::TensorDesc() {
  check(cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor");
}
TensorDesc::~TensorDesc() {
  (void)cudnnDestroyTensorDescriptor(desc_);
}
void TensorDesc::set(int64_t n, int64_t c, int64_t h, int64_t w) {
  check(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_cudnn_int(n, "a batch"),
                                   to_cudnn_int(c, "a channel count"), to_cudnn_int(h, "a height"),
                                   to_cudnn_int(w, "a width")),
        "cudnnSetTensor4dDescriptor");
}

FilterDesc::FilterDesc() {
  check(cudnnCreateFilterDescriptor(&desc_), "cudnnCreateFilterDescriptor");
}
FilterDesc::~FilterDesc() {
  (void)cudnnDestroyFilterDescriptor(desc_);
}
void FilterDesc::set(int64_t o, int64_t c, int64_t h, int64_t w) {
  check(cudnnSetFilter4dDescriptor(desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_cudnn_int(o, "filters"),
                                   to_cudnn_int(c, "channels"), to_cudnn_int(h, "kernel"), to_cudnn_int(w, "kernel")),
        "cudnnSetFilter4dDescriptor");
}

ConvDesc::ConvDesc() {
  check(cudnnCreateConvolutionDescriptor(&desc_), "cudnnCreateConvolutionDescriptor");
}
ConvDesc::~ConvDesc() {
  (void)cudnnDestroyConvolutionDescriptor(desc_);
}
void ConvDesc::set(int64_t padding, int64_t stride, int64_t dilation, int64_t groups) {
  const int p = to_cudnn_int(padding, "padding"), s = to_cudnn_int(stride, "stride"),
            d = to_cudnn_int(dilation, "dilation");
  check(cudnnSetConvolution2dDescriptor(desc_, p, p, s, s, d, d, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionGroupCount(desc_, to_cudnn_int(groups, "groups")), "cudnnSetConvolutionGroupCount");
  check(cudnnSetConvolutionMathType(desc_, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
}

PoolDesc::PoolDesc() {
  check(cudnnCreatePoolingDescriptor(&desc_), "cudnnCreatePoolingDescriptor");
}
PoolDesc::~PoolDesc() {
  (void)cudnnDestroyPoolingDescriptor(desc_);
}
void PoolDesc::set(int64_t kernel, int64_t stride, int64_t padding) {
  const int k = to_cudnn_int(kernel, "kernel"), s = to_cudnn_int(stride, "stride"),
            p = to_cudnn_int(padding, "padding");
  check(cudnnSetPooling2dDescriptor(desc_, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN, k, k, p, p, s, s),
        "cudnnSetPooling2dDescriptor");
}

ReluDesc::ReluDesc() {
  check(cudnnCreateActivationDescriptor(&desc_), "cudnnCreateActivationDescriptor");
  check(cudnnSetActivationDescriptor(desc_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor");
}
ReluDesc::~ReluDesc() {
  (void)cudnnDestroyActivationDescriptor(desc_);
}

}  // namespace devmap::cuda
