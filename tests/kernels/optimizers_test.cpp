// Two steps of each optimizer against numbers worked out by hand.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

// Every test runs on every CPU path (cpu_paths.h).
class Optimizers : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(Optimizers);

// One parameter tensor with its gradient and optimizer state.
struct Slot {
  explicit Slot(int64_t n, int states) : param(n), grad(n) {
    for (int i = 0; i < states; ++i) state.emplace_back(n);
  }
  void fill(float p, float g) {
    std::fill(param.data(), param.data() + param.size(), p);
    std::fill(grad.data(), grad.data() + grad.size(), g);
  }
  void update(OptimizerKernel& opt, int64_t step, ThreadPool& pool) {
    std::vector<TensorView> views;
    for (const Buffer& b : state) views.push_back(b.view(Shape{b.size()}));
    opt.update(param.view(Shape{param.size()}), grad.view(Shape{grad.size()}), views, step, pool);
  }
  Buffer param, grad;
  std::vector<Buffer> state;
};

std::unique_ptr<OptimizerKernel> make(OptimizerConfig::Kind kind, double lr, double wd) {
  OptimizerConfig c;
  c.kind = kind;
  c.learning_rate = lr;
  c.weight_decay = wd;
  return CpuKernelFactory().make_optimizer(c);
}

TEST_P(Optimizers, SgdTwoSteps) {
  auto opt = make(OptimizerConfig::Kind::kSgd, 0.1, 0.01);
  ASSERT_EQ(opt->state_count(), 0);
  ThreadPool pool(1);
  Slot s(3, 0);
  s.fill(1.0f, 0.5f);
  s.update(*opt, 1, pool);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(s.param.data()[i], 0.949f);  // 1 - 0.1*(0.5 + 0.01*1)
  std::fill(s.grad.data(), s.grad.data() + 3, 0.25f);
  s.update(*opt, 2, pool);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(s.param.data()[i], 0.923051f);  // 0.949 - 0.1*(0.25 + 0.00949)
}

TEST_P(Optimizers, MomentumTwoSteps) {
  auto opt = make(OptimizerConfig::Kind::kMomentum, 0.1, 0.01);  // momentum 0.9 (default)
  ASSERT_EQ(opt->state_count(), 1);
  ThreadPool pool(1);
  Slot s(3, 1);
  s.fill(1.0f, 0.5f);
  s.update(*opt, 1, pool);
  // v = 0.51 (v starts at 0: the first step is plain SGD), p = 1 - 0.051
  EXPECT_FLOAT_EQ(s.state[0].data()[0], 0.51f);
  EXPECT_FLOAT_EQ(s.param.data()[0], 0.949f);
  std::fill(s.grad.data(), s.grad.data() + 3, 0.25f);
  s.update(*opt, 2, pool);
  // v = 0.9*0.51 + (0.25 + 0.01*0.949) = 0.71849, p = 0.949 - 0.071849
  EXPECT_FLOAT_EQ(s.state[0].data()[0], 0.71849f);
  EXPECT_FLOAT_EQ(s.param.data()[0], 0.877151f);
}

TEST_P(Optimizers, AdamTwoSteps) {
  auto opt = make(OptimizerConfig::Kind::kAdam, 0.1, 0.01);  // betas 0.9, 0.999, eps 1e-8
  ASSERT_EQ(opt->state_count(), 2);
  ThreadPool pool(1);
  Slot s(3, 2);
  s.fill(1.0f, 0.5f);
  s.update(*opt, 1, pool);
  // g' = 0.51; m = 0.051, v = 0.0002601; m^ = 0.51, v^ = 0.2601 = 0.51^2,
  // so the first step moves by lr * 0.51 / (0.51 + 1e-8) = 0.1.
  EXPECT_FLOAT_EQ(s.state[0].data()[0], 0.051f);
  EXPECT_FLOAT_EQ(s.state[1].data()[0], 0.0002601f);
  EXPECT_FLOAT_EQ(s.param.data()[0], 0.9f);
  std::fill(s.grad.data(), s.grad.data() + 3, 0.25f);
  s.update(*opt, 2, pool);
  // g' = 0.25 + 0.009 = 0.259; m = 0.0459 + 0.0259 = 0.0718;
  // v = 0.999*0.0002601 + 0.001*0.259^2 = 0.00032692;
  // m^ = 0.0718/0.19 = 0.377895, v^ = 0.00032692/0.001999 = 0.163542, sqrt 0.404403;
  // p = 0.9 - 0.1 * 0.377895/0.404403 = 0.806555
  EXPECT_FLOAT_EQ(s.state[0].data()[0], 0.0718f);
  EXPECT_NEAR(s.state[1].data()[0], 0.00032692f, 1e-9);
  EXPECT_NEAR(s.param.data()[0], 0.806555f, 2e-6);
}

TEST_P(Optimizers, LargeTensorsGiveTheSameBitsOnAnyPoolSize) {
  for (auto kind : {OptimizerConfig::Kind::kSgd, OptimizerConfig::Kind::kMomentum, OptimizerConfig::Kind::kAdam}) {
    auto opt = make(kind, 0.01, 1e-4);
    ThreadPool one(1), two(2);
    Slot a(200003, opt->state_count()), b(200003, opt->state_count());
    for (Slot* s : {&a, &b}) {
      fill_uniform(span_of(s->param), 1, -1, 1);
      fill_uniform(span_of(s->grad), 2, -1, 1);
    }
    for (int64_t step = 1; step <= 3; ++step) {
      a.update(*opt, step, one);
      b.update(*opt, step, two);
    }
    EXPECT_TRUE(same_bits(a.param, b.param)) << "kind " << static_cast<int>(kind);
  }
}

}  // namespace
}  // namespace devmap::test
