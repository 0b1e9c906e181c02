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

}  // namespace
}  // namespace devmap
