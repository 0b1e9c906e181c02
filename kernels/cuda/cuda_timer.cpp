#include "kernels/cuda/cuda_timer.h"

#include <cassert>

#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {

CudaTimer::~CudaTimer() {
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

int CudaTimer::start() {
  const auto first = static_cast<size_t>(used_) * 2;
  while (events_.size() < first + 2) {
    cudaEvent_t e = nullptr;
    check(cudaEventCreate(&e), "cudaEventCreate (profile)");
    events_.push_back(e);
  }
  check(cudaEventRecord(events_[first], device_.stream()), "cudaEventRecord (profile)");
  return used_++;
}

void CudaTimer::stop(int index) {
  assert(index >= 0 && index < used_);
  check(cudaEventRecord(events_[static_cast<size_t>(index) * 2 + 1], device_.stream()), "cudaEventRecord (profile)");
}

std::vector<double> CudaTimer::collect() {
  std::vector<double> seconds(static_cast<size_t>(used_), 0.0);
  if (used_ > 0) device_.synchronize("profiling");
  for (size_t i = 0; i < seconds.size(); ++i) {
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, events_[i * 2], events_[i * 2 + 1]), "cudaEventElapsedTime (profile)");
    seconds[i] = static_cast<double>(ms) / 1000.0;
  }
  used_ = 0;
  return seconds;
}

}  // namespace devmap::cuda
