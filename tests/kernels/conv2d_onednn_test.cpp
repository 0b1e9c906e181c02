// The oneDNN convolution against the GEMM algorithm on the shapes it takes
// (strides, 1x1, dilation, one channel, no bias, several groups of samples
// per lane), its gradients, its independence of the pool size and of the
// group a sample is computed in, and the instruction set it runs.
// oneDNN's cases run in a process of their own per path
// (tests/kernels/onednn_paths.h).
#include "kernels/cpu/conv2d_onednn.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "tests/kernels/conv_test_util.h"
#include "tests/kernels/cpu_paths.h"
#include "tests/kernels/onednn_paths.h"

namespace devmap::test {
namespace {

class ConvOneDnn : public EveryOneDnnPath {};
DEVMAP_ON_EVERY_CPU_PATH(ConvOneDnn);

using cpu::Conv2dKernel;

Node conv(int64_t c, int64_t hw, int64_t filters, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation = 1,
          bool bias = true) {
  return make_node("conv2d", "c", {{c, hw, hw}},
                   {{"filters", filters},
                    {"kernel", kernel},
                    {"stride", stride},
                    {"padding", padding},
                    {"dilation", dilation},
                    {"bias", bias}});
}

std::unique_ptr<OpKernel> kernel(ConvAlgorithm algorithm, int64_t max_lanes = 8) {
  return std::make_unique<Conv2dKernel>(max_lanes, algorithm);
}

void matches_gemm(const Node& node, int64_t batch, int64_t max_lanes, int threads) {
  expect_matches_gemm(node, batch, max_lanes, threads, ConvAlgorithm::kOneDnn);
}

TEST_P(ConvOneDnn, MatchesGemm) {
  matches_gemm(conv(1, 28, 32, 5, 1, 2), 3, 8, 2);             // the reference model's conv1
  matches_gemm(conv(16, 14, 16, 3, 1, 1), 5, 8, 2);            // a ResNet block's 3x3
  matches_gemm(conv(16, 14, 32, 3, 2, 1), 4, 8, 1);            // stride 2
  matches_gemm(conv(16, 14, 32, 1, 2, 0, 1, false), 3, 8, 2);  // the 1x1 projection, no bias
  matches_gemm(conv(8, 11, 8, 3, 1, 2, 2), 2, 8, 1);           // dilation 2
  matches_gemm(conv(3, 9, 5, 3, 1, 1), 7, 3, 2);               // channels and filters below a block
  matches_gemm(conv(8, 10, 8, 4, 2, 0), 2, 8, 1);              // an even kernel, no padding, odd output
  // More samples than one group in a lane (OneDnnConvLayout::group is 10
  // here): lanes of 12 and 13 samples in groups of 10 and the rest.
  matches_gemm(conv(16, 40, 16, 3, 1, 1), 25, 2, 2);
}

TEST_P(ConvOneDnn, Gradients) {
  OpHarness h(conv(3, 7, 4, 3, 2, 1), 2, 1, kernel(ConvAlgorithm::kOneDnn));
  randomize(h, 3);
  expect_gradients(h, 31);
  OpHarness d(conv(2, 8, 3, 3, 1, 2, 2, false), 2, 1, kernel(ConvAlgorithm::kOneDnn));
  randomize(d, 4);
  expect_gradients(d, 32);
}

// The check can fail: with the gradients' sign flipped every check fails.
TEST_P(ConvOneDnn, GradientCheckFailsWithTheSignFlipped) {
  OpHarness h(conv(3, 7, 4, 3, 2, 1), 2, 1, kernel(ConvAlgorithm::kOneDnn));
  randomize(h, 3);
  expect_gradients(h, 31, /*flip_sign=*/true);
}

TEST_P(ConvOneDnn, PoolSizeDoesNotChangeTheBits) {
  expect_pool_size_keeps_the_bits(conv(16, 40, 16, 3, 1, 1), 23, ConvAlgorithm::kOneDnn);
}

// A sample's output and input gradient are the same bits whether oneDNN
// computes it alone or in a group of 10 or of 3: micro-batches and replicas
// rely on it (the weight gradient follows the gradient chunks instead).
TEST_P(ConvOneDnn, ASamplesResultDoesNotDependOnItsGroup) {
  const Node node = conv(16, 40, 16, 3, 1, 1);
  const int64_t batch = 13;  // one lane: a group of 10, then one of 3
  OpHarness all(node, batch, 1, kernel(ConvAlgorithm::kOneDnn, 1));
  randomize(all, 6);
  all.forward();
  all.backward();
  const int64_t in_sample = node.input_shapes[0].numel(), out_sample = node.out_shape.numel();
  for (int64_t s : {int64_t{0}, int64_t{9}, int64_t{12}}) {
    OpHarness one(node, 1, 1, kernel(ConvAlgorithm::kOneDnn, 1));
    std::copy_n(all.inputs[0].data() + s * in_sample, in_sample, one.inputs[0].data());
    std::copy_n(all.d_output.data() + s * out_sample, out_sample, one.d_output.data());
    for (size_t i = 0; i < all.params.size(); ++i)
      std::copy_n(all.params[i].data(), all.params[i].size(), one.params[i].data());
    one.forward();
    one.backward();
    EXPECT_TRUE(std::equal(one.output.data(), one.output.data() + out_sample, all.output.data() + s * out_sample))
        << "y of sample " << s;
    EXPECT_TRUE(
        std::equal(one.d_inputs[0].data(), one.d_inputs[0].data() + in_sample, all.d_inputs[0].data() + s * in_sample))
        << "dx of sample " << s;
  }
}

// --profile names oneDNN's kernel, of the active path's instruction set.
TEST_P(ConvOneDnn, RunsTheActivePathsInstructionSet) {
  const std::string isa = GetParam() == CpuPath::kAvx512 ? "avx512_core"
                          : GetParam() == CpuPath::kAvx2 ? "avx2"
                                                         : "sse41";
  const Node node = conv(16, 14, 16, 3, 1, 1);
  const std::string name = Conv2dKernel().implementation(node);
  EXPECT_EQ(name.rfind("onednn:", 0), 0u) << name;
  EXPECT_NE(name.find(isa), std::string::npos) << name << " on the " << cpu_path_name(GetParam()) << " path";
}

// The workspace is bounded for any batch (groups of a fixed size per lane)
// and monotone in it, so one sized for the largest micro-batch fits the rest.
TEST(ConvOneDnnChoice, WorkspaceIsBoundedAndMonotone) {
  const Node node = conv(16, 28, 32, 3, 2, 1);
  const Conv2dKernel k(8, ConvAlgorithm::kOneDnn);
  const OneDnnConvLayout lay(ConvGeometry::of(node.attrs, node.input_shapes[0], node.out_shape));
  EXPECT_EQ(k.workspace_bytes(node, 1), static_cast<size_t>(lay.shared + lay.lane) * sizeof(float));
  EXPECT_EQ(k.workspace_bytes(node, 100000), static_cast<size_t>(lay.shared + 8 * lay.lane) * sizeof(float));
  for (int64_t b = 1; b < 20; ++b) EXPECT_LE(k.workspace_bytes(node, b), k.workspace_bytes(node, b + 1));
}

TEST(ConvOneDnnChoice, GroupsAreRefusedWithTheReason) {
  try {
    make_node("conv2d", "c", {{8, 14, 14}},
              {{"filters", int64_t{8}},
               {"kernel", int64_t{3}},
               {"groups", int64_t{2}},
               {"algorithm", std::string("onednn")}});
    FAIL() << "groups 2 onednn was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("conv2d algorithm onednn cannot run with groups 2 (needs 1)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace devmap::test
