#include "kernels/cuda/probe_kernel.h"

namespace devmap::cuda {
namespace {

__global__ void write_answer(int* out) {
  *out = 42;
}

}  // namespace

cudaError_t run_probe_kernel(int* out_device) {
  write_answer<<<1, 1>>>(out_device);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return e;
  int value = 0;
  e = cudaMemcpy(&value, out_device, sizeof value, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  return value == 42 ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace devmap::cuda
