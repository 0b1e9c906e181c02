// Which relus a device fuses into the conv2d, batch_norm or add before
// them: only where that output feeds the relu alone, both computed on a
// device the CPU addresses, and neither tensor crossing devices or living
// in the coordinator's segments.
#include "core/plan/fused_relu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/plan/program.h"
#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

Program inference(const Graph& g, const std::vector<std::string>& outputs) {
  std::vector<int> nodes;
  for (const std::string& o : outputs) nodes.push_back(g.find(o));
  return build_inference_program(g, nodes);
}

struct Device {
  Graph g;
  Program p;
  std::vector<int> edge_of;
  std::vector<bool> external;
  // The training program, or the inference program of `outputs`.
  explicit Device(Graph graph, const std::vector<std::string>& outputs = {})
      : g(std::move(graph)), p(outputs.empty() ? build_training_program(g) : inference(g, outputs)) {
    edge_of.assign(static_cast<size_t>(p.tensor_count()), -1);
    external.assign(static_cast<size_t>(g.size()), false);
    external[static_cast<size_t>(g.find("image"))] = external[static_cast<size_t>(g.find("label"))] = true;
  }
  std::vector<FusedRelu> fused(bool host = true) const {
    return fused_relus(FusedReluInputs{&g, &p.forward, &edge_of, &external, host});
  }
  std::vector<FusedReluGradient> fused_gradients(bool host = true) const {
    return fused_relu_gradients(FusedReluGradientInputs{&g, &p.backward, &edge_of, host});
  }
};

TEST(FusedRelu, TheReferenceModelsConvolutionsTakeTheirRelus) {
  Device d(reference_cnn());
  const std::vector<FusedRelu> f = d.fused();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].producer, d.g.find("conv1"));
  EXPECT_EQ(f[0].relu, d.g.find("relu1"));
  EXPECT_EQ(f[1].producer, d.g.find("conv2"));
  EXPECT_EQ(f[1].relu, d.g.find("relu2"));
  // relu3 follows a dense layer: not fused. A device the CPU cannot address
  // fuses nothing.
  EXPECT_TRUE(d.fused(/*host=*/false).empty());
}

// In residual blocks each relu follows a batch_norm or an add: all fused,
// except where the relu's input has another reader (relu1 of a block feeds
// conv2 and the add: not a producer's sole reader, so nothing to fuse there
// is affected; relu2's add is read by relu2 alone).
TEST(FusedRelu, ResidualBlocksFuseEachReluIntoItsBatchNormOrAdd) {
  Device d(residual_blocks());
  const std::vector<FusedRelu> f = d.fused();
  ASSERT_EQ(f.size(), 4u);
  const std::pair<const char*, const char*> expected[] = {
      {"bn1", "relu1"}, {"add", "relu2"}, {"bn3", "relu3"}, {"add2", "relu4"}};
  for (size_t k = 0; k < f.size(); ++k) {
    EXPECT_EQ(f[k].producer, d.g.find(expected[k].first)) << k;
    EXPECT_EQ(f[k].relu, d.g.find(expected[k].second)) << k;
  }
}

TEST(FusedRelu, NotWhereAnythingElseReadsTheConvolutionOrATensorLeaves) {
  {
    Graph g = reference_cnn();
    g.add(make("also", "relu", {g.find("conv1")}));  // conv1 now has two readers
    g.infer();
    Device d(std::move(g), {"logits", "also"});
    const std::vector<FusedRelu> f = d.fused();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].producer, d.g.find("conv2"));
  }
  for (const char* leaves : {"conv1", "relu1"}) {
    Device d(reference_cnn());
    d.edge_of[static_cast<size_t>(d.g.find(leaves))] = 0;  // crosses to another device
    ASSERT_EQ(d.fused().size(), 1u) << leaves;
    Device e(reference_cnn());
    e.external[static_cast<size_t>(e.g.find(leaves))] = true;  // the coordinator reads it
    ASSERT_EQ(e.fused().size(), 1u) << leaves;
    EXPECT_EQ(e.fused()[0].producer, e.g.find("conv2")) << leaves;
  }
}

// The reference model's pools run their relus' backward: relu1 and relu2
// feed pool1 and pool2 alone, so each pool's backward writes the relu's
// output gradient and the relu's backward alone reads it.
TEST(FusedReluGradient, TheReferenceModelsPoolsTakeTheirRelusGradients) {
  Device d(reference_cnn());
  const std::vector<FusedReluGradient> f = d.fused_gradients();
  ASSERT_EQ(f.size(), 2u);
  const std::pair<const char*, const char*> expected[] = {{"relu2", "pool2"}, {"relu1", "pool1"}};  // backward order
  for (size_t k = 0; k < f.size(); ++k) {
    EXPECT_EQ(f[k].relu, d.g.find(expected[k].first)) << k;
    EXPECT_EQ(f[k].consumer, d.g.find(expected[k].second)) << k;
    EXPECT_EQ(f[k].output_grad, d.p.grad_of[static_cast<size_t>(f[k].relu)]) << k;
    const int conv = d.g.node(f[k].relu).inputs[0];
    EXPECT_EQ(f[k].input_grad, d.p.grad_of[static_cast<size_t>(conv)]) << k;
  }
  EXPECT_TRUE(d.fused_gradients(/*host=*/false).empty());
  // No relu of the residual blocks feeds a max_pool2d.
  EXPECT_TRUE(Device(residual_blocks()).fused_gradients().empty());
}

TEST(FusedReluGradient, NotWhereTheRelusOutputHasAnotherGradientOrATensorLeaves) {
  {
    // relu1 feeds a max_pool2d and an avg_pool2d: its output's gradient is
    // the sum of theirs, which the max_pool2d's backward cannot write alone.
    Graph g;
    Attrs conv = with("filters", int64_t{4});
    conv.set("kernel", int64_t{3});
    conv.set("padding", int64_t{1});
    g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{1, 8, 8})));
    g.add(make("label", "labels", {}, with("classes", int64_t{10})));
    g.add(make("conv1", "conv2d", {0}, conv));
    g.add(make("relu1", "relu", {2}));
    g.add(make("pool1", "max_pool2d", {3}));
    g.add(make("average", "avg_pool2d", {3}));
    g.add(make("sum", "add", {4, 5}));
    g.add(make("flat", "flatten", {6}));
    g.add(make("logits", "dense", {7}, with("units", int64_t{10})));
    g.add(make("loss", "softmax_cross_entropy", {8, 1}));
    g.infer();
    EXPECT_TRUE(Device(std::move(g)).fused_gradients().empty());
  }
  for (const char* leaves : {"conv1", "relu1"}) {
    Device d(reference_cnn());
    const auto gradient_of = [&](const char* node) {
      return static_cast<size_t>(d.p.grad_of[static_cast<size_t>(d.g.find(node))]);
    };
    d.edge_of[gradient_of(leaves)] = 0;  // the gradient crosses to another device
    const std::vector<FusedReluGradient> f = d.fused_gradients();
    ASSERT_EQ(f.size(), 1u) << leaves;
    EXPECT_EQ(f[0].relu, d.g.find("relu2")) << leaves;
  }
}

}  // namespace
}  // namespace devmap
