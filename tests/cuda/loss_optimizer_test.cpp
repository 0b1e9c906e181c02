// softmax_cross_entropy, accuracy, argmax and the optimizers: the CUDA
// kernels against the CPU kernels.
// Tolerances: the loss and its gradient are computed in double on both
// sides (CUDA's exp/log differ from glibc's by at most an ulp of a double),
// so the float results must agree to 1e-6 relative; accuracy, argmax and
// the optimizers (float arithmetic in the same order, no FMA contraction on
// either side) must be equal.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "core/base/error.h"
#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

// Logits in [-4, 4) and valid labels.
void fill_logits_labels(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -4.0f, 4.0f);
  const int64_t classes = h.node.input_shapes[0][0];
  for (int64_t n = 0; n < h.batch; ++n)
    h.inputs[1].data()[n] = static_cast<float>((n * 7 + static_cast<int64_t>(seed)) % classes);
}

TEST(CudaSoftmaxCrossEntropy, LossAndGradientMatchCpu) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("softmax_cross_entropy", "loss", {{10}, {1}}), 64);
  h.ctx.batch_total = 256;  // one micro-batch of a larger step
  h.ctx.sample_offset = 64;
  fill_logits_labels(h, 1);
  h.d_output.data()[0] = 1.0f;
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_close(g.output(), h.output, 1e-6, 0.0, "loss");
  h.d_output.data()[0] = 0.75f;
  g.sync();
  h.backward();
  g.backward();
  expect_close(g.d_input(0), h.d_inputs[0], 1e-6, 1e-7, "d_logits");
}

TEST(CudaSoftmaxCrossEntropy, ManyClassesAndLargeBatch) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("softmax_cross_entropy", "loss", {{1000}, {1}}), 600);
  fill_logits_labels(h, 2);
  h.d_output.data()[0] = 1.0f;
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_close(g.output(), h.output, 1e-6, 0.0, "loss");
  h.backward();
  g.backward();
  expect_close(g.d_input(0), h.d_inputs[0], 1e-6, 1e-7, "d_logits");
}

TEST(CudaSoftmaxCrossEntropy, BadLabelThrowsTheCpusMessage) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("softmax_cross_entropy", "loss", {{10}, {1}}), 8);
  h.ctx.sample_offset = 16;
  fill_logits_labels(h, 3);
  h.inputs[1].data()[5] = 2.5f;
  h.inputs[1].data()[6] = 11.0f;
  GpuMirror g(h);
  std::string cpu_message, gpu_message;
  try {
    h.forward();
  } catch (const Error& e) {
    cpu_message = e.what();
  }
  try {
    g.forward();
  } catch (const Error& e) {
    gpu_message = e.what();
  }
  EXPECT_NE(cpu_message, "");
  EXPECT_EQ(gpu_message, cpu_message);
  EXPECT_NE(gpu_message.find("sample 21"), std::string::npos) << gpu_message;
}

TEST(CudaAccuracy, MatchesCpuWithTiesAndNaN) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("accuracy", "acc", {{10}, {1}}), 50);
  h.ctx.batch_total = 200;
  fill_logits_labels(h, 4);
  for (int64_t n = 0; n < 50; n += 5) h.inputs[0].data()[n * 10 + 3] = h.inputs[0].data()[n * 10 + 7] = 9.0f;
  h.inputs[0].data()[11] = std::numeric_limits<float>::quiet_NaN();
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_equal(g.output(), h.output, "accuracy");
}

TEST(CudaArgmax, MatchesCpuWithTiesAndNaN) {
  DEVMAP_REQUIRE_GPU();
  OpHarness h(make_node("argmax", "pred", {{10}}), 40);
  fill_uniform(span_of(h.inputs[0]), 5, -1.0f, 1.0f);
  for (int64_t n = 0; n < 40; n += 3) h.inputs[0].data()[n * 10 + 2] = h.inputs[0].data()[n * 10 + 8] = 5.0f;
  h.inputs[0].data()[4 * 10 + 6] = std::numeric_limits<float>::quiet_NaN();
  h.inputs[0].data()[7 * 10 + 0] = std::numeric_limits<float>::quiet_NaN();
  GpuMirror g(h);
  h.forward();
  g.forward();
  expect_equal(g.output(), h.output, "argmax");
}

// Five updates of one parameter on both devices, from the same values.
void compare_optimizer(const OptimizerConfig& config, const std::string& what) {
  const int64_t n = 1000;
  Buffer p(n), grad(n);
  fill_uniform(span_of(p), 20, -1.0f, 1.0f);
  auto cpu = CpuKernelFactory().make_optimizer(config);
  auto gpu = gpu_env().factory.make_optimizer(config);
  ASSERT_EQ(cpu->state_count(), gpu->state_count());
  std::vector<Buffer> cpu_state;
  std::vector<DeviceTensor> gpu_state;
  for (int s = 0; s < cpu->state_count(); ++s) {
    cpu_state.emplace_back(n);
    gpu_state.emplace_back(n);
  }
  DeviceTensor gp(p);
  ThreadPool pool(1);
  for (int64_t step = 1; step <= 5; ++step) {
    fill_uniform(span_of(grad), 30 + static_cast<uint64_t>(step), -1.0f, 1.0f);
    DeviceTensor gg(grad);
    std::vector<TensorView> cs, gs;
    for (int s = 0; s < cpu->state_count(); ++s) {
      cs.push_back(cpu_state[static_cast<size_t>(s)].view(Shape{n}));
      gs.push_back(TensorView{gpu_state[static_cast<size_t>(s)].data(), Shape{n}});
    }
    cpu->update(p.view(Shape{n}), grad.view(Shape{n}), cs, step, pool);
    gpu->update(TensorView{gp.data(), Shape{n}}, TensorView{gg.data(), Shape{n}}, gs, step, pool);
  }
  expect_equal(gp.download(), p, what + " parameter");
  for (int s = 0; s < cpu->state_count(); ++s)
    expect_equal(gpu_state[static_cast<size_t>(s)].download(), cpu_state[static_cast<size_t>(s)],
                 what + " state " + std::to_string(s));
}

TEST(CudaOptimizers, SgdMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kSgd;
  c.learning_rate = 0.05;
  compare_optimizer(c, "sgd");
  c.weight_decay = 1e-3;
  compare_optimizer(c, "sgd with weight decay");
}

TEST(CudaOptimizers, MomentumMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kMomentum;
  c.learning_rate = 0.01;
  c.momentum = 0.9;
  compare_optimizer(c, "momentum");
  c.weight_decay = 5e-4;
  compare_optimizer(c, "momentum with weight decay");
}

TEST(CudaOptimizers, AdamMatchesCpu) {
  DEVMAP_REQUIRE_GPU();
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kAdam;
  c.learning_rate = 1e-3;
  compare_optimizer(c, "adam");
  c.weight_decay = 1e-2;
  compare_optimizer(c, "adam with weight decay");
}

}  // namespace
}  // namespace devmap::test
