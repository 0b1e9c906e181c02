// Owning wrappers of the cuDNN descriptors the kernels use (the legacy
// descriptor API; see docs/GPU.md for why). Each is created once and set
// whenever the shape it describes changes.
#pragma once

#include <cudnn.h>

#include <cstdint>

namespace devmap::cuda {

// A float32 NCHW tensor descriptor.
class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // Throws devmap::Error when a dimension does not fit cuDNN's int.
  void set(int64_t n, int64_t c, int64_t h, int64_t w);
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// A float32 OIHW filter descriptor.
class FilterDesc {
 public:
  FilterDesc();
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  void set(int64_t o, int64_t c, int64_t h, int64_t w);
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

// A 2-D cross-correlation (what conv2d computes) in float32 with FMA math
// (CUDNN_FMA_MATH: no tensor cores, so no TF32).
class ConvDesc {
 public:
  ConvDesc();
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  // Cross-correlation, FMA math; `groups` channel groups (the filter
  // descriptor then holds C/groups input channels).
  void set(int64_t padding, int64_t stride, int64_t dilation, int64_t groups);
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// Deterministic max pooling with NaN propagation.
class PoolDesc {
 public:
  PoolDesc();
  ~PoolDesc();
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
  void set(int64_t kernel, int64_t stride, int64_t padding);
  cudnnPoolingDescriptor_t get() const { return desc_; }

 private:
  cudnnPoolingDescriptor_t desc_ = nullptr;
};

// ReLU with NaN propagation.
class ReluDesc {
 public:
  ReluDesc();
  ~ReluDesc();
  ReluDesc(const ReluDesc&) = delete;
  ReluDesc& operator=(const ReluDesc&) = delete;
  cudnnActivationDescriptor_t get() const { return desc_; }

 private:
  cudnnActivationDescriptor_t desc_ = nullptr;
};

// `v` as cuDNN's int; throws devmap::Error naming `what` when it does not fit.
int to_cudnn_int(int64_t v, const char* what);

}  // namespace devmap::cuda
