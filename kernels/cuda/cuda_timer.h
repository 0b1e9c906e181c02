// CudaTimer: the GPU's DeviceTimer (core/exec/device_timer.h). Each interval is
// a pair of CUDA events recorded on the device's one stream, so its figure
// is the time the GPU took for the work queued between them, not the time
// the host took to queue it. Events are made on first use and kept for the
// next pass; collect() waits for the last one.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "core/exec/device_timer.h"
#include "kernels/cuda/cuda_device.h"

namespace devmap::cuda {

class CudaTimer final : public DeviceTimer {
 public:
  explicit CudaTimer(CudaDevice& device) : device_(device) {}
  ~CudaTimer() override;
  CudaTimer(const CudaTimer&) = delete;
  CudaTimer& operator=(const CudaTimer&) = delete;

  int start() override;
  void stop(int index) override;
  std::vector<double> collect() override;
  void clear() override { used_ = 0; }

 private:
  CudaDevice& device_;
  std::vector<cudaEvent_t> events_;  // 2 per interval: start, stop
  int used_ = 0;                     // intervals started since the last collect()/clear()
};

}  // namespace devmap::cuda
