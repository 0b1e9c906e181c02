// devmap export: the example configs' graphs to ONNX and back through
// import give the same ops, attributes and weights.
#include <gtest/gtest.h>

#include "coordinator/config/loader.h"
#include "coordinator/onnx/onnx_export.h"
#include "coordinator/onnx/onnx_import.h"

namespace devmap {
namespace {

using onnx_io::HostTensor;

// Weights for every parameter of `g`: distinct values, a count for I64 state.
std::map<std::string, HostTensor> synthetic_weights(const Graph& g) {
  std::map<std::string, HostTensor> w;
  int64_t k = 0;
  for (const Node& n : g.nodes())
    for (const ParamSpec& p : n.params) {
      HostTensor& t = w[n.name + "." + p.name];
      t.dims = p.shape.dims();
      t.integer = p.stored_as == FileDtype::kI64;
      for (int64_t i = 0; i < p.shape.numel(); ++i, ++k)
        t.values.push_back(t.integer ? 7.0 : static_cast<double>(0.5f + static_cast<float>(k % 1000) * 1e-3f));
    }
  return w;
}

class ExportThenImport : public ::testing::TestWithParam<const char*> {};

TEST_P(ExportThenImport, GivesBackTheSameOpsAttributesAndWeights) {
  const Config c = load_config(std::string(DEVMAP_SOURCE_DIR) + "/" + GetParam());
  const auto weights = synthetic_weights(c.graph);
  const onnx::ModelProto exported = onnx_io::export_model(c.graph, weights);
  const onnx_io::ImportedModel m = onnx_io::import_model(exported);
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message(GetParam(), m.unsupported);
  int compared = 0;
  for (const Node& n : c.graph.nodes()) {
    const OpRole role = n.schema->role;
    if (role == OpRole::kLabelInput || role == OpRole::kLoss || role == OpRole::kMetric) continue;
    const int i = m.graph.find(n.name);
    ASSERT_GE(i, 0) << n.name << " is not in the imported graph";
    const Node& back = m.graph.node(i);
    EXPECT_EQ(back.op(), n.op()) << n.name;
    EXPECT_EQ(back.out_shape, n.out_shape) << n.name;
    for (const auto& [key, value] : n.attrs.values())
      if (key != "algorithm") {
        EXPECT_TRUE(back.attrs.values().at(key) == value) << n.name << "." << key;
      }
    for (const ParamSpec& p : n.params) {
      const std::string name = n.name + "." + p.name;
      if (p.stored_as == FileDtype::kI64) continue;  // ONNX keeps no batch count
      EXPECT_EQ(m.weights.at(name).values, weights.at(name).values) << name;
    }
    ++compared;
  }
  EXPECT_EQ(m.graph.size(), compared) << "the imported graph has ops the config does not";
}

INSTANTIATE_TEST_SUITE_P(Configs, ExportThenImport,
                         ::testing::Values("configs/fashion_mnist_cnn.yaml", "configs/fashion_mnist_mlp.yaml",
                                           "configs/fashion_mnist_resnet.yaml", "tests/configs/new_ops.yaml"));

}  // namespace
}  // namespace devmap
