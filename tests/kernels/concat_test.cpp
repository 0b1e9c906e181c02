#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

void set(const Buffer& b, const std::vector<float>& v) {
  ASSERT_EQ(b.size(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
}

TEST(Concat, HandComputedFeatures) {
  OpHarness h(make_node("concat", "cat", {{2}, {1}, {3}}), 2);
  EXPECT_EQ(h.node.out_shape, (Shape{6}));
  set(h.inputs[0], {1, 2, /* sample 1 */ 10, 20});
  set(h.inputs[1], {3, /* sample 1 */ 30});
  set(h.inputs[2], {4, 5, 6, /* sample 1 */ 40, 50, 60});
  h.forward();
  EXPECT_EQ(to_vector(h.output), (std::vector<float>{1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}));
  set(h.d_output, {-1, -2, -3, -4, -5, -6, -10, -20, -30, -40, -50, -60});
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{-1, -2, -10, -20}));
  EXPECT_EQ(to_vector(h.d_inputs[1]), (std::vector<float>{-3, -30}));
  EXPECT_EQ(to_vector(h.d_inputs[2]), (std::vector<float>{-4, -5, -6, -40, -50, -60}));
}

TEST(Concat, ChannelsOfFeatureMaps) {
  OpHarness h(make_node("concat", "cat", {{1, 2, 2}, {2, 2, 2}}), 2);
  EXPECT_EQ(h.node.out_shape, (Shape{3, 2, 2}));
  fill_uniform(span_of(h.inputs[0]), 1, -1, 1);
  fill_uniform(span_of(h.inputs[1]), 2, -1, 1);
  h.forward();
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 12; ++i) {
      const float want = i < 4 ? h.inputs[0].data()[n * 4 + i] : h.inputs[1].data()[n * 8 + i - 4];
      EXPECT_EQ(h.output.data()[n * 12 + i], want) << n << " " << i;
    }
}

TEST(Concat, SkipsInputsThatNeedNoGradient) {
  OpHarness h(make_node("concat", "cat", {{2}, {2}}), 1);
  h.want_input_grad = {false, true};
  std::fill(h.d_inputs[0].data(), h.d_inputs[0].data() + 2, 7.0f);
  set(h.d_output, {1, 2, 3, 4});
  h.forward();
  h.backward();
  EXPECT_EQ(to_vector(h.d_inputs[0]), (std::vector<float>{7, 7}));
  EXPECT_EQ(to_vector(h.d_inputs[1]), (std::vector<float>{3, 4}));
}

TEST(Concat, Gradients) {
  OpHarness h(make_node("concat", "cat", {{2, 3, 2}, {1, 3, 2}, {3, 3, 2}}), 2);
  for (size_t i = 0; i < 3; ++i) fill_uniform(span_of(h.inputs[i]), 10 + i, -1, 1);
  expect_gradients(h, 36);
}

TEST(Concat, FlippedGradientsFailTheCheck) {
  OpHarness h(make_node("concat", "cat", {{2, 3, 2}, {1, 3, 2}}), 2);
  for (size_t i = 0; i < 2; ++i) fill_uniform(span_of(h.inputs[i]), 20 + i, -1, 1);
  expect_gradients(h, 37, /*flip_sign=*/true);
}

TEST(Concat, ShapesMustAgreeButTheFirstDimension) {
  try {
    make_node("concat", "cat", {{2, 3, 3}, {2, 3, 4}});
    FAIL() << "mismatched planes were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("concat input 1 [2,3,4] does not fit input 0 [2,3,3]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_node("concat", "cat", {{4}, {2, 2}}), Error);
}

}  // namespace
}  // namespace devmap::test
