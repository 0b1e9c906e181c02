#include "kernels/cpu/optimizers.h"

#include <cassert>
#include <cmath>

#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

float as_float(double v) {
  return static_cast<float>(v);
}

class Sgd final : public OptimizerKernel {
 public:
  explicit Sgd(const OptimizerConfig& c) : config_(c), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 0; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.empty() && param.numel() == grad.numel());
    const float lr = as_float(config_.rate_at(step));
    (void)state;
    float* p = param.data;
    const float* g = grad.data;
    parallel_for_elements(&pool, param.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) p[i] -= lr * (g[i] + wd_ * p[i]);
    });
  }

 private:
  OptimizerConfig config_;
  float wd_;
};

class Momentum final : public OptimizerKernel {
 public:
  explicit Momentum(const OptimizerConfig& c)
      : config_(c), momentum_(as_float(c.momentum)), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 1; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.size() == 1 && param.numel() == grad.numel() && state[0].numel() == param.numel());
    const float lr = as_float(config_.rate_at(step));
    float* p = param.data;
    float* v = state[0].data;
    const float* g = grad.data;
    parallel_for_elements(&pool, param.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        v[i] = momentum_ * v[i] + (g[i] + wd_ * p[i]);
        p[i] -= lr * v[i];
      }
    });
  }

 private:
  OptimizerConfig config_;
  float momentum_, wd_;
};

class Adam final : public OptimizerKernel {
 public:
  explicit Adam(const OptimizerConfig& c) : config_(c) {}
  int state_count() const override { return 2; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.size() == 2 && step >= 1 && param.numel() == grad.numel());
    const double t = static_cast<double>(step);
    const float b1 = as_float(config_.beta1), b2 = as_float(config_.beta2);
    const float one_minus_b1 = as_float(1.0 - config_.beta1), one_minus_b2 = as_float(1.0 - config_.beta2);
    const float step_size = as_float(config_.rate_at(step) / (1.0 - std::pow(config_.beta1, t)));
    const float inv_sqrt_bc2 = as_float(1.0 / std::sqrt(1.0 - std::pow(config_.beta2, t)));
    const float eps = as_float(config_.epsilon), wd = as_float(config_.weight_decay);
    float* p = param.data;
    float* m = state[0].data;
    float* v = state[1].data;
    const float* g = grad.data;
    parallel_for_elements(&pool, param.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float gi = g[i] + wd * p[i];
        m[i] = b1 * m[i] + one_minus_b1 * gi;
        v[i] = b2 * v[i] + one_minus_b2 * gi * gi;
        p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + eps);
      }
    });
  }

 private:
  OptimizerConfig config_;
};

}  // namespace

std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerConfig::Kind::kSgd: return std::make_unique<Sgd>(config);
    case OptimizerConfig::Kind::kMomentum: return std::make_unique<Momentum>(config);
    case OptimizerConfig::Kind::kAdam: return std::make_unique<Adam>(config);
  }
  assert(false && "unknown optimizer kind");
  return nullptr;
}

}  // namespace devmap::cpu
