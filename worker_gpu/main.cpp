// worker_gpu: a worker process whose kernels run on an NVIDIA GPU (cuDNN,
// cuBLAS and CUDA kernels, kernels/cuda). Its tensors live in one pool of
// device memory (CudaMemory); the shared-memory slots it copies from and
// to are pinned.
//
//   worker_gpu --endpoint ipc://PATH --device gpu:N   (started by the coordinator)
//   worker_gpu --probe [--device gpu:N]               (is there a usable GPU?)
//
// --probe prints the device, its memory and the driver, runtime, cuDNN and
// cuBLAS versions and exits 0, or prints "no usable GPU: <reason>" and
// exits kNoGpuExit.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "core/base/error.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_kernel_factory.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/probe.h"
#include "worker/worker_service.h"

namespace {

constexpr int kNoGpuExit = 3;

// The value of --device, or "gpu:0".
std::string device_arg(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--device") == 0) return argv[i + 1];
  return "gpu:0";
}

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int ordinal = 0;
  try {
    ordinal = devmap::cuda::parse_gpu_ordinal(device_arg(argc, argv));
  } catch (const devmap::Error& e) {
    std::cerr << "worker_gpu: " << e.what() << "\n";
    return e.exit_code();
  }
  if (has_flag(argc, argv, "--probe")) {
    const devmap::cuda::GpuProbe probe = devmap::cuda::probe_gpu(ordinal);
    std::cout << probe.describe();
    return probe.usable ? 0 : kNoGpuExit;
  }

  auto device = std::make_shared<devmap::cuda::CudaDevice>(ordinal);
  devmap::cuda::CudaKernelFactory kernels(device);
  devmap::WorkerRuntime rt;
  rt.program = "worker_gpu";
  rt.device_kind = "gpu";
  rt.kernels = &kernels;
  rt.set_threads = [](int) {};  // the GPU kernels use no CPU threads
  rt.describe = [ordinal] { return devmap::cuda::runtime_summary(ordinal); };
  rt.make_memory = [device](const std::string& name, uint64_t limit_bytes) {
    return devmap::cuda::make_cuda_memory(device, name, limit_bytes);
  };
  return devmap::worker_main(argc, argv, rt);
}
