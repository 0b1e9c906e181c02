#include "kernels/cpu/optimizers.h"

#include <cassert>
#include <cmath>

#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

float as_float(double v) {
  return static_cast<float>(v);
}

// The updates of elements [begin, end), one body per CPU path.
DEVMAP_INLINE void sgd_range_body(float* p, const float* g, float lr, float wd, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) p[i] -= lr * (g[i] + wd * p[i]);
}
DEVMAP_CPU_PATH_DISPATCH(void, sgd_range, (float* p, const float* g, float lr, float wd, int64_t begin, int64_t end),
                         (p, g, lr, wd, begin, end))

DEVMAP_INLINE void momentum_range_body(float* p, float* v, const float* g, float lr, float momentum, float wd,
                                       int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    v[i] = momentum * v[i] + (g[i] + wd * p[i]);
    p[i] -= lr * v[i];
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, momentum_range,
                         (float* p, float* v, const float* g, float lr, float momentum, float wd, int64_t begin,
                          int64_t end),
                         (p, v, g, lr, momentum, wd, begin, end))

struct AdamScalars {
  float b1, b2, one_minus_b1, one_minus_b2, step_size, inv_sqrt_bc2, eps, wd;
};
DEVMAP_INLINE void adam_range_body(float* p, float* m, float* v, const float* g, const AdamScalars& s, int64_t begin,
                                   int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float gi = g[i] + s.wd * p[i];
    m[i] = s.b1 * m[i] + s.one_minus_b1 * gi;
    v[i] = s.b2 * v[i] + s.one_minus_b2 * gi * gi;
    p[i] -= s.step_size * m[i] / (std::sqrt(v[i]) * s.inv_sqrt_bc2 + s.eps);
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, adam_range,
                         (float* p, float* m, float* v, const float* g, const AdamScalars& s, int64_t begin,
                          int64_t end),
                         (p, m, v, g, s, begin, end))

class Sgd final : public OptimizerKernel {
 public:
  explicit Sgd(const OptimizerConfig& c) : config_(c), wd_(as_float(c.weight_decay)) {}
  int state_count() const override { return 0; }
  std::string implementation() const override { return path_kernel_name("sgd"); }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.empty() && param.numel() == grad.numel());
    const float lr = as_float(config_.rate_at(step));
    (void)state;
    float* p = param.data;
    const float* g = grad.data;
    parallel_for_elements(&pool, param.numel(),
                          [&](int64_t begin, int64_t end) { sgd_range(p, g, lr, wd_, begin, end); });
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
  std::string implementation() const override { return path_kernel_name("momentum"); }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.size() == 1 && param.numel() == grad.numel() && state[0].numel() == param.numel());
    const float lr = as_float(config_.rate_at(step));
    float* p = param.data;
    float* v = state[0].data;
    const float* g = grad.data;
    parallel_for_elements(&pool, param.numel(), [&](int64_t begin, int64_t end) {
      momentum_range(p, v, g, lr, momentum_, wd_, begin, end);
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
  std::string implementation() const override { return path_kernel_name("adam"); }
  void update(TensorView param, TensorView grad, std::span<const TensorView> state, int64_t step,
              ThreadPool& pool) override {
    assert(state.size() == 2 && step >= 1 && param.numel() == grad.numel());
    const double t = static_cast<double>(step);
    const float b1 = as_float(config_.beta1), b2 = as_float(config_.beta2);
    const float one_minus_b1 = as_float(1.0 - config_.beta1), one_minus_b2 = as_float(1.0 - config_.beta2);
    const float step_size = as_float(config_.rate_at(step) / (1.0 - std::pow(config_.beta1, t)));
    const float inv_sqrt_bc2 = as_float(1.0 / std::sqrt(1.0 - std::pow(config_.beta2, t)));
    const AdamScalars s{b1,
                        b2,
                        one_minus_b1,
                        one_minus_b2,
                        step_size,
                        inv_sqrt_bc2,
                        as_float(config_.epsilon),
                        as_float(config_.weight_decay)};
    float* p = param.data;
    float* m = state[0].data;
    float* v = state[1].data;
    const float* g = grad.data;
    parallel_for_elements(&pool, param.numel(),
                          [&](int64_t begin, int64_t end) { adam_range(p, m, v, g, s, begin, end); });
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
