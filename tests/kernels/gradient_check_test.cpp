// The gradient checker itself: it must accept a correct gradient and reject
// wrong ones (sign, scale, one bad element, NaN).
#include "tests/kernels/gradient_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace devmap::test {
namespace {

// L = sum_i c_i * x_i^3 / 3 + x_i, so dL/dx_i = c_i * x_i^2 + 1.
struct Cubic {
  std::vector<float> x{0.5f, -1.25f, 2.0f, 0.0f, 1.5f};
  std::vector<double> c{1.0, -2.0, 0.5, 3.0, -1.0};
  double loss() const {
    double l = 0.0;
    for (size_t i = 0; i < x.size(); ++i) l += c[i] * std::pow(x[i], 3.0) / 3.0 + x[i];
    return l;
  }
  std::vector<float> gradient() const {
    std::vector<float> g;
    for (size_t i = 0; i < x.size(); ++i) g.push_back(static_cast<float>(c[i] * x[i] * x[i] + 1.0));
    return g;
  }
};

TEST(GradientCheck, AcceptsTheTrueGradient) {
  Cubic f;
  const std::vector<float> before = f.x;
  GradCheckResult r = check_gradient(f.x, f.gradient(), [&] { return f.loss(); });
  EXPECT_TRUE(r.passed) << r.summary();
  EXPECT_EQ(r.checked, 5);
  EXPECT_LT(r.max_error, 1e-3);
  EXPECT_EQ(f.x, before);  // restored bit for bit
}

TEST(GradientCheck, RejectsWrongGradients) {
  Cubic f;
  auto loss = [&] { return f.loss(); };
  std::vector<float> g = f.gradient();

  std::vector<float> flipped = g;
  for (float& v : flipped) v = -v;
  GradCheckResult r = check_gradient(f.x, flipped, loss);
  EXPECT_FALSE(r.passed) << r.summary();
  EXPECT_NEAR(r.max_error, 2.0, 1e-3);

  std::vector<float> scaled = g;
  for (float& v : scaled) v *= 1.1f;
  EXPECT_FALSE(check_gradient(f.x, scaled, loss).passed);

  std::vector<float> one_bad = g;
  one_bad[3] += 0.5f;
  r = check_gradient(f.x, one_bad, loss);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst_index, 3);

  std::vector<float> nan = g;
  nan[1] = std::nanf("");
  r = check_gradient(f.x, nan, loss);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst_index, 1);
}

TEST(GradientCheck, SmallGradientsAreJudgedAgainstTheTensorScale) {
  // Gradient [10, 1e-4]: an absolute error of 1e-4 on the tiny element is
  // noise at this scale, not a failure.
  std::vector<float> x{1.0f, 1.0f};
  auto loss = [&] { return 10.0 * x[0] + 1e-4 * x[1]; };
  EXPECT_TRUE(check_gradient(x, std::vector<float>{10.0f, 2e-4f}, loss).passed);
  EXPECT_FALSE(check_gradient(x, std::vector<float>{10.0f, 1.0f}, loss).passed);
}

}  // namespace
}  // namespace devmap::test
