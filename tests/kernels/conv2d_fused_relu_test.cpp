// conv2d with its relu fused (ForwardArgs::relu_output) gives the bits of
// conv2d then relu, for every algorithm, on every CPU path, whatever the
// pool size and however the batch falls into lanes and groups.
// oneDNN's cases run in a process of their own per path
// (tests/kernels/onednn_paths.h).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/relu.h"
#include "tests/kernels/conv_test_util.h"
#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/onednn_paths.h"

namespace devmap::test {
namespace {

class ConvFusedRelu : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(ConvFusedRelu);

void expect_fused_equals_conv_then_relu(const Node& node, int64_t batch, ConvAlgorithm algorithm) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(node.input_shapes[0].to_string() + " batch " + std::to_string(batch) + ", " + std::to_string(threads) +
                 " threads");
    OpHarness plain(node, batch, threads, std::make_unique<cpu::Conv2dKernel>(8, algorithm));
    OpHarness fused(node, batch, threads, std::make_unique<cpu::Conv2dKernel>(8, algorithm));
    ASSERT_TRUE(fused.kernel->fuses_relu());
    randomize(plain, 9);
    randomize(fused, 9);
    fill_uniform(span_of(fused.output), 3, -1, 1);  // whatever was there is overwritten
    plain.forward();
    fused.forward(/*relu_output=*/true);
    cpu::relu_in_place(plain.output.data(), plain.output.size());
    int64_t negative = 0;
    for (int64_t i = 0; i < plain.output.size(); ++i) negative += fused.output.data()[i] == 0.0f;
    EXPECT_GT(negative, 0) << "no output was clamped: the test shows nothing";
    EXPECT_TRUE(same_bits(plain.output, fused.output));
  }
}

TEST_P(ConvFusedRelu, GemmAndWinogradGiveConvThenReluBits) {
  const Node five = conv_node(8, 12, 12, 8, 5, 2);  // Winograd F(4x4, 5x5)
  const Node strided =
      make_node("conv2d", "c", {{4, 9, 9}},
                {{"filters", int64_t{6}}, {"kernel", int64_t{3}}, {"stride", int64_t{2}}, {"groups", int64_t{2}}});
  for (int64_t batch : {1, 5, 19}) {
    expect_fused_equals_conv_then_relu(five, batch, ConvAlgorithm::kWinograd);
    expect_fused_equals_conv_then_relu(five, batch, ConvAlgorithm::kGemm);
    expect_fused_equals_conv_then_relu(strided, batch, ConvAlgorithm::kGemm);
  }
}

TEST_P(ConvFusedRelu, OneDnnGivesConvThenReluBits) {
  if (const std::string why = onednn_runs_another_path(GetParam()); !why.empty()) GTEST_SKIP() << why;
  for (int64_t batch : {1, 5, 19}) {
    expect_fused_equals_conv_then_relu(conv_node(1, 28, 28, 32, 5, 2), batch, ConvAlgorithm::kOneDnn);
    expect_fused_equals_conv_then_relu(conv_node(16, 9, 9, 16, 3, 1), batch, ConvAlgorithm::kOneDnn);
  }
}

}  // namespace
}  // namespace devmap::test
