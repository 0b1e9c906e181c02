#include "kernels/cpu/conv2d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/cpu/im2col.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

using cpu::Conv2dKernel;

std::vector<float> iota(int64_t n, float start = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return v;
}

void set(const Buffer& b, const std::vector<float>& v) {
  ASSERT_EQ(b.size(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
}

void randomize(OpHarness& h, uint64_t seed) {
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), seed + i, -1.0f, 1.0f);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), seed + 100 + i, -1.0f, 1.0f);
}

TEST(Conv2d, HandComputed2x2Kernel) {
  OpHarness h(make_node("conv2d", "c", {{1, 3, 3}}, {{"filters", int64_t{1}}, {"kernel", int64_t{2}}}), 1);
  set(h.inputs[0], iota(9));        // [[1,2,3],[4,5,6],[7,8,9]]
  set(h.params[0], {1, 0, 0, -1});  // y = x[i][j] - x[i+1][j+1] + b
  set(h.params[1], {0.5f});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{-3.5f, -3.5f, -3.5f, -3.5f}));

  set(h.d_output, {1, 1, 1, 1});
  h.backward();
  EXPECT_EQ(to_vector(h.d_params[0]), (std::vector<float>{12, 16, 24, 28}));  // window sums
  EXPECT_EQ(to_vector(h.d_params[1]), (std::vector<float>{4}));
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 1, 0, 1, 0, -1, 0, -1, -1}));
}

TEST(Conv2d, HandComputedStrideAndPadding) {
  // 3x3 kernel of ones, stride 2, padding 1: each output sums the input
  // pixels of its window that are not padding.
  OpHarness h(make_node("conv2d", "c", {{1, 3, 3}},
                        {{"filters", int64_t{1}},
                         {"kernel", int64_t{3}},
                         {"stride", int64_t{2}},
                         {"padding", int64_t{1}},
                         {"bias", false}}),
              1);
  set(h.inputs[0], iota(9));
  set(h.params[0], std::vector<float>(9, 1.0f));
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{12, 16, 24, 28}));

  set(h.d_output, {1, 0, 0, 0});  // only the top-left window
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 1, 0, 1, 1, 0, 0, 0, 0}));
  // Weight taps that hit padding get nothing: the window is rows/cols -1..1.
  EXPECT_EQ(to_vector(h.d_params[0]), (std::vector<float>{0, 0, 0, 0, 1, 2, 0, 4, 5}));
}

TEST(Conv2d, HandComputedChannelsAndBatch) {
  // 1x1 kernel mixing two channels into two filters, two samples.
  OpHarness h(make_node("conv2d", "c", {{2, 2, 2}}, {{"filters", int64_t{2}}, {"kernel", int64_t{1}}}), 2);
  set(h.inputs[0], {1, 2, 3, 4, 10, 20, 30, 40, /* sample 1 */ 0, 0, 0, 0, 1, 1, 1, 1});
  set(h.params[0], {1, 0.5f, -1, 2});
  set(h.params[1], {0, 1});
  h.forward();
  EXPECT_EQ(to_vector(h.output),
            (std::vector<float>{6, 12, 18, 24, 20, 39, 58, 77, /* sample 1 */ 0.5f, 0.5f, 0.5f, 0.5f, 3, 3, 3, 3}));
}

TEST(Conv2d, HandComputedDilation) {
  // 2x2 kernel of taps {1, 10, 100, 1000}, dilation 2 over a 4x4 plane: the
  // taps read x[i][j], x[i][j+2], x[i+2][j], x[i+2][j+2].
  OpHarness h(make_node("conv2d", "c", {{1, 4, 4}},
                        {{"filters", int64_t{1}}, {"kernel", int64_t{2}}, {"dilation", int64_t{2}}, {"bias", false}}),
              1);
  set(h.inputs[0], iota(16, 0.0f));  // x[i][j] = 4i + j
  set(h.params[0], {1, 10, 100, 1000});
  h.forward();
  // y[i][j] = x[i][j] + 10 x[i][j+2] + 100 x[i+2][j] + 1000 x[i+2][j+2]
  auto y = [](float i, float j) {
    return (4 * i + j) + 10 * (4 * i + j + 2) + 100 * (4 * (i + 2) + j) + 1000 * (4 * (i + 2) + j + 2);
  };
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{y(0, 0), y(0, 1), y(1, 0), y(1, 1)}));
  set(h.d_output, {1, 0, 0, 0});  // only the top-left window
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{1, 0, 10, 0, 0, 0, 0, 0, 100, 0, 1000, 0, 0, 0, 0, 0}));
  EXPECT_EQ(to_vector(h.d_params[0]), (std::vector<float>{0, 2, 8, 10}));  // x at the four taps of window (0,0)
}

TEST(Conv2d, HandComputedGroupsKeepChannelsApart) {
  // groups 2, one 1x1 filter per group: filter 0 sees channel 0 only,
  // filter 1 channel 1 only: y0 = 2 x0, y1 = -x1.
  OpHarness h(make_node("conv2d", "c", {{2, 1, 2}},
                        {{"filters", int64_t{2}}, {"kernel", int64_t{1}}, {"groups", int64_t{2}}, {"bias", false}}),
              1);
  EXPECT_EQ(h.params[0].size(), 2);  // weight [2, 1, 1, 1]
  set(h.inputs[0], {1, 2, 3, 4});
  set(h.params[0], {2, -1});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{2, 4, -3, -4}));
  set(h.d_output, {1, 1, 10, 10});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{2, 2, -10, -10}));
  EXPECT_EQ(to_vector(h.d_params[0]), (std::vector<float>{3, 70}));
}

TEST(Conv2d, GroupsThatDoNotDivideAreAnInputError) {
  for (const auto& [channels, filters] : {std::pair{int64_t{4}, int64_t{6}}, std::pair{int64_t{6}, int64_t{4}}}) {
    try {
      make_node("conv2d", "c", {{channels, 5, 5}},
                {{"filters", filters}, {"kernel", int64_t{3}}, {"groups", int64_t{3}}});
      FAIL() << "groups 3 accepted for " << channels << " channels, " << filters << " filters";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_NE(std::string(e.what()).find("groups 3 must divide both the input channels"), std::string::npos)
          << e.what();
    }
  }
}

// A grouped convolution equals the ordinary one whose weights are zero
// outside each filter's group (block-diagonal in channels), up to rounding.
TEST(Conv2d, GroupsMatchBlockDiagonalConvolution) {
  const int64_t c = 4, o = 6, k = 3, groups = 2, cg = c / groups, og = o / groups;
  OpHarness grouped(make_node("conv2d", "c", {{c, 7, 6}},
                              {{"filters", o}, {"kernel", k}, {"padding", int64_t{1}}, {"groups", groups}}),
                    3);
  OpHarness dense(make_node("conv2d", "c", {{c, 7, 6}}, {{"filters", o}, {"kernel", k}, {"padding", int64_t{1}}}), 3);
  randomize(grouped, 21);
  std::copy(grouped.inputs[0].data(), grouped.inputs[0].data() + grouped.inputs[0].size(), dense.inputs[0].data());
  std::copy(grouped.params[1].data(), grouped.params[1].data() + o, dense.params[1].data());
  std::fill(dense.params[0].data(), dense.params[0].data() + dense.params[0].size(), 0.0f);
  for (int64_t f = 0; f < o; ++f)
    for (int64_t ci = 0; ci < cg; ++ci)
      for (int64_t t = 0; t < k * k; ++t)
        dense.params[0].data()[(f * c + (f / og) * cg + ci) * k * k + t] =
            grouped.params[0].data()[(f * cg + ci) * k * k + t];
  grouped.forward();
  dense.forward();
  for (int64_t i = 0; i < dense.output.size(); ++i)
    EXPECT_NEAR(grouped.output.data()[i], dense.output.data()[i], 1e-5) << i;
}

// im2col_plane against its definition and col2im_plane against the adjoint
// summed in the documented order (kh, kw, oh, ow), bit for bit: a small
// stride-1 plane (the padded stack-buffer path), one too large for it, and
// stride 2 (the general path), each also dilated.
TEST(Conv2d, Im2colAndCol2imMatchTheDefinition) {
  for (const auto& [size, kernel, stride, padding, dilation] : std::vector<std::array<int64_t, 5>>{{9, 3, 1, 1, 1},
                                                                                                   {28, 5, 1, 2, 1},
                                                                                                   {70, 3, 1, 1, 1},
                                                                                                   {9, 3, 2, 1, 1},
                                                                                                   {8, 2, 1, 0, 1},
                                                                                                   {9, 3, 1, 2, 2},
                                                                                                   {70, 3, 1, 1, 3},
                                                                                                   {11, 3, 2, 1, 2}}) {
    ConvGeometry g;
    g.channels = 1;
    g.height = size;
    g.width = size + 1;
    g.filters = 1;
    g.kernel = kernel;
    g.stride = stride;
    g.padding = padding;
    g.dilation = dilation;
    g.out_h = (g.height + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
    g.out_w = (g.width + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
    const int64_t kk = kernel * kernel, p = g.positions(), ld = p + 3;
    Buffer plane(g.in_plane()), cols(kk * ld), back(g.in_plane());
    fill_uniform(span_of(plane), 31, -1, 1);
    fill_uniform(span_of(cols), 32, -1, 1);
    cpu::im2col_plane(g, plane.data(), cols.data(), ld);
    std::vector<float> sums(static_cast<size_t>(g.in_plane()), 0.0f);
    for (int64_t kh = 0; kh < kernel; ++kh)
      for (int64_t kw = 0; kw < kernel; ++kw)
        for (int64_t oh = 0; oh < g.out_h; ++oh)
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t ih = oh * stride - padding + kh * dilation, iw = ow * stride - padding + kw * dilation;
            const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
            const float c = cols.data()[(kh * kernel + kw) * ld + oh * g.out_w + ow];
            ASSERT_EQ(c, inside ? plane.data()[ih * g.width + iw] : 0.0f) << size << " " << kh << kw << oh << ow;
            if (inside) sums[static_cast<size_t>(ih * g.width + iw)] += c * 0.5f + 0.25f;
          }
    for (int64_t i = 0; i < kk * ld; ++i) cols.data()[i] = cols.data()[i] * 0.5f + 0.25f;
    cpu::col2im_plane(g, cols.data(), ld, back.data());
    EXPECT_EQ(std::memcmp(back.data(), sums.data(), sums.size() * sizeof(float)), 0) << size;
  }
}

TEST(Conv2d, GradientsStride1) {
  OpHarness h(make_node("conv2d", "c", {{3, 6, 7}}, {{"filters", int64_t{4}}, {"kernel", int64_t{3}}}), 2);
  randomize(h, 1);
  expect_gradients(h, 11);
}

TEST(Conv2d, GradientsStride2Padding1) {
  OpHarness h(
      make_node("conv2d", "c", {{2, 7, 7}},
                {{"filters", int64_t{3}}, {"kernel", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}),
      2);
  randomize(h, 2);
  expect_gradients(h, 12);
}

TEST(Conv2d, GradientsStrideLargerThanKernelNoBias) {
  OpHarness h(make_node("conv2d", "c", {{2, 8, 6}},
                        {{"filters", int64_t{2}},
                         {"kernel", int64_t{2}},
                         {"stride", int64_t{3}},
                         {"padding", int64_t{1}},
                         {"bias", false}}),
              2);
  randomize(h, 3);
  expect_gradients(h, 13);
}

TEST(Conv2d, GradientsDilationGroups) {
  OpHarness h(make_node("conv2d", "c", {{4, 9, 8}},
                        {{"filters", int64_t{6}},
                         {"kernel", int64_t{3}},
                         {"stride", int64_t{2}},
                         {"padding", int64_t{2}},
                         {"dilation", int64_t{2}},
                         {"groups", int64_t{2}}}),
              2);
  randomize(h, 16);
  expect_gradients(h, 17);
}

TEST(Conv2d, GradientsDepthwise) {
  OpHarness h(
      make_node("conv2d", "c", {{3, 7, 7}},
                {{"filters", int64_t{6}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}, {"groups", int64_t{3}}}),
      3);
  randomize(h, 18);
  expect_gradients(h, 19);
}

TEST(Conv2d, FlippedGradientsOfDilatedGroupedConvFailTheCheck) {
  OpHarness h(make_node("conv2d", "c", {{4, 9, 8}},
                        {{"filters", int64_t{4}},
                         {"kernel", int64_t{3}},
                         {"padding", int64_t{2}},
                         {"dilation", int64_t{2}},
                         {"groups", int64_t{4}}}),
              2);
  randomize(h, 20);
  expect_gradients(h, 21, /*flip_sign=*/true);
}

TEST(Conv2d, FlippedGradientsFailTheCheck) {
  OpHarness h(
      make_node("conv2d", "c", {{2, 7, 7}},
                {{"filters", int64_t{3}}, {"kernel", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}}}),
      2);
  randomize(h, 4);
  expect_gradients(h, 14, /*flip_sign=*/true);
}

TEST(Conv2d, WorkspaceContract) {
  const Node node = make_node("conv2d", "c", {{3, 10, 10}}, {{"filters", int64_t{8}}, {"kernel", int64_t{3}}});
  // A sample's im2col matrix is 27 x 64 floats, so a group holds many samples.
  const int64_t group = Conv2dKernel::group_samples(node);
  EXPECT_EQ(group, static_cast<int64_t>(GemmConvLayout::kGroupColsBytes / (27 * 64 * sizeof(float))));
  const size_t lane = ((27 + 8) * group * 64 + 8 * 27) * sizeof(float);  // cols, block, dW partial
  Conv2dKernel eight(8, ConvAlgorithm::kGemm);
  EXPECT_EQ(eight.lane_bytes(node), lane);
  EXPECT_EQ(eight.lanes(1), 1);
  EXPECT_EQ(eight.lanes(5), 5);
  EXPECT_EQ(eight.lanes(64), 8);
  EXPECT_EQ(eight.workspace_bytes(node, 1), lane);
  EXPECT_EQ(eight.workspace_bytes(node, 64), 8 * lane);
  EXPECT_EQ(eight.workspace_bytes(node, 100000), 8 * lane);  // bounded for any batch
  Conv2dKernel one(1, ConvAlgorithm::kGemm);
  EXPECT_EQ(one.workspace_bytes(node, 64), lane);
  // Monotone in the batch, so the workspace for the largest micro-batch fits the rest.
  for (int64_t b = 1; b < 20; ++b) EXPECT_LE(eight.workspace_bytes(node, b), eight.workspace_bytes(node, b + 1));

  // A large convolution works one sample at a time and needs no block.
  const Node big = make_node("conv2d", "c", {{32, 14, 14}},
                             {{"filters", int64_t{64}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}});
  EXPECT_EQ(Conv2dKernel::group_samples(big), 1);
  EXPECT_EQ(Conv2dKernel(8, ConvAlgorithm::kGemm).lane_bytes(big), (800 * 196 + 64 * 800) * sizeof(float));
}

TEST(Conv2d, TooSmallWorkspaceThrows) {
  OpHarness h(make_node("conv2d", "c", {{1, 4, 4}}, {{"filters", int64_t{1}}, {"kernel", int64_t{3}}}), 2);
  h.ctx.workspace_bytes -= 4;
  EXPECT_THROW(h.forward(), Error);
}

// Splitting the batch into lanes (whose dW partials are then added) gives
// the same result as one lane, up to rounding, and correct gradients; with
// groups of several samples and with single-sample groups.
void expect_lanes_match_one_lane(const Node& node, int64_t batch) {
  OpHarness whole(node, batch, 1, std::make_unique<Conv2dKernel>(1, ConvAlgorithm::kGemm));
  OpHarness split(node, batch, 2,
                  std::make_unique<Conv2dKernel>(3, ConvAlgorithm::kGemm));  // lanes of 2, 2, 1 for batch 5
  randomize(whole, 5);
  randomize(split, 5);
  fill_uniform(span_of(whole.d_output), 6, -1, 1);
  fill_uniform(span_of(split.d_output), 6, -1, 1);
  whole.forward();
  split.forward();
  whole.backward();
  split.backward();
  auto expect_near = [](const Buffer& a, const Buffer& b, const char* what) {
    for (int64_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a.data()[i], b.data()[i], 1e-5) << what << " " << i;
  };
  expect_near(whole.output, split.output, "y");
  expect_near(whole.d_inputs[0], split.d_inputs[0], "dx");
  expect_near(whole.d_params[0], split.d_params[0], "dW");
  expect_near(whole.d_params[1], split.d_params[1], "db");
  expect_gradients(split, 15);
}

TEST(Conv2d, LanesMatchOneLane) {
  const Node small =
      make_node("conv2d", "c", {{2, 6, 6}}, {{"filters", int64_t{3}}, {"kernel", int64_t{3}}, {"padding", int64_t{1}}});
  ASSERT_GT(Conv2dKernel::group_samples(small), 1);
  expect_lanes_match_one_lane(small, 5);
  // Over 64 KiB of im2col per sample: one-sample groups (GEMMs straight into y, dy used in place).
  const Node large = make_node("conv2d", "c", {{8, 12, 12}},
                               {{"filters", int64_t{2}}, {"kernel", int64_t{5}}, {"padding", int64_t{2}}});
  ASSERT_EQ(Conv2dKernel::group_samples(large), 1);
  expect_lanes_match_one_lane(large, 3);
}

TEST(Conv2d, AccumulateAddsParamGradients) {
  OpHarness h(make_node("conv2d", "c", {{2, 5, 5}}, {{"filters", int64_t{3}}, {"kernel", int64_t{3}}}), 2);
  randomize(h, 7);
  fill_uniform(span_of(h.d_output), 8, -1, 1);
  h.forward();
  h.backward();
  const std::vector<float> dw = to_vector(h.d_params[0]), db = to_vector(h.d_params[1]);
  h.backward(/*accumulate=*/false);  // overwrites: same values, not doubled
  EXPECT_EQ(to_vector(h.d_params[0]), dw);
  h.backward(/*accumulate=*/true);
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(h.d_params[0].data()[i], 2 * dw[i], 1e-5 * (1 + std::abs(dw[i])));
  for (size_t i = 0; i < db.size(); ++i) EXPECT_FLOAT_EQ(h.d_params[1].data()[i], 2 * db[i]);
}

TEST(Conv2d, NullInputGradientIsSkipped) {
  const Node node = make_node("conv2d", "c", {{2, 5, 5}}, {{"filters", int64_t{3}}, {"kernel", int64_t{3}}});
  OpHarness full(node, 2), params_only(node, 2);
  for (OpHarness* h : {&full, &params_only}) {
    randomize(*h, 9);
    fill_uniform(span_of(h->d_output), 10, -1, 1);
  }
  params_only.want_input_grad = {false};
  std::fill(params_only.d_inputs[0].data(), params_only.d_inputs[0].data() + params_only.d_inputs[0].size(), 7.0f);
  full.forward();
  params_only.forward();
  full.backward();
  params_only.backward();
  EXPECT_TRUE(same_bits(full.d_params[0], params_only.d_params[0]));
  EXPECT_TRUE(same_bits(full.d_params[1], params_only.d_params[1]));
  for (float v : to_vector(params_only.d_inputs[0])) EXPECT_EQ(v, 7.0f);
}

}  // namespace
}  // namespace devmap::test
