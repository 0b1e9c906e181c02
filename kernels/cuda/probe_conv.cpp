#include "kernels/cuda/probe_conv.h"

#include <cuda_runtime_api.h>

#include <cmath>

namespace devmap::cuda {
namespace {

// The descriptors and device buffers of the probe's convolution, released
// whatever step fails.
struct ProbeConv {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  float* buffer = nullptr;  // x (9 floats), w (4), y (4)
  ~ProbeConv() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (buffer) cudaFree(buffer);
  }
};

std::string failed(const char* call, cudnnStatus_t s) {
  return std::string("the probe's convolution failed: ") + call + ": " + cudnnGetErrorString(s);
}

std::string failed(const char* call, cudaError_t e) {
  return std::string("the probe's convolution failed: ") + call + ": " + cudaGetErrorString(e);
}

}  // namespace

std::string probe_convolution_problem(cudnnHandle_t dnn) {
  // A 3x3 image 1..9 and a 2x2 filter of ones, no padding: each output is
  // the sum of a 2x2 window.
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, want[4] = {12, 16, 24, 28};
  ProbeConv c;
  if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&c.buffer), 17 * sizeof(float)); e != cudaSuccess)
    return failed("cudaMalloc", e);
  float *dx = c.buffer, *dw = c.buffer + 9, *dy = c.buffer + 13;
  if (cudaError_t e = cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice); e != cudaSuccess)
    return failed("cudaMemcpy", e);
  if (cudaError_t e = cudaMemcpy(dw, w, sizeof w, cudaMemcpyHostToDevice); e != cudaSuccess)
    return failed("cudaMemcpy", e);
  cudnnStatus_t s = cudnnCreateTensorDescriptor(&c.x);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateTensorDescriptor(&c.y);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateFilterDescriptor(&c.w);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateConvolutionDescriptor(&c.conv);
  if (s != CUDNN_STATUS_SUCCESS) return failed("creating descriptors", s);
  s = cudnnSetTensor4dDescriptor(c.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnSetTensor4dDescriptor(c.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnSetFilter4dDescriptor(c.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 2, 2);
  if (s == CUDNN_STATUS_SUCCESS)
    s = cudnnSetConvolution2dDescriptor(c.conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnSetConvolutionMathType(c.conv, CUDNN_FMA_MATH);
  if (s != CUDNN_STATUS_SUCCESS) return failed("setting descriptors", s);
  const float alpha = 1.0f, beta = 0.0f;
  s = cudnnConvolutionForward(dnn, &alpha, c.x, dx, c.w, dw, c.conv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr,
                              0, &beta, c.y, dy);
  if (s != CUDNN_STATUS_SUCCESS) return failed("cudnnConvolutionForward", s);
  float y[4] = {};
  if (cudaError_t e = cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost); e != cudaSuccess)
    return failed("cudaMemcpy after cudnnConvolutionForward", e);
  for (int i = 0; i < 4; ++i)
    if (std::fabs(y[i] - want[i]) > 1e-4f)
      return "the probe's convolution gave a wrong result: output " + std::to_string(i) + " is " +
             std::to_string(y[i]) + ", not " + std::to_string(want[i]);
  return {};
}

}  // namespace devmap::cuda
