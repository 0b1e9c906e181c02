#include "kernels/cuda/optimizers.h"

#include <cassert>
#include <cmath>

#include "kernels/cuda/optimizer_kernels.h"

namespace devmap::cuda {
namespace {

float as_float(double v) {
  return static_cast<float>(v);
}

class Sgd final : public OptimizerKernel {
 public:
  Sgd(const OptimizerConfig& c, CudaDevice& d) : device_(d), config_(c), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 0; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& /*pool*/) override {
    assert(state.empty() && param.numel() == grad.numel());
    (void)state;
    launch_sgd(param.data, grad.data, param.numel(), as_float(config_.rate_at(step)), wd_, device_.stream());
  }

 private:
  CudaDevice& device_;
  OptimizerConfig config_;
  float wd_;
};

class Momentum final : public OptimizerKernel {
 public:
  Momentum(const OptimizerConfig& c, CudaDevice& d)
      : device_(d), config_(c), momentum_(as_float(c.momentum)), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 1; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& /*pool*/) override {
    assert(state.size() == 1 && param.numel() == grad.numel() && state[0].numel() == param.numel());
    launch_momentum(param.data, grad.data, state[0].data, param.numel(), as_float(config_.rate_at(step)), momentum_,
                    wd_, device_.stream());
  }

 private:
  CudaDevice& device_;
  OptimizerConfig config_;
  float momentum_, wd_;
};

class Adam final : public OptimizerKernel {
 public:
  Adam(const OptimizerConfig& c, CudaDevice& d) : device_(d), config_(c) {}
  int state_count() const override { return 2; }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& /*pool*/) override {
    assert(state.size() == 2 && step >= 1 && param.numel() == grad.numel());
    const AdamStep s = adam_step_constants(config_, step);
    launch_adam(param.data, grad.data, state[0].data, state[1].data, param.numel(), s, device_.stream());
  }

 private:
  CudaDevice& device_;
  OptimizerConfig config_;
};

}  // namespace

std::unique_ptr<OptimizerKernel> make_optimizer(const OptimizerConfig& config, CudaDevice& device) {
  switch (config.kind) {
    case OptimizerConfig::Kind::kSgd: return std::make_unique<Sgd>(config, device);
    case OptimizerConfig::Kind::kMomentum: return std::make_unique<Momentum>(config, device);
    case OptimizerConfig::Kind::kAdam: return std::make_unique<Adam>(config, device);
  }
  assert(false && "unknown optimizer kind");
  return nullptr;
}

AdamStep adam_step_constants(const OptimizerConfig& config, int64_t step) {
  const double t = static_cast<double>(step);
  AdamStep s{};
  s.b1 = as_float(config.beta1);
  s.b2 = as_float(config.beta2);
  s.one_minus_b1 = as_float(1.0 - config.beta1);
  s.one_minus_b2 = as_float(1.0 - config.beta2);
  s.step_size = as_float(config.rate_at(step) / (1.0 - std::pow(config.beta1, t)));
  s.inv_sqrt_bc2 = as_float(1.0 / std::sqrt(1.0 - std::pow(config.beta2, t)));
  s.eps = as_float(config.epsilon);
  s.wd = as_float(config.weight_decay);
  return s;
}

}  // namespace devmap::cuda
