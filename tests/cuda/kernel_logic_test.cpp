// The per-thread logic of the hand-written CUDA kernels (philox.h,
// dropout_logic.h, pool_logic.h, avg_pool_logic.h, loss_logic.h, optimizer_logic.h), run on
// the CPU over every thread index, against the CPU kernels. These run
// everywhere, GPU or not: they check that the kernels compute the CPU's
// function; the GPU tests check that the device runs them as written.
// Tolerance: none (the same operations in the same order), except the loss
// (batch sum in another fixed order, double): 1e-6 relative.
#include <gtest/gtest.h>

#include <cmath>
#include <ios>
#include <limits>

#include "core/base/random.h"
#include "kernels/cpu/gradient_add.h"
#include "kernels/cuda/avg_pool_logic.h"
#include "kernels/cuda/batch_norm_logic.h"
#include "kernels/cuda/dropout_logic.h"
#include "kernels/cuda/loss_logic.h"
#include "kernels/cuda/max_pool2d.h"
#include "kernels/cuda/optimizer_logic.h"
#include "kernels/cuda/philox.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

using cuda::PoolGeometry;

TEST(KernelLogic, PhiloxIsCoresPhilox) {
  for (uint64_t i = 0; i < 20000; ++i) {
    const PhiloxKey key = philox_key(i % 7, "k" + std::to_string(i % 13));
    const std::array<uint32_t, 4> c = {static_cast<uint32_t>(i * 2654435761u), static_cast<uint32_t>(i >> 3),
                                       static_cast<uint32_t>(i * 40503u), static_cast<uint32_t>(~i)};
    const auto want = philox4x32(key, c);
    const cuda::Words4 got = cuda::philox4x32_hd(key, c[0], c[1], c[2], c[3]);
    for (int w = 0; w < 4; ++w) ASSERT_EQ(got.w[w], want[static_cast<size_t>(w)]) << i;
    ASSERT_EQ(cuda::uniform01_hd(want[0]), uniform01(want[0]));
  }
}

// Runs dropout_block for every thread of the launch on the host.
void emulate_dropout(const Node& node, const KernelContext& ctx, const float* x, float* y, int64_t n) {
  cuda::DropoutParams p{};
  p.key = philox_key(ctx.seed, node.name);
  p.c2 = static_cast<uint32_t>(static_cast<uint64_t>(ctx.step));
  p.c3 = static_cast<uint32_t>(static_cast<uint64_t>(ctx.step) >> 32);
  p.first = static_cast<uint64_t>(ctx.sample_offset) * static_cast<uint64_t>(node.out_shape.numel());
  const double rate = node.attrs.get_float("rate");
  p.rate = static_cast<float>(rate);
  p.scale = static_cast<float>(1.0 / (1.0 - rate));
  for (int64_t t = 0; t < cuda::dropout_blocks(p, n); ++t) cuda::dropout_block(p, x, y, n, t);
}

TEST(KernelLogic, DropoutMasksAreTheCpus) {
  for (int64_t offset : {0, 1, 3, 17}) {
    OpHarness h(make_node("dropout", "drop", {{101}}, {{"rate", 0.3}}), 5);
    h.ctx.step = (int64_t{1} << 32) + 9;
    h.ctx.sample_offset = offset;
    fill_uniform(span_of(h.inputs[0]), 1, -1.0f, 1.0f);
    h.forward();
    std::vector<float> y(static_cast<size_t>(h.output.size()), -1.0f);
    emulate_dropout(h.node, h.ctx, h.inputs[0].data(), y.data(), h.output.size());
    EXPECT_EQ(y, to_vector(h.output)) << "sample offset " << offset;
  }
}

// Pool inputs with ties (values on a grid of 0.5, clipped at 0) and a NaN.
void pool_inputs(OpHarness& h, uint64_t seed) {
  fill_uniform(span_of(h.inputs[0]), seed, -1.0f, 1.5f);
  for (int64_t i = 0; i < h.inputs[0].size(); ++i) {
    float& v = h.inputs[0].data()[i];
    v = std::max(0.0f, std::round(v * 2.0f) / 2.0f);
  }
  h.inputs[0].data()[7] = std::numeric_limits<float>::quiet_NaN();
  fill_uniform(span_of(h.d_output), seed + 1, -1.0f, 1.0f);
}

void expect_same(const std::vector<float>& got, const Buffer& want, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), want.size()) << what;
  for (int64_t i = 0; i < want.size(); ++i) {
    const float g = got[static_cast<size_t>(i)], w = want.data()[i];
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << what << " at " << i;
    } else {
      ASSERT_EQ(g, w) << what << " at " << i;
    }
  }
}

TEST(KernelLogic, MaxPoolForwardAndBackwardAreTheCpus) {
  struct Case {
    Shape in;
    int64_t kernel, stride, padding, batch;
  };
  for (const Case& c : {Case{{3, 8, 8}, 2, 0, 0, 2}, Case{{2, 7, 9}, 2, 0, 0, 3}, Case{{2, 9, 8}, 3, 2, 1, 2},
                        Case{{1, 8, 8}, 3, 1, 0, 2}, Case{{2, 6, 7}, 4, 3, 2, 1}}) {
    OpHarness h(
        make_node("max_pool2d", "p", {c.in}, {{"kernel", c.kernel}, {"stride", c.stride}, {"padding", c.padding}}),
        c.batch);
    pool_inputs(h, static_cast<uint64_t>(c.kernel * 10 + c.padding));
    const std::string what = "pool " + c.in.to_string() + " k" + std::to_string(c.kernel) + " s" +
                             std::to_string(c.stride) + " p" + std::to_string(c.padding);
    const PoolGeometry g = cuda::MaxPool2dKernel::geometry(h.node, c.batch);
    h.forward();
    std::vector<float> y(static_cast<size_t>(h.output.size()));
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = cuda::pool::forward_element(g, h.inputs[0].data(), static_cast<int64_t>(i));
    expect_same(y, h.output, what + " forward");
    for (bool with_output : {true, false}) {
      h.pass_output_to_backward = with_output;
      h.backward();
      std::vector<float> dx(static_cast<size_t>(h.d_inputs[0].size()));
      for (size_t i = 0; i < dx.size(); ++i)
        dx[i] = cuda::pool::backward_element(g, h.inputs[0].data(), with_output ? h.output.data() : nullptr,
                                             h.d_output.data(), static_cast<int64_t>(i));
      expect_same(dx, h.d_inputs[0], what + (with_output ? " backward" : " backward without y"));
    }
  }
}

TEST(KernelLogic, AvgPoolForwardAndBackwardAreTheCpus) {
  struct Case {
    Shape in;
    int64_t kernel, stride, padding, batch;
  };
  for (const Case& c : {Case{{3, 8, 8}, 2, 0, 0, 2}, Case{{2, 7, 9}, 2, 0, 0, 3}, Case{{2, 9, 8}, 3, 2, 1, 2},
                        Case{{1, 8, 8}, 3, 1, 0, 2}, Case{{2, 6, 7}, 4, 3, 2, 1}}) {
    OpHarness h(
        make_node("avg_pool2d", "p", {c.in}, {{"kernel", c.kernel}, {"stride", c.stride}, {"padding", c.padding}}),
        c.batch);
    fill_uniform(span_of(h.inputs[0]), static_cast<uint64_t>(c.kernel * 10 + c.padding), -1.0f, 1.0f);
    fill_uniform(span_of(h.d_output), 77, -1.0f, 1.0f);
    const std::string what = "avg pool " + c.in.to_string() + " k" + std::to_string(c.kernel) + " s" +
                             std::to_string(c.stride) + " p" + std::to_string(c.padding);
    const PoolGeometry g = cuda::MaxPool2dKernel::geometry(h.node, c.batch);
    h.forward();
    std::vector<float> y(static_cast<size_t>(h.output.size()));
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = cuda::avg_pool::forward_element(g, h.inputs[0].data(), static_cast<int64_t>(i));
    expect_same(y, h.output, what + " forward");
    h.backward();
    std::vector<float> dx(static_cast<size_t>(h.d_inputs[0].size()));
    for (size_t i = 0; i < dx.size(); ++i)
      dx[i] = cuda::avg_pool::backward_element(g, h.d_output.data(), static_cast<int64_t>(i));
    expect_same(dx, h.d_inputs[0], what + " backward");
  }
}

TEST(KernelLogic, GlobalAvgPoolIsTheCpus) {
  for (const Shape& in : {Shape{3, 7, 7}, Shape{5, 2, 3}, Shape{2, 1, 1}}) {
    OpHarness h(make_node("global_avg_pool", "gap", {in}), 3);
    fill_uniform(span_of(h.inputs[0]), 5, -1.0f, 1.0f);
    fill_uniform(span_of(h.d_output), 6, -1.0f, 1.0f);
    const int64_t planes = 3 * in[0], area = in[1] * in[2];
    h.forward();
    std::vector<float> y(static_cast<size_t>(planes));
    for (int64_t i = 0; i < planes; ++i)
      y[static_cast<size_t>(i)] = cuda::avg_pool::global_forward_element(h.inputs[0].data(), area, i);
    expect_same(y, h.output, "global_avg_pool forward " + in.to_string());
    h.backward();
    std::vector<float> dx(static_cast<size_t>(planes * area));
    for (int64_t i = 0; i < planes * area; ++i)
      dx[static_cast<size_t>(i)] = cuda::avg_pool::global_backward_element(h.d_output.data(), area, i);
    expect_same(dx, h.d_inputs[0], "global_avg_pool backward " + in.to_string());
  }
}

TEST(KernelLogic, LossAccuracyArgmaxAreTheCpus) {
  const int64_t batch = 300, classes = 10;
  OpHarness loss(make_node("softmax_cross_entropy", "loss", {{classes}, {1}}), batch);
  loss.ctx.batch_total = 1000;
  fill_uniform(span_of(loss.inputs[0]), 3, -5.0f, 5.0f);
  for (int64_t n = 0; n < batch; ++n) loss.inputs[1].data()[n] = static_cast<float>((n * 3) % classes);
  loss.inputs[0].data()[13] = loss.inputs[0].data()[17] = 5.0f;  // a tie
  loss.d_output.data()[0] = 0.8f;
  loss.forward();
  loss.backward();
  const float* z = loss.inputs[0].data();
  const float* labels = loss.inputs[1].data();

  // Forward: per-sample values, then the kernel's lane order.
  std::vector<double> values(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) {
    ASSERT_TRUE(cuda::loss::valid_label(labels[n], classes));
    values[static_cast<size_t>(n)] =
        cuda::loss::cross_entropy(z + n * classes, classes, static_cast<int64_t>(labels[n]));
  }
  const float mean = static_cast<float>(cuda::loss::batch_sum(values.data(), batch) / 1000.0);
  EXPECT_NEAR(mean, loss.output.data()[0], 1e-6 * std::fabs(loss.output.data()[0]));

  // Backward: row by row, the same formula.
  std::vector<float> d(static_cast<size_t>(batch * classes));
  const double scale = static_cast<double>(0.8f) / 1000.0;  // dy[0] is a float, as the kernels read it
  for (int64_t n = 0; n < batch; ++n)
    cuda::loss::cross_entropy_gradient(z + n * classes, classes, static_cast<int64_t>(labels[n]), scale,
                                       d.data() + n * classes);
  expect_same(d, loss.d_inputs[0], "d_logits");

  // argmax and accuracy, with a NaN.
  OpHarness am(make_node("argmax", "pred", {{classes}}), batch);
  std::copy(z, z + batch * classes, am.inputs[0].data());
  am.inputs[0].data()[25] = std::numeric_limits<float>::quiet_NaN();
  am.forward();
  int64_t correct = 0;
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t best = cuda::loss::first_argmax(am.inputs[0].data() + n * classes, classes);
    ASSERT_EQ(static_cast<float>(best), am.output.data()[n]) << n;
    correct += best == static_cast<int64_t>(labels[n]);
  }
  OpHarness acc(make_node("accuracy", "acc", {{classes}, {1}}), batch);
  std::copy(am.inputs[0].data(), am.inputs[0].data() + batch * classes, acc.inputs[0].data());
  std::copy(labels, labels + batch, acc.inputs[1].data());
  acc.forward();
  EXPECT_EQ(static_cast<float>(static_cast<double>(correct) / static_cast<double>(batch)), acc.output.data()[0]);

  EXPECT_FALSE(cuda::loss::valid_label(2.5f, classes));
  EXPECT_FALSE(cuda::loss::valid_label(-1.0f, classes));
  EXPECT_FALSE(cuda::loss::valid_label(10.0f, classes));
  EXPECT_FALSE(cuda::loss::valid_label(std::numeric_limits<float>::quiet_NaN(), classes));
  EXPECT_TRUE(cuda::loss::valid_label(9.0f, classes));
}

TEST(KernelLogic, OptimizerUpdatesAreTheCpus) {
  const int64_t n = 5000;
  for (auto kind : {OptimizerConfig::Kind::kSgd, OptimizerConfig::Kind::kMomentum, OptimizerConfig::Kind::kAdam}) {
    OptimizerConfig c;
    c.kind = kind;
    c.learning_rate = kind == OptimizerConfig::Kind::kAdam ? 1e-3 : 0.03;
    c.weight_decay = 1e-3;
    Buffer p(n), g(n), s0(n), s1(n);
    fill_uniform(span_of(p), 7, -1.0f, 1.0f);
    std::vector<float> q(p.data(), p.data() + n), t0(static_cast<size_t>(n)), t1(static_cast<size_t>(n));
    auto cpu = CpuKernelFactory().make_optimizer(c);
    ThreadPool pool(1);
    for (int64_t step = 1; step <= 4; ++step) {
      fill_uniform(span_of(g), 10 + static_cast<uint64_t>(step), -1.0f, 1.0f);
      std::vector<TensorView> state;
      if (cpu->state_count() >= 1) state.push_back(s0.view(Shape{n}));
      if (cpu->state_count() >= 2) state.push_back(s1.view(Shape{n}));
      cpu->update(p.view(Shape{n}), g.view(Shape{n}), state, step, pool);
      // The GPU optimizer's host-side constants (kernels/cuda/optimizers.cpp) and per-element logic.
      const double tt = static_cast<double>(step);
      cuda::AdamStep a{static_cast<float>(c.beta1),
                       static_cast<float>(c.beta2),
                       static_cast<float>(1.0 - c.beta1),
                       static_cast<float>(1.0 - c.beta2),
                       static_cast<float>(c.learning_rate / (1.0 - std::pow(c.beta1, tt))),
                       static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(c.beta2, tt))),
                       static_cast<float>(c.epsilon),
                       static_cast<float>(c.weight_decay)};
      for (size_t i = 0; i < q.size(); ++i) {
        const float gi = g.data()[i];
        if (kind == OptimizerConfig::Kind::kSgd)
          cuda::sgd_element(q[i], gi, static_cast<float>(c.learning_rate), static_cast<float>(c.weight_decay));
        else if (kind == OptimizerConfig::Kind::kMomentum)
          cuda::momentum_element(q[i], gi, t0[i], static_cast<float>(c.learning_rate), static_cast<float>(c.momentum),
                                 static_cast<float>(c.weight_decay));
        else
          cuda::adam_element(q[i], gi, t0[i], t1[i], a);
      }
    }
    expect_same(q, p, optimizer_kind_name(kind));
  }
}

// batch_norm's block-per-channel logic (16 lanes, one thread each, then
// the CPU's tree) gives the CPU kernel's bits: forward, running statistics,
// and backward (parameter gradients accumulated, input gradient), on
// feature maps whose planes are not a multiple of 16 and on [C] features.
void batch_norm_logic_against_cpu(const Shape& sample, int64_t batch, uint64_t seed) {
  OpHarness h(make_node("batch_norm", "bn", {sample}), batch);
  fill_uniform(span_of(h.inputs[0]), seed, -3.0f, 3.0f);
  fill_uniform(span_of(h.params[0]), seed + 1, 0.5f, 1.5f);
  fill_uniform(span_of(h.params[1]), seed + 2, -0.5f, 0.5f);
  fill_uniform(span_of(h.params[2]), seed + 3, -0.5f, 0.5f);
  fill_uniform(span_of(h.params[3]), seed + 4, 0.5f, 1.5f);
  fill_uniform(span_of(h.d_output), seed + 5, -1.0f, 1.0f);
  fill_uniform(span_of(h.d_params[0]), seed + 6, -1.0f, 1.0f);
  fill_uniform(span_of(h.d_params[1]), seed + 7, -1.0f, 1.0f);
  const int64_t c = sample[0], hw = sample.rank() == 3 ? sample[1] * sample[2] : 1;
  const std::vector<float> running_mean(h.params[2].data(), h.params[2].data() + c),
      running_var(h.params[3].data(), h.params[3].data() + c), dw0(h.d_params[0].data(), h.d_params[0].data() + c),
      db0(h.d_params[1].data(), h.d_params[1].data() + c);
  h.forward();
  h.backward(true);
  const double eps = h.node.attrs.get_float("eps"), momentum = h.node.attrs.get_float("momentum");
  const double count = static_cast<double>(batch * hw);
  const float* x = h.inputs[0].data();
  const float* dy = h.d_output.data();
  std::vector<float> y(static_cast<size_t>(batch * c * hw)), dx(y.size()), mean_after(c), var_after(c), dw(c), db(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double shift = x[ch * hw];
    cuda::bn::LaneSums lanes[cuda::bn::kLanes], dlanes[cuda::bn::kLanes];
    for (int t = 0; t < cuda::bn::kLanes; ++t) {
      lanes[t] = cuda::bn::lane_sums(x, nullptr, batch, c, hw, ch, t, shift);
      dlanes[t] = cuda::bn::lane_sums(x, dy, batch, c, hw, ch, t, shift);
    }
    const cuda::bn::ChannelSums m = cuda::bn::channel_sums(lanes, shift, count);
    const size_t k = static_cast<size_t>(ch);
    mean_after[k] = static_cast<float>((1.0 - momentum) * running_mean[k] + momentum * m.mean);
    var_after[k] = static_cast<float>((1.0 - momentum) * running_var[k] + momentum * (m.var * count / (count - 1.0)));
    const cuda::bn::Affine f =
        cuda::bn::forward_affine(m.mean, m.var, h.params[0].data()[ch], h.params[1].data()[ch], eps);
    const cuda::bn::Backward b =
        cuda::bn::backward_figures(cuda::bn::channel_sums(dlanes, shift, count), h.params[0].data()[ch], eps, count);
    dw[k] = add_gradient_share(dw0[k], b.d_weight, true);
    db[k] = add_gradient_share(db0[k], b.d_bias, true);
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t j = 0; j < hw; ++j) {
        const size_t i = static_cast<size_t>((s * c + ch) * hw + j);
        y[i] = (x[i] - f.m) * f.a + f.b;
        dx[i] = (dy[i] * b.a + (x[i] - b.m) * b.b) + b.c;
      }
  }
  const std::string what = "batch_norm " + std::to_string(c) + "x" + std::to_string(hw);
  expect_same(y, h.output, what + " forward");
  expect_same(mean_after, h.params[2], what + " running_mean");
  expect_same(var_after, h.params[3], what + " running_var");
  expect_same(dw, h.d_params[0], what + " d_weight (accumulated)");
  expect_same(db, h.d_params[1], what + " d_bias (accumulated)");
  expect_same(dx, h.d_inputs[0], what + " d_input");
}

TEST(KernelLogic, BatchNormLanesGiveTheCpusBits) {
  batch_norm_logic_against_cpu(Shape{6, 5, 7}, 9, 70);   // planes of 35: two full lane rounds and a tail
  batch_norm_logic_against_cpu(Shape{4, 4, 4}, 33, 71);  // planes of 16
  batch_norm_logic_against_cpu(Shape{300}, 17, 72);      // [C]: one value per plane, lane 0 only
}

// The batch sum of the loss and the metric adds in sample order, as the CPU
// does, at any batch: with 1 at sample 0, 2^53 at 1 and 1 at 256, in order
// (1 + 2^53) + 1 is 2^53, while adding samples 0 and 256 first gives 2^53 + 2.
TEST(KernelLogic, TheBatchSumAddsInSampleOrderAtAnyBatch) {
  std::vector<double> v(300, 0.0);
  v[0] = 1.0;
  v[1] = std::ldexp(1.0, 53);
  v[256] = 1.0;
  double in_order = 0.0;
  for (double x : v) in_order += x;
  EXPECT_EQ(cuda::loss::batch_sum(v.data(), static_cast<int64_t>(v.size())), in_order);
  EXPECT_EQ(in_order, std::ldexp(1.0, 53));
}

// A chunk's share of a parameter gradient is rounded to float, then added
// in float (kernels/cpu/gradient_add.h, which the CPU's and the GPU's
// batch_norm, layer_norm and bias sums call): 1 + float(2^-24 + 2^-50)
// is a tie that rounds to 1, while float(1 + (2^-24 + 2^-50)) in double
// rounds up to 1 + 2^-23.
TEST(KernelLogic, AGradientShareIsRoundedToFloatBeforeItIsAdded) {
  const double share = std::ldexp(1.0, -24) + std::ldexp(1.0, -50);
  ASSERT_NE(static_cast<float>(1.0 + share), 1.0f) << "the value must tell the two roundings apart";
  EXPECT_EQ(add_gradient_share(1.0f, share, true), 1.0f + static_cast<float>(share));
  EXPECT_EQ(add_gradient_share(1.0f, share, true), 1.0f) << std::hexfloat << add_gradient_share(1.0f, share, true);
  EXPECT_EQ(add_gradient_share(1.0f, share, false), static_cast<float>(share));
  EXPECT_EQ(add_gradient_share(-3.5f, -share, true), -3.5f);
}

}  // namespace
}  // namespace devmap::test
