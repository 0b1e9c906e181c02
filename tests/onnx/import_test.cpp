// devmap import: ONNX nodes to devmap ops and weights, every unsupported
// node listed at once, import then export giving back the same weights,
// and the config import writes loading as it is.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "coordinator/config/loader.h"
#include "coordinator/onnx/config_writer.h"
#include "coordinator/onnx/onnx_export.h"
#include "coordinator/onnx/onnx_import.h"
#include "coordinator/onnx/weights_file.h"
#include "tests/onnx/forward_runner.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/run_process.h"

namespace devmap {
namespace {

using onnx_io::HostTensor;
using onnx_io::ImportedModel;
using testing::ProcessResult;
using testing::run_process;

// A small ResNet-style net as torch.onnx.export writes one (node names
// "/conv1/Conv", initializers "conv1.weight"): conv, batch norm, relu, max
// pool, a conv with a residual add, global average pool, flatten, linear.
test::ModelBuilder resnet_like() {
  test::ModelBuilder b;
  b.input("input.1", {-1, 1, 28, 28});
  b.weight("conv1.weight", {4, 1, 3, 3});
  b.weight("conv1.bias", {4});
  test::ModelBuilder::ints(b.node("Conv", "/conv1/Conv", {"input.1", "conv1.weight", "conv1.bias"}, {"c1"}), "pads",
                           {1, 1, 1, 1});
  b.weight("bn1.weight", {4}, 1.0f);
  b.weight("bn1.bias", {4});
  b.weight("bn1.running_mean", {4});
  b.positive_weight("bn1.running_var", {4});
  b.node("BatchNormalization", "/bn1/BatchNormalization",
         {"c1", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"}, {"b1"});
  b.node("Relu", "/Relu", {"b1"}, {"r1"});
  auto& pool = b.node("MaxPool", "/pool/MaxPool", {"r1"}, {"p1"});
  test::ModelBuilder::ints(pool, "kernel_shape", {2, 2});
  test::ModelBuilder::ints(pool, "strides", {2, 2});
  b.weight("conv2.weight", {4, 4, 3, 3});
  test::ModelBuilder::ints(b.node("Conv", "/conv2/Conv", {"p1", "conv2.weight"}, {"c2"}), "pads", {1, 1, 1, 1});
  b.node("Add", "/Add", {"c2", "p1"}, {"a"});
  b.node("Relu", "/Relu_1", {"a"}, {"r2"});
  b.node("GlobalAveragePool", "/gap/GlobalAveragePool", {"r2"}, {"g"});
  b.node("Flatten", "/Flatten", {"g"}, {"f"});
  b.weight("fc.weight", {10, 4});
  b.weight("fc.bias", {10});
  test::ModelBuilder::integer(b.node("Gemm", "/fc/Gemm", {"f", "fc.weight", "fc.bias"}, {"logits"}), "transB", 1);
  b.output("logits");
  return b;
}

std::vector<std::string> op_names(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes()) names.push_back(n.name + ":" + n.op());
  return names;
}

TEST(OnnxImport, MapsEveryNodeToDevmapOpsWithPyTorchNames) {
  test::ModelBuilder b = resnet_like();
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message("model", m.unsupported);
  // GlobalAveragePool's [N, C, 1, 1] then Flatten is devmap's [C]: no op between.
  EXPECT_EQ(op_names(m.graph),
            (std::vector<std::string>{"input.1:input", "conv1:conv2d", "bn1:batch_norm", "Relu:relu",
                                      "pool.MaxPool:max_pool2d", "conv2:conv2d", "Add:add", "Relu_1:relu",
                                      "gap.GlobalAveragePool:global_avg_pool", "fc:dense"}));
  const Node& pool = m.graph.node(4);
  EXPECT_EQ(pool.attrs.get_int("kernel"), 2);
  EXPECT_EQ(pool.attrs.get_int("stride"), 0);  // devmap's "the kernel"
  EXPECT_EQ(m.graph.node(5).attrs.get_bool("bias"), false);
  EXPECT_EQ(m.graph.node(9).out_shape, (Shape{10}));
  EXPECT_EQ(m.weights.at("bn1.num_batches_tracked").integer, true);
  EXPECT_NEAR(m.graph.node(2).attrs.get_float("momentum"), 0.1, 1e-9);  // ONNX's default 0.9 weighs the running value
  EXPECT_EQ(m.output_nodes, (std::vector<int>{9}));
}

TEST(OnnxImport, ImportThenExportGivesBackTheSameWeights) {
  test::ModelBuilder b = resnet_like();
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message("model", m.unsupported);
  const onnx::ModelProto exported = onnx_io::export_model(m.graph, m.weights);
  std::map<std::string, const onnx::TensorProto*> out;
  for (const auto& t : exported.graph().initializer()) out[t.name()] = &t;
  int compared = 0;
  for (const auto& t : b.model().graph().initializer()) {
    ASSERT_TRUE(out.count(t.name())) << t.name();
    const HostTensor before = onnx_io::tensor_values(t, "original"),
                     after = onnx_io::tensor_values(*out[t.name()], "exported");
    EXPECT_EQ(before.dims, after.dims) << t.name();
    EXPECT_EQ(before.values, after.values) << t.name();
    ++compared;
  }
  EXPECT_EQ(compared, 9);
  // And the export imports again to the same graph and weights.
  const ImportedModel again = onnx_io::import_model(exported);
  ASSERT_TRUE(again.unsupported.empty()) << onnx_io::unsupported_message("exported", again.unsupported);
  // (the Flatten export writes after GlobalAveragePool is a view again: no op)
  EXPECT_EQ(op_names(again.graph), op_names(m.graph));
  for (const auto& [name, t] : m.weights) {
    ASSERT_TRUE(again.weights.count(name)) << name;
    if (name.find("num_batches_tracked") == std::string::npos) {
      EXPECT_EQ(again.weights.at(name).values, t.values) << name;
    }
  }
}

TEST(OnnxImport, GemmWeightsAreConvertedToDenseLayoutExactly) {
  // y = 2 * x B + C with B [in 3, out 2] (transB 0): devmap's weight is 2 B^T.
  test::ModelBuilder b;
  b.input("x", {-1, 3});
  const std::vector<float> w = b.weight("B", {3, 2}, 1.0f);
  const std::vector<float> c = b.weight("C", {2}, 1.0f);
  auto& gemm = b.node("Gemm", "gemm", {"x", "B", "C"}, {"y"});
  test::ModelBuilder::real(gemm, "alpha", 2.0f);
  b.output("y");
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message("model", m.unsupported);
  const HostTensor& dense = m.weights.at("gemm.weight");
  ASSERT_EQ(dense.dims, (std::vector<int64_t>{2, 3}));
  for (int u = 0; u < 2; ++u)
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(dense.values[static_cast<size_t>(u * 3 + i)], 2.0 * w[static_cast<size_t>(i * 2 + u)]);
  // The forward is x (2B) + C.
  const std::vector<float> x{1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f};
  const auto out = test::run_forward(m, 2, {{m.input_nodes[0], x}});
  const Buffer& y = out[static_cast<size_t>(m.output_nodes[0])];
  for (int s = 0; s < 2; ++s)
    for (int u = 0; u < 2; ++u) {
      double want = c[static_cast<size_t>(u)];
      for (int i = 0; i < 3; ++i) want += 2.0 * x[static_cast<size_t>(s * 3 + i)] * w[static_cast<size_t>(i * 2 + u)];
      EXPECT_NEAR(y.data()[s * 2 + u], want, 1e-5);
    }
}

TEST(OnnxImport, MatMulThenAddOfABiasIsOneDenseLayer) {
  test::ModelBuilder b;
  b.input("x", {-1, 3});
  b.weight("W", {3, 5});
  b.weight("bias", {5});
  b.node("MatMul", "mm", {"x", "W"}, {"xw"});
  b.node("Add", "plus", {"xw", "bias"}, {"y"});
  b.output("y");
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message("model", m.unsupported);
  EXPECT_EQ(op_names(m.graph), (std::vector<std::string>{"x:input", "mm:dense"}));
  EXPECT_TRUE(m.graph.node(1).attrs.get_bool("bias"));
}

// torch.onnx.export writes nn.GELU as Div(x, sqrt 2), Erf, Add 1, Mul x,
// Mul 0.5, with each Constant after the node before it: one gelu op.
TEST(OnnxImport, TorchsGeluFormulaIsOneGeluOp) {
  test::ModelBuilder b;
  b.input("x", {-1, 4});
  auto constant = [&](const std::string& name, float v) {
    auto& c = b.node("Constant", name, {}, {name});
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = onnx_io::float_tensor("", {}, {v});
  };
  b.node("Div", "/gelu/Div", {"x", "sqrt2"}, {"d"});
  constant("sqrt2", 1.41421354f);
  b.node("Erf", "/gelu/Erf", {"d"}, {"e"});
  b.node("Add", "/gelu/Add", {"e", "one"}, {"p"});
  constant("one", 1.0f);
  b.node("Mul", "/gelu/Mul", {"x", "p"}, {"xp"});
  b.node("Mul", "/gelu/Mul_1", {"xp", "half"}, {"y"});
  constant("half", 0.5f);
  b.output("y");
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message("model", m.unsupported);
  EXPECT_EQ(op_names(m.graph), (std::vector<std::string>{"x:input", "gelu.Mul_1:gelu"}));
  const std::vector<float> x{-3.0f, -0.5f, 0.0f, 0.25f, 1.0f, 2.0f, 4.0f, -1.5f};
  const auto out = test::run_forward(m, 2, {{m.input_nodes[0], x}});
  const Buffer& y = out[static_cast<size_t>(m.output_nodes[0])];
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y.data()[i], 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))), 1e-6) << x[i];
}

// Every node devmap cannot map is named in one message, with what it needs.
TEST(OnnxImport, ListsEveryUnsupportedNodeAtOnce) {
  test::ModelBuilder b;
  b.input("x", {-1, 4, 6, 6});
  auto& pool = b.node("MaxPool", "pool1", {"x"}, {"p"});
  test::ModelBuilder::ints(pool, "kernel_shape", {2, 2});
  test::ModelBuilder::integer(pool, "ceil_mode", 1);
  test::ModelBuilder::ints(pool, "strides", {3, 3});
  b.node("Flatten", "flat", {"p"}, {"f"});
  b.node("LSTM", "lstm1", {"f"}, {"h"});
  b.node("Loop", "loop1", {"h"}, {"l"});
  b.node("Relu", "relu", {"l"}, {"r"});
  auto& sm = b.node("Softmax", "softmax0", {"x"}, {"s"});
  test::ModelBuilder::integer(sm, "axis", 0);
  b.output("r");
  b.output("s");
  const ImportedModel m = onnx_io::import_model(b.model());
  const std::string msg = onnx_io::unsupported_message("model.onnx", m.unsupported);
  EXPECT_EQ(msg.rfind("model.onnx: 4 nodes devmap cannot import:", 0), 0u) << msg;
  EXPECT_NE(msg.find("pool1 (MaxPool: needs ceil_mode = 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lstm1 (LSTM: needs a recurrent op)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("loop1 (Loop: needs control flow)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("softmax0 (Softmax: needs softmax over each sample's features"), std::string::npos) << msg;
}

TEST(OnnxImport, TheConfigItWritesLoadsWithTheSameGraph) {
  test::ModelBuilder b = resnet_like();
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty());
  const std::string yaml = onnx_io::config_yaml(m, {"model.onnx", "/tmp/model.safetensors"});
  const Config c = load_config_text(yaml, "model.yaml");
  EXPECT_EQ(c.train.init_weights, "/tmp/model.safetensors");
  ASSERT_EQ(c.graph.size(), m.graph.size() + 3) << yaml;  // + labels, loss, accuracy
  for (int i = 0; i < m.graph.size(); ++i) {
    EXPECT_EQ(c.graph.node(i).name, m.graph.node(i).name);
    EXPECT_EQ(c.graph.node(i).attrs.values(), m.graph.node(i).attrs.values()) << m.graph.node(i).name;
    EXPECT_EQ(c.graph.node(i).out_shape, m.graph.node(i).out_shape) << m.graph.node(i).name;
  }
}

TEST(OnnxImportCommand, WritesAConfigAndWeightsOrExitsTwoNamingEveryNode) {
  testing::TempDir dir;
  const std::string d = dir.path() + "/";
  {
    std::ofstream f(d + "net.onnx", std::ios::binary);
    ASSERT_TRUE(resnet_like().model().SerializeToOstream(&f));
  }
  ProcessResult r = run_process({DEVMAP_COORDINATOR_BIN, "import", d + "net.onnx", "--output", d + "net.yaml"}, d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + d + "net.yaml and " + d + "net.safetensors"), std::string::npos) << r.out;
  const auto weights = onnx_io::read_weights(d + "net.safetensors");
  EXPECT_EQ(weights.size(), 10u);  // 9 initializers + num_batches_tracked
  r = run_process({DEVMAP_COORDINATOR_BIN, "plan", d + "net.yaml"}, d);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Training starts from the imported weights (train.init_weights): at a
  // negligible learning rate the trained weights are the imported ones.
  const std::vector<std::string> small{"--set", "train.max_steps=1", "--set", "data.train_limit=64",
                                       "--set", "data.test_limit=64"};
  std::vector<std::string> train{DEVMAP_COORDINATOR_BIN,
                                 "train",
                                 d + "net.yaml",
                                 "--set",
                                 "train.optimizer.learning_rate=1e-30",
                                 "--out-dir",
                                 d + "run"};
  train.insert(train.end(), small.begin(), small.end());
  r = run_process(train, d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trained = onnx_io::read_weights(d + "run/net.safetensors");
  for (const char* name : {"conv1.weight", "conv2.weight", "fc.weight", "fc.bias"})
    EXPECT_EQ(trained.at(name).values, weights.at(name).values) << name;
  // A weights file that does not fit the model is refused, naming the tensor.
  auto partial = weights;
  partial.erase("fc.bias");
  onnx_io::write_weights(d + "partial.safetensors", partial);
  train = {DEVMAP_COORDINATOR_BIN,
           "train",
           d + "net.yaml",
           "--set",
           "train.init_weights=" + d + "partial.safetensors",
           "--out-dir",
           d + "run2"};
  train.insert(train.end(), small.begin(), small.end());
  r = run_process(train, d);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("partial.safetensors: missing tensor 'fc.bias'"), std::string::npos) << r.err;

  test::ModelBuilder bad;
  bad.input("x", {-1, 8});
  bad.node("LSTM", "lstm1", {"x"}, {"h"});
  bad.node("Loop", "loop1", {"h"}, {"y"});
  bad.output("y");
  {
    std::ofstream f(d + "bad.onnx", std::ios::binary);
    ASSERT_TRUE(bad.model().SerializeToOstream(&f));
  }
  r = run_process({DEVMAP_COORDINATOR_BIN, "import", d + "bad.onnx", "--output", d + "bad.yaml"}, d);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, d + "bad.onnx: 2 nodes devmap cannot import:\n  lstm1 (LSTM: needs a recurrent op)\n  loop1 (Loop: "
                       "needs control flow)\n");
  EXPECT_FALSE(std::ifstream(d + "bad.yaml").good());
}

}  // namespace
}  // namespace devmap
