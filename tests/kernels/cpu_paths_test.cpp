// The kernels built per CPU path give the same bits on every path this CPU
// supports (cpu_dispatch.h: no build fuses multiply-adds), and name the path
// that ran. Paths the CPU lacks are skipped as uncovered.
#include "tests/kernels/cpu_paths.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/conv2d.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

class CpuPathBits : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(CpuPathBits);

// Forward and backward of one op on random data; every output buffer.
std::vector<std::vector<float>> run_op(const Node& node, int64_t batch, std::unique_ptr<OpKernel> kernel = nullptr) {
  OpHarness h(node, batch, 2, std::move(kernel));
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), 10 + i, -1.0f, 1.0f);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), 20 + i, -1.0f, 1.0f);
  fill_uniform(span_of(h.d_output), 30, -1.0f, 1.0f);
  h.forward();
  h.backward();
  std::vector<std::vector<float>> out = {to_vector(h.output)};
  for (const Buffer& b : h.d_inputs) out.push_back(to_vector(b));
  for (const Buffer& b : h.d_params) out.push_back(to_vector(b));
  return out;
}

// fn's result on the active path against its result on the baseline path,
// bit for bit (NaNs included).
template <class Fn>
void expect_same_as_baseline(const Fn& fn, const std::string& what) {
  const auto here = fn();
  decltype(here) base = [&] {
    ScopedCpuPath baseline(CpuPath::kBaseline);
    return fn();
  }();
  ASSERT_EQ(here.size(), base.size());
  for (size_t i = 0; i < here.size(); ++i)
    EXPECT_TRUE(here[i].size() == base[i].size() &&
                std::memcmp(here[i].data(), base[i].data(), here[i].size() * sizeof(float)) == 0)
        << what << ": buffer " << i << " differs from the baseline path's";
}

Node conv_node() {
  return make_node("conv2d", "c", {{16, 14, 14}},
                   {{"filters", int64_t{32}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}});
}

TEST_P(CpuPathBits, WinogradConvolution) {
  expect_same_as_baseline(
      [] { return run_op(conv_node(), 5, std::make_unique<cpu::Conv2dKernel>(8, ConvAlgorithm::kWinograd)); },
      "winograd");
}

TEST_P(CpuPathBits, ReluAndMaxPool) {
  expect_same_as_baseline([] { return run_op(make_node("relu", "r", {{8, 13, 13}}, {}), 3); }, "relu");
  expect_same_as_baseline(
      [] {
        return run_op(make_node("max_pool2d", "p", {{8, 14, 15}}, {{"kernel", int64_t{2}}}), 3);
      },
      "max_pool2d");
}

// The 2x2 pooling's whole-row vectors (max_pool2x2_avx512.h) against the
// baseline loops: rows of 1 to 40 outputs (one vector, two, masked tails),
// odd and even widths and heights, and planes full of ties, signed zeros
// and NaNs of several payloads, which decide both the output's bits and
// which element takes the gradient.
TEST_P(CpuPathBits, MaxPool2x2EveryRowLength) {
  for (int64_t width = 2; width <= 81; ++width) {
    for (int64_t height : {2, 3, 6}) {
      expect_same_as_baseline(
          [&] {
            OpHarness h(make_node("max_pool2d", "p", {{2, height, width}}, {{"kernel", int64_t{2}}}), 2, 2);
            std::vector<float> values = {
                0.0f, -0.0f, 1.0f, -1.0f, std::bit_cast<float>(0x7fc00001u), std::bit_cast<float>(0xffc00002u),
                1.0f, 0.5f};
            float* x = h.inputs[0].data();
            for (int64_t i = 0; i < h.inputs[0].size(); ++i)
              x[i] = values[static_cast<size_t>((i * 7 + i / 5) % static_cast<int64_t>(values.size()))];
            fill_uniform(span_of(h.d_output), 30, -1.0f, 1.0f);
            h.forward();
            h.backward();
            std::vector<std::vector<float>> out = {to_vector(h.output), to_vector(h.d_inputs[0])};
            return out;
          },
          "max_pool2d " + std::to_string(height) + "x" + std::to_string(width));
    }
  }
}

// Planes of 169 positions (10 lanes of 16 and a tail of 9) and dense
// features (one position per plane).
TEST_P(CpuPathBits, BatchNorm) {
  expect_same_as_baseline([] { return run_op(make_node("batch_norm", "bn", {{6, 13, 13}}, {}), 5); }, "feature maps");
  expect_same_as_baseline([] { return run_op(make_node("batch_norm", "bn", {{37}}, {}), 9); }, "dense features");
}

TEST_P(CpuPathBits, Optimizers) {
  for (auto kind : {OptimizerConfig::Kind::kSgd, OptimizerConfig::Kind::kMomentum, OptimizerConfig::Kind::kAdam}) {
    expect_same_as_baseline(
        [kind] {
          OptimizerConfig c;
          c.kind = kind;
          c.weight_decay = 1e-4;
          auto opt = CpuKernelFactory().make_optimizer(c);
          const int64_t n = 10007;
          Buffer p(n), g(n);
          std::vector<Buffer> state;
          for (int s = 0; s < opt->state_count(); ++s) state.emplace_back(n);
          fill_uniform(span_of(p), 1, -1, 1);
          fill_uniform(span_of(g), 2, -1, 1);
          std::vector<TensorView> views;
          for (const Buffer& b : state) views.push_back(b.view(Shape{n}));
          ThreadPool pool(2);
          for (int64_t step = 1; step <= 3; ++step) opt->update(p.view(Shape{n}), g.view(Shape{n}), views, step, pool);
          return std::vector<std::vector<float>>{to_vector(p)};
        },
        optimizer_kind_name(kind));
  }
}

// --profile's kernel names follow the active path.
TEST_P(CpuPathBits, KernelsNameThePathThatRuns) {
  const std::string path = cpu_path_name(GetParam());
  cpu::Conv2dKernel conv(8, ConvAlgorithm::kWinograd);
  EXPECT_EQ(conv.implementation(conv_node()), "winograd/" + path + "+" + cpu::gemm_kernel_name());
  const Node pool = make_node("max_pool2d", "p", {{8, 14, 14}}, {{"kernel", int64_t{2}}});
  EXPECT_EQ(CpuKernelFactory().make_kernel("max_pool2d")->implementation(pool), "max_pool2x2/" + path);
  const Node bn = make_node("batch_norm", "bn", {{8, 14, 14}}, {});
  EXPECT_EQ(CpuKernelFactory().make_kernel("batch_norm")->implementation(bn), "batch_norm/" + path);
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kMomentum;
  EXPECT_EQ(CpuKernelFactory().make_optimizer(c)->implementation(), "momentum/" + path);
}

}  // namespace
}  // namespace devmap::test
