// --profile and --trace on a device with a DeviceTimer (a GPU's CUDA
// events): kernels, gradient sums and the optimizer are reported in the
// timer's device time, not in the host's enqueue time (the trace's slices
// are what calibration turns into per-op costs). A fake asynchronous timer
// whose every interval lasts 1000 s, read only at collect(), tells the two
// apart; the CPU kernels do the work.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/exec/executor.h"
#include "core/exec/host_memory.h"
#include "core/exec/trace.h"
#include "kernels/cpu/cpu_kernel_factory.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

constexpr double kIntervalSeconds = 1000.0;

class FakeTimer : public DeviceTimer {
 public:
  explicit FakeTimer(int* collects) : collects_(collects) {}
  int start() override {
    open_.push_back(true);
    return static_cast<int>(open_.size()) - 1;
  }
  void stop(int index) override {
    EXPECT_TRUE(open_.at(static_cast<size_t>(index))) << "stopped twice";
    open_[static_cast<size_t>(index)] = false;
  }
  std::vector<double> collect() override {
    ++*collects_;
    for (bool open : open_) EXPECT_FALSE(open) << "collected an interval that was never stopped";
    std::vector<double> s(open_.size(), kIntervalSeconds);
    open_.clear();
    return s;
  }
  void clear() override { open_.clear(); }

 private:
  std::vector<bool> open_;
  int* collects_;
};

class TimedMemory : public HostMemory {
 public:
  using HostMemory::HostMemory;
  std::unique_ptr<DeviceTimer> make_timer() override { return std::make_unique<FakeTimer>(&collects); }
  int collects = 0;
};

// Two training steps of the reference CNN on `memory`'s device, with
// --profile, or with a trace into `trace` when one is given.
std::vector<ProfileEntry> two_steps(DeviceMemory& memory, TraceBuffer* trace = nullptr) {
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = "cpu:0";
  Program p = build_training_program(g);
  CpuKernelFactory kernels;
  OptimizerConfig opt;
  opt.kind = OptimizerConfig::Kind::kSgd;
  Executor ex(g, p, kernels, opt, 1, 3, nullptr, nullptr, nullptr, &memory);
  ex.set_external(g.find("image"));
  ex.set_external(g.find("label"));
  ex.reserve(4);
  ex.init_parameters();
  if (trace)
    ex.set_trace(trace);
  else
    ex.enable_profile();
  std::vector<float> images(4 * 784, 0.5f), labels = {0, 1, 2, 3};
  ex.bind_output(g.find("image"), images.data());
  ex.bind_output(g.find("label"), labels.data());
  for (int64_t step = 0; step < 2; ++step) {
    StepInfo info{step, 0, 4, true};
    ex.forward(4, info);
    ex.backward(4, info, false);
    ex.apply_optimizer(step + 1);
  }
  return trace ? std::vector<ProfileEntry>{} : ex.profile().entries();
}

TEST(DeviceTimeProfile, KernelsAndOptimizerAreTimedByTheDevicesTimer) {
  TimedMemory timed("gpu:0", 0);
  HostMemory host("cpu:0", 0);
  const std::vector<ProfileEntry> device = two_steps(timed), wall = two_steps(host);
  ASSERT_EQ(device.size(), wall.size());
  ASSERT_FALSE(device.empty());
  for (size_t i = 0; i < device.size(); ++i) {
    const ProfileEntry &d = device[i], &w = wall[i];
    EXPECT_EQ(d.name, w.name) << "the same entries in the same order";
    EXPECT_EQ(d.direction, w.direction) << d.name;
    EXPECT_EQ(d.calls, w.calls) << d.name;
    EXPECT_EQ(d.flops, w.flops) << d.name;
    EXPECT_EQ(d.seconds, static_cast<double>(d.calls) * kIntervalSeconds)
        << d.name << " " << profile_direction_name(d.direction) << ": the timer's seconds";
    EXPECT_LT(w.seconds, static_cast<double>(w.calls) * kIntervalSeconds) << d.name << ": the host's clock";
  }
  // One wait for the device per pass (forward, backward) and per update.
  EXPECT_EQ(timed.collects, 2 * 3);
}

TEST(DeviceTimeTrace, KernelGradientSumAndOptimizerSlicesLastTheDevicesTime) {
  TimedMemory timed("gpu:0", 0);
  TraceBuffer trace;
  trace.reserve(512);
  two_steps(timed, &trace);
  const int64_t device_ns = static_cast<int64_t>(kIntervalSeconds * 1e9);
  std::map<TraceKind, int> slices;
  for (const TraceEvent& e : trace.events()) {
    if (e.kind == TraceKind::kForward || e.kind == TraceKind::kBackward || e.kind == TraceKind::kSumGrads ||
        e.kind == TraceKind::kOptimizer) {
      ++slices[e.kind];
      EXPECT_EQ(e.end_ns - e.start_ns, device_ns)
          << "kind " << static_cast<int>(e.kind) << ", node " << e.id << ": the timer's time, not the host's";
    }
  }
  EXPECT_GT(slices[TraceKind::kForward], 0);
  EXPECT_GT(slices[TraceKind::kBackward], 0);
  EXPECT_EQ(slices[TraceKind::kOptimizer], 2);
  // One wait for the device per pass (forward, backward) and per update.
  EXPECT_EQ(timed.collects, 2 * 3);
}

}  // namespace
}  // namespace devmap
