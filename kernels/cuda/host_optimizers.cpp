#include "kernels/cuda/host_optimizers.h"

#include <cassert>
#include <cmath>

#include "core/exec/thread_pool.h"
#include "kernels/cuda/optimizer_logic.h"
#include "kernels/cuda/optimizers.h"

namespace devmap::cuda {
namespace {

float as_float(double v) {
  return static_cast<float>(v);
}

// fn(i) for every i in [0, n), split over the pool (elementwise: the bits do
// not depend on the split).
template <class Fn>
void for_elements(ThreadPool& pool, int64_t n, const Fn& fn) {
  constexpr int64_t kGrain = 1 << 16;
  if (n < 2 * kGrain || pool.size() == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool.parallel_for(n, [&fn](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
}

class HostSgd final : public OptimizerKernel {
 public:
  explicit HostSgd(const OptimizerConfig& c) : config_(c), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 0; }
  std::string implementation() const override { return "sgd/host"; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.empty() && param.numel() == grad.numel());
    (void)state;
    const float lr = as_float(config_.rate_at(step));
    float* p = param.data;
    const float* g = grad.data;
    for_elements(pool, param.numel(), [&](int64_t i) { sgd_element(p[i], g[i], lr, wd_); });
  }

 private:
  OptimizerConfig config_;
  float wd_;
};

class HostMomentum final : public OptimizerKernel {
 public:
  explicit HostMomentum(const OptimizerConfig& c)
      : config_(c), momentum_(as_float(c.momentum)), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 1; }
  std::string implementation() const override { return "momentum/host"; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.size() == 1 && param.numel() == grad.numel() && state[0].numel() == param.numel());
    const float lr = as_float(config_.rate_at(step));
    float* p = param.data;
    float* v = state[0].data;
    const float* g = grad.data;
    for_elements(pool, param.numel(), [&](int64_t i) { momentum_element(p[i], g[i], v[i], lr, momentum_, wd_); });
  }

 private:
  OptimizerConfig config_;
  float momentum_, wd_;
};

class HostAdam final : public OptimizerKernel {
 public:
  explicit HostAdam(const OptimizerConfig& c) : config_(c) {}
  int state_count() const override { return 2; }
  std::string implementation() const override { return "adam/host"; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.size() == 2 && step >= 1 && param.numel() == grad.numel());
    const AdamStep s = adam_step_constants(config_, step);
    float* p = param.data;
    float* m = state[0].data;
    float* v = state[1].data;
    const float* g = grad.data;
    for_elements(pool, param.numel(), [&](int64_t i) { adam_element(p[i], g[i], m[i], v[i], s); });
  }

 private:
  OptimizerConfig config_;
};

}  // namespace

std::unique_ptr<OptimizerKernel> make_host_optimizer(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerConfig::Kind::kSgd: return std::make_unique<HostSgd>(config);
    case OptimizerConfig::Kind::kMomentum: return std::make_unique<HostMomentum>(config);
    case OptimizerConfig::Kind::kAdam: return std::make_unique<HostAdam>(config);
  }
  assert(false && "unknown optimizer kind");
  return nullptr;
}

}  // namespace devmap::cuda
