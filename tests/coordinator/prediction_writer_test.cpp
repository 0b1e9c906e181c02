// The predictions CSV: ids, labels and, with probabilities, the softmax of
// each row's logits with 6 significant digits.
#include "coordinator/data/prediction_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace devmap {
namespace {

TEST(PredictionWriter, WritesLabelsWithOneBasedIdsAcrossBatches) {
  std::ostringstream out;
  PredictionWriter w(out, 0);
  w.write_header();
  const float a[] = {3, 0}, b[] = {9};
  w.write_rows(2, a, nullptr);
  w.write_rows(1, b, nullptr);
  EXPECT_EQ(out.str(), "ImageId,Label\n1,3\n2,0\n3,9\n");
  EXPECT_EQ(w.rows(), 3);
}

TEST(PredictionWriter, WritesTheSoftmaxOfEachRow) {
  std::ostringstream out;
  PredictionWriter w(out, 3);
  w.write_header();
  const float labels[] = {2, 0};
  const float logits[] = {0, 0, std::log(2.0f), 1000, 0, -1000};  // large logits must not overflow
  w.write_rows(2, labels, logits);
  EXPECT_EQ(out.str(), "ImageId,Label,p0,p1,p2\n1,2,0.25,0.25,0.5\n2,0,1,0,0\n");
}

TEST(PredictionWriter, SoftmaxSumsToOne) {
  const float logits[] = {1.5f, -2.0f, 0.25f, 7.0f};
  double p[4];
  softmax(logits, 4, p);
  EXPECT_NEAR(p[0] + p[1] + p[2] + p[3], 1.0, 1e-12);
  EXPECT_NEAR(p[3] / p[0], std::exp(5.5), 1e-9 * std::exp(5.5));
}

}  // namespace
}  // namespace devmap
