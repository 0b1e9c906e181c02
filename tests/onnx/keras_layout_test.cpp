// The layout pass of devmap import (coordinator/onnx/layout_pass.h):
// Keras models as tf2onnx writes them (NHWC, checked-in fixtures with
// Keras's own predictions) import and predict what Keras predicts; a
// Transpose before a Gemm folds into its weights as ONNX's semantics say;
// the transposes it cannot fold are still listed, all at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "coordinator/onnx/onnx_import.h"
#include "tests/onnx/forward_runner.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/run_process.h"

namespace devmap {
namespace {

using onnx_io::HostTensor;
using onnx_io::ImportedModel;

std::string fixture(const std::string& name, const std::string& file) {
  return std::string(DEVMAP_SOURCE_DIR) + "/tests/onnx/data/keras/" + name + "/" + file;
}

HostTensor read_pb(const std::string& path) {
  return onnx_io::tensor_values(onnx_io::read_tensor_file(path), path);
}

// [N, H, W, C] values as [N, C, H, W].
std::vector<float> to_nchw(const HostTensor& t) {
  const int64_t n = t.dims[0], h = t.dims[1], w = t.dims[2], c = t.dims[3];
  std::vector<float> out(t.values.size());
  for (int64_t s = 0; s < n; ++s)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k)
          out[static_cast<size_t>(((s * c + k) * h + y) * w + x)] =
              static_cast<float>(t.values[static_cast<size_t>(((s * h + y) * w + x) * c + k)]);
  return out;
}

struct KerasCase {
  const char* name;
  int64_t channels;
  size_t folds;  // layout notes: the input's Transpose or Reshape, the one before the Flatten
};

void PrintTo(const KerasCase& k, std::ostream* os) {
  *os << k.name;
}

class OnnxKerasLayout : public ::testing::TestWithParam<KerasCase> {};

TEST_P(OnnxKerasLayout, Tf2onnxModelImportsAndPredictsWhatKerasPredicts) {
  const KerasCase& k = GetParam();
  const ImportedModel m = onnx_io::import_model(onnx_io::read_model(fixture(k.name, "model.onnx")));
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message(k.name, m.unsupported);
  EXPECT_EQ(m.layout_notes.size(), k.folds);
  ASSERT_EQ(m.input_nodes.size(), 1u);
  // devmap's input is NCHW whatever the model took.
  EXPECT_EQ(m.graph.node(m.input_nodes[0]).out_shape, (Shape{k.channels, 6, 6}));
  for (const Node& n : m.graph.nodes()) EXPECT_NE(n.op(), "reshape") << n.name;  // no layout op left

  const HostTensor x = read_pb(fixture(k.name, "input_0.pb"));  // NHWC, as Keras took it
  const HostTensor want = read_pb(fixture(k.name, "output_0.pb"));
  ASSERT_EQ(x.dims, (std::vector<int64_t>{2, 6, 6, k.channels}));
  const auto out = test::run_forward(m, 2, {{m.input_nodes[0], to_nchw(x)}});
  const Buffer& y = out[static_cast<size_t>(m.output_nodes[0])];
  ASSERT_EQ(want.dims, (std::vector<int64_t>{2, 3}));
  for (size_t i = 0; i < want.values.size(); ++i) EXPECT_NEAR(y.data()[i], want.values[i], 1e-5) << "value " << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OnnxKerasLayout,
                         ::testing::Values(KerasCase{"keras_rgb", 3, 2}, KerasCase{"keras_rgb_nchw", 3, 1},
                                           KerasCase{"keras_gray", 1, 2}),
                         [](const auto& p) { return std::string(p.param.name); });

// devmap import of the tf2onnx fixture says what it folded and writes it
// into the config.
TEST(OnnxKerasLayoutCommand, SaysWhatItFoldedAndThatImagesAreNchw) {
  testing::TempDir dir;
  const std::string yaml = dir.path() + "/keras.yaml";
  const testing::ProcessResult r = testing::run_process(
      {DEVMAP_COORDINATOR_BIN, "import", fixture("keras_rgb", "model.onnx"), "--output", yaml}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("layout: input images: NHWC [N, 6, 6, 3] read as NCHW [N, 3, 6, 6]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("give the images as N x C x H x W"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layout: Transpose Transpose__28 (NCHW to NHWC before Reshape"), std::string::npos) << r.out;
}

// [N, 2, 2, 2] data -> Transpose (0, 2, 3, 1) -> Flatten -> Gemm with
// transB 1: the pass permutes B's columns; the forward must be ONNX's
// y = flatten(NHWC x) B^T + C, computed here from the definitions.
TEST(OnnxLayoutPass, TransposeBeforeAGemmFoldsIntoItsWeights) {
  test::ModelBuilder b;
  b.input("x", {-1, 2, 2, 2});
  b.node("Relu", "relu", {"x"}, {"r"});
  auto& t = b.node("Transpose", "to_nhwc", {"r"}, {"t"});
  test::ModelBuilder::ints(t, "perm", {0, 2, 3, 1});
  b.node("Flatten", "flat", {"t"}, {"f"});
  const std::vector<float> w = b.weight("B", {3, 8}, 1.0f);
  const std::vector<float> c = b.weight("C", {3}, 1.0f);
  test::ModelBuilder::integer(b.node("Gemm", "fc", {"f", "B", "C"}, {"y"}), "transB", 1);
  b.output("y");
  const ImportedModel m = onnx_io::import_model(b.model());
  ASSERT_TRUE(m.unsupported.empty()) << onnx_io::unsupported_message("model", m.unsupported);
  ASSERT_EQ(m.layout_notes.size(), 1u);
  EXPECT_NE(m.layout_notes[0].find("the columns of its weights permuted"), std::string::npos) << m.layout_notes[0];

  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>(i) - 1.5f;
  const auto out = test::run_forward(m, 2, {{m.input_nodes[0], x}});
  const Buffer& y = out[static_cast<size_t>(m.output_nodes[0])];
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t u = 0; u < 3; ++u) {
      double want = c[static_cast<size_t>(u)];
      // NHWC flatten: feature (h, w, ch) at (h*2 + w)*2 + ch, of x[s, ch, h, w].
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t wi = 0; wi < 2; ++wi)
          for (int64_t ch = 0; ch < 2; ++ch) {
            const float v = std::max(0.0f, x[static_cast<size_t>(((s * 2 + ch) * 2 + h) * 2 + wi)]);
            want += v * w[static_cast<size_t>(u * 8 + (h * 2 + wi) * 2 + ch)];
          }
      EXPECT_NEAR(y.data()[s * 3 + u], want, 1e-5) << "sample " << s << " unit " << u;
    }
}

// Transposes of data the pass cannot fold stay, listed at once with the
// rest: one that swaps H and W, one back to NHWC read by a Relu, and an
// NHWC input's Transpose whose input is read by another node too.
TEST(OnnxLayoutPass, TransposesItCannotFoldAreListedAsUnsupported) {
  test::ModelBuilder b;
  b.input("x", {-1, 4, 4, 2});
  auto& in = b.node("Transpose", "to_nchw", {"x"}, {"xt"});
  test::ModelBuilder::ints(in, "perm", {0, 3, 1, 2});
  b.node("Relu", "also_reads_x", {"x"}, {"xr"});
  auto& swap = b.node("Transpose", "swap_hw", {"xt"}, {"s"});
  test::ModelBuilder::ints(swap, "perm", {0, 1, 3, 2});
  b.weight("W", {3, 2, 3, 3});
  test::ModelBuilder::ints(b.node("Conv", "conv", {"s", "W"}, {"c"}), "pads", {1, 1, 1, 1});
  auto& back = b.node("Transpose", "to_nhwc", {"c"}, {"h"});
  test::ModelBuilder::ints(back, "perm", {0, 2, 3, 1});
  b.node("Relu", "relu", {"h"}, {"r"});
  b.node("LSTM", "lstm1", {"xr"}, {"l"});
  b.output("r");
  b.output("l");
  const ImportedModel m = onnx_io::import_model(b.model());
  EXPECT_TRUE(m.layout_notes.empty());
  const std::string msg = onnx_io::unsupported_message("model.onnx", m.unsupported);
  EXPECT_EQ(msg.rfind("model.onnx: 4 nodes devmap cannot import:", 0), 0u) << msg;
  for (const char* node : {"to_nchw", "swap_hw", "to_nhwc"})
    EXPECT_NE(msg.find(std::string(node) + " (Transpose: needs a transpose of data"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lstm1 (LSTM: needs a recurrent op)"), std::string::npos) << msg;
}

}  // namespace
}  // namespace devmap
