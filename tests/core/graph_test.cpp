// Shape inference and the sizes the planner uses, on the reference model.
#include "core/graph/graph.h"

#include <gtest/gtest.h>

#include "tests/core/graph_builders.h"

namespace devmap {
namespace {

TEST(Graph, InfersTheReferenceModelsShapes) {
  Graph g = reference_cnn();
  EXPECT_EQ(g.node(g.find("conv1")).out_shape, (Shape{32, 28, 28}));
  EXPECT_EQ(g.node(g.find("pool1")).out_shape, (Shape{32, 14, 14}));
  EXPECT_EQ(g.node(g.find("pool2")).out_shape, (Shape{64, 7, 7}));
  EXPECT_EQ(g.node(g.find("flat")).out_shape, (Shape{3136}));
  EXPECT_EQ(g.node(g.find("logits")).out_shape_for(64), (Shape{64, 10}));
  EXPECT_EQ(g.node(g.find("loss")).out_shape_for(64), (Shape{1}));
}

TEST(Graph, CountsParametersActivationsAndFlops) {
  Graph g = reference_cnn();
  EXPECT_EQ(g.param_count(), 3274634);
  const Node& conv2 = g.node(g.find("conv2"));
  EXPECT_EQ(conv2.param_bytes(), (64 * 32 * 25 + 64) * 4);
  EXPECT_EQ(conv2.activation_bytes(64), 64 * 64 * 14 * 14 * 4);
  EXPECT_DOUBLE_EQ(conv2.forward_flops(1), 2.0 * 64 * 14 * 14 * 32 * 25);
  // About 83 MFLOP per image per training step (forward + 2x backward).
  EXPECT_NEAR(g.training_flops(1) / 1e6, 83.0, 1.5);
}

// A backward that computes no input gradient (the first layer's) does the
// weight gradient's FLOPs alone.
TEST(Graph, BackwardWithoutInputGradientsCountsTheParameterGradientsAlone) {
  Graph g = reference_cnn();
  for (const char* name : {"conv1", "fc1"}) {
    const Node& n = g.node(g.find(name));
    EXPECT_DOUBLE_EQ(n.backward_flops(64), 2.0 * n.forward_flops(64)) << name;
    EXPECT_DOUBLE_EQ(n.backward_flops(64, false), n.forward_flops(64)) << name;
  }
  const Node& relu = g.node(g.find("relu1"));
  EXPECT_DOUBLE_EQ(relu.backward_flops(64, false), relu.backward_flops(64));
}

TEST(Graph, AShapeThatDoesNotFitNamesTheOpAndBothShapes) {
  Graph g;
  Node in = make("image", "input", {}, with("shape", std::vector<int64_t>{1, 28, 28}));
  g.add(in);
  Node d = make("fc", "dense", {0}, with("units", int64_t{10}));
  d.loc = SourceLoc{"m.yaml", 7, 5};
  g.add(d);
  try {
    g.infer();
    FAIL() << "dense on an image must not infer";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()),
              "m.yaml:7:5: dense 'fc': input must be a vector per sample, got [1,28,28] (put a flatten op in front)");
  }
}

}  // namespace
}  // namespace devmap
