// auto's conv-algorithm lever (coordinator/plan/conv_algorithm_lever.h):
// which convs it would run as GEMM, and what it writes into the config.
#include "coordinator/plan/conv_algorithm_lever.h"

#include <gtest/gtest.h>

#include "coordinator/config/loader.h"

namespace devmap {
namespace {

// conv1 has one channel (oneDNN's direct convolution by default), conv2 32
// channels and a 5x5 kernel (Winograd by default).
Config two_convs(const std::string& conv1_algorithm = "") {
  return load_config_text(
      "devices: {cpu:0: {memory_limit: 16MiB}}\n"
      "model:\n"
      "  ops:\n"
      "    - {name: image, op: input, shape: [1, 28, 28]}\n"
      "    - {name: label, op: labels, classes: 10}\n"
      "    - {name: conv1, op: conv2d, inputs: [image], filters: 32, kernel: 5, padding: 2" +
          (conv1_algorithm.empty() ? "" : ", algorithm: " + conv1_algorithm) +
          "}\n"
          "    - {name: conv2, op: conv2d, inputs: [conv1], filters: 64, kernel: 5, padding: 2}\n"
          "    - {name: flat, op: flatten, inputs: [conv2]}\n"
          "    - {name: fc, op: dense, inputs: [flat], units: 10}\n"
          "    - {name: loss, op: softmax_cross_entropy, inputs: [fc, label]}\n",
      "a.yaml");
}

TEST(ConvAlgorithmLever, OnlyAOneDnnConvWhoseGemmNeedsLessWorkspace) {
  const std::vector<LeanerConv> convs = convs_leaner_as_gemm(two_convs());
  ASSERT_EQ(convs.size(), 1u) << "conv2 is Winograd: GEMM would multiply more";
  EXPECT_EQ(convs[0].op, "conv1");
  EXPECT_LT(convs[0].gemm_bytes, convs[0].onednn_bytes);
  EXPECT_EQ(gemm_lever_text(convs),
            "conv1 as im2col + GEMM (`algorithm: gemm`): 637.5 KiB of workspace at 8 samples against oneDNN's "
            "7.43 MiB, the same FLOPs");
}

TEST(ConvAlgorithmLever, AnAlgorithmTheConfigChoseStays) {
  EXPECT_TRUE(convs_leaner_as_gemm(two_convs("onednn")).empty());
  EXPECT_TRUE(convs_leaner_as_gemm(two_convs("gemm")).empty());
  EXPECT_EQ(convs_leaner_as_gemm(two_convs("auto")).size(), 1u);
}

TEST(ConvAlgorithmLever, TheConfigRunsItAsGemmAndKeepsTheChoice) {
  Config c = two_convs();
  const int conv1 = c.graph.find("conv1");
  const uint64_t before = static_cast<uint64_t>(c.graph.node(conv1).workspace_bytes(8));
  apply_gemm_convs(c, convs_leaner_as_gemm(c));
  EXPECT_EQ(c.graph.node(conv1).attrs.get_string("algorithm"), "gemm");
  EXPECT_LT(static_cast<uint64_t>(c.graph.node(conv1).workspace_bytes(8)), before);
  EXPECT_EQ(c.auto_algorithms, (std::map<std::string, std::string>{{"conv1", "gemm"}}));
  EXPECT_TRUE(convs_leaner_as_gemm(c).empty());
}

}  // namespace
}  // namespace devmap
