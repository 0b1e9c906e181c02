// Helpers for the GPU tests: skipping without a GPU, one device and memory
// pool per test process, and GpuMirror, which runs an op's CUDA kernel on
// device copies of a CPU OpHarness's buffers (same inputs, parameters,
// output gradient and context) so the two kernels' results can be compared.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/exec/device_memory.h"
#include "kernels/cuda/cuda_kernel_factory.h"
#include "kernels/cuda/cuda_memory.h"
#include "kernels/cuda/probe.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {

inline const cuda::GpuProbe& gpu_probe() {
  static const cuda::GpuProbe probe = cuda::probe_gpu(0);
  return probe;
}

// Skips the current test, with the reason, when gpu:0 is not usable.
#define DEVMAP_REQUIRE_GPU()                                                                                          \
  do {                                                                                                                \
    if (!::devmap::test::gpu_probe().usable) GTEST_SKIP() << "no usable GPU: " << ::devmap::test::gpu_probe().reason; \
  } while (0)

// The process's gpu:0, a 1 GiB pool on it and the CUDA kernel factory.
struct GpuEnv {
  std::shared_ptr<cuda::CudaDevice> device = std::make_shared<cuda::CudaDevice>(0);
  cuda::CudaMemory memory{device, "gpu:0", uint64_t{1} << 30};
  cuda::CudaKernelFactory factory{device};
};

inline GpuEnv& gpu_env() {
  static GpuEnv* env = new GpuEnv();  // never destroyed: outlives every test's buffers
  return *env;
}

// A directory with this build's binaries: $DEVMAP_BIN_DIR (a bundle) or the build's bin/.
inline std::string bin_dir() {
  const char* dir = std::getenv("DEVMAP_BIN_DIR");
  return dir != nullptr ? dir : DEVMAP_BUILD_BIN_DIR;
}

// The configs folder: $DEVMAP_CONFIG_DIR (a bundle) or the source tree's.
inline std::string config_dir() {
  const char* dir = std::getenv("DEVMAP_CONFIG_DIR");
  return dir != nullptr ? dir : std::string(DEVMAP_SOURCE_DIR) + "/configs";
}

// A device buffer holding a copy of host data.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(const float* host, int64_t count) : buffer_(gpu_env().memory, count, "test tensor") {
    if (count > 0) gpu_env().memory.copy_from_host(buffer_.data(), host, static_cast<size_t>(count) * sizeof(float));
  }
  explicit DeviceTensor(const Buffer& host) : DeviceTensor(host.data(), host.size()) {}
  // `count` zeroed floats.
  explicit DeviceTensor(int64_t count) : buffer_(gpu_env().memory, count, "test tensor") {}
  float* data() const { return buffer_.data(); }
  int64_t size() const { return buffer_.size(); }
  std::vector<float> download() const {
    std::vector<float> v(static_cast<size_t>(buffer_.size()));
    if (!v.empty()) gpu_env().memory.copy_to_host(v.data(), buffer_.data(), v.size() * sizeof(float));
    return v;
  }

 private:
  DeviceBuffer buffer_;
};

// Runs `h.node`'s CUDA kernel on device copies of h's buffers, as the
// executor would: the same null views as OpHarness::backward, the same
// context (seed, step, sample offset, batch total, training), a device
// workspace of the kernel's workspace_bytes. Upload again (sync()) after
// changing the harness's host buffers.
class GpuMirror {
 public:
  explicit GpuMirror(OpHarness& h) : h_(h), kernel_(gpu_env().factory.make_kernel(h.node.op())) {
    const size_t ws = kernel_->workspace_bytes(h.node, h.batch);
    workspace_ = DeviceTensor(static_cast<int64_t>((ws + 3) / 4 + 1));
    workspace_bytes_ = ws;
    sync();
  }

  // Copies the harness's host buffers to the device.
  void sync() {
    inputs_.clear();
    d_inputs_.clear();
    params_.clear();
    d_params_.clear();
    for (size_t i = 0; i < h_.inputs.size(); ++i) {
      inputs_.emplace_back(h_.inputs[i]);
      d_inputs_.emplace_back(h_.d_inputs[i]);
    }
    for (size_t i = 0; i < h_.params.size(); ++i) {
      params_.emplace_back(h_.params[i]);
      d_params_.emplace_back(h_.d_params[i]);
    }
    output_ = DeviceTensor(h_.output);
    d_output_ = DeviceTensor(h_.d_output);
  }

  void forward() {
    std::vector<TensorView> in, par;
    for (int i = 0; i < static_cast<int>(inputs_.size()); ++i) in.push_back(view(inputs_[i], h_.input_shape(i)));
    for (size_t i = 0; i < params_.size(); ++i) par.push_back(view(params_[i], h_.node.params[i].shape));
    KernelContext ctx = context();
    ForwardArgs args{h_.node, in, par, view(output_, h_.output_shape()), ctx};
    kernel_->forward(args);
  }

  void backward(bool accumulate = false) {
    std::vector<TensorView> in, par, d_in, d_par;
    for (int i = 0; i < static_cast<int>(inputs_.size()); ++i) {
      TensorView v = view(inputs_[static_cast<size_t>(i)], h_.input_shape(i));
      if (!h_.pass_inputs_to_backward) v.data = nullptr;
      in.push_back(v);
      TensorView d = view(d_inputs_[static_cast<size_t>(i)], h_.input_shape(i));
      if (!h_.want_input_grad[static_cast<size_t>(i)]) d.data = nullptr;
      d_in.push_back(d);
    }
    for (size_t i = 0; i < params_.size(); ++i) {
      par.push_back(view(params_[i], h_.node.params[i].shape));
      TensorView d = view(d_params_[i], h_.node.params[i].shape);
      if (!h_.node.params[i].trained) d.data = nullptr;  // state: no gradient
      d_par.push_back(d);
    }
    TensorView y = view(output_, h_.output_shape());
    if (!h_.pass_output_to_backward) y.data = nullptr;
    KernelContext ctx = context();
    BackwardArgs args{h_.node, in, par, y, view(d_output_, h_.output_shape()), d_in, d_par, accumulate, ctx};
    kernel_->backward(args);
  }

  std::vector<float> output() const { return output_.download(); }
  std::vector<float> d_input(size_t i) const { return d_inputs_[i].download(); }
  std::vector<float> d_param(size_t i) const { return d_params_[i].download(); }
  std::vector<float> param(size_t i) const { return params_[i].download(); }  // state the kernel updates
  OpKernel& kernel() { return *kernel_; }

 private:
  static TensorView view(const DeviceTensor& t, Shape shape) { return TensorView{t.data(), std::move(shape)}; }
  KernelContext context() const {
    KernelContext ctx = h_.ctx;
    ctx.pool = nullptr;
    ctx.workspace = workspace_.data();
    ctx.workspace_bytes = workspace_bytes_;
    return ctx;
  }

  OpHarness& h_;
  std::unique_ptr<OpKernel> kernel_;
  std::vector<DeviceTensor> inputs_, d_inputs_, params_, d_params_;
  DeviceTensor output_, d_output_, workspace_;
  size_t workspace_bytes_ = 0;
};

// EXPECTs |gpu - cpu| <= rtol * |cpu| + atol * max|cpu| for every element
// (NaN where the CPU has NaN), reporting the worst element.
inline void expect_close(const std::vector<float>& gpu, const Buffer& cpu, double rtol, double atol,
                         const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(gpu.size()), cpu.size()) << what;
  double scale = 0.0;
  for (int64_t i = 0; i < cpu.size(); ++i)
    if (std::isfinite(cpu.data()[i])) scale = std::max(scale, std::fabs(static_cast<double>(cpu.data()[i])));
  int64_t bad = 0, worst = -1;
  double worst_excess = 0.0;
  for (int64_t i = 0; i < cpu.size(); ++i) {
    const double c = cpu.data()[i], g = gpu[static_cast<size_t>(i)];
    if (std::isnan(c) || std::isnan(g)) {
      if (std::isnan(c) != std::isnan(g)) {
        ++bad;
        worst = i;
        worst_excess = INFINITY;
      }
      continue;
    }
    const double excess = std::fabs(g - c) - (rtol * std::fabs(c) + atol * scale);
    if (excess > 0) {
      ++bad;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << cpu.size() << " elements outside rtol " << rtol << ", atol "
                    << atol << " x " << scale << "; worst at " << worst << ": gpu "
                    << (worst >= 0 ? gpu[static_cast<size_t>(worst)] : 0.0f) << ", cpu "
                    << (worst >= 0 ? cpu.data()[worst] : 0.0f);
}

// EXPECTs the same values (== on floats; NaN matches NaN).
inline void expect_equal(const std::vector<float>& gpu, const Buffer& cpu, const std::string& what) {
  expect_close(gpu, cpu, 0.0, 0.0, what);
}

}  // namespace devmap::test
