// What the CPU convolution tests share: a conv2d node, random data, and the
// check of one algorithm's results against the GEMM algorithm's.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/ops/conv2d_cpu_layout.h"
#include "kernels/cpu/conv2d.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {

inline Node conv_node(int64_t c, int64_t h, int64_t w, int64_t filters, int64_t kernel, int64_t padding,
                      bool bias = true) {
  return make_node("conv2d", "c", {{c, h, w}},
                   {{"filters", filters}, {"kernel", kernel}, {"padding", padding}, {"bias", bias}});
}

inline void randomize(OpHarness& h, uint64_t seed) {
  for (size_t i = 0; i < h.inputs.size(); ++i) fill_uniform(span_of(h.inputs[i]), seed + i, -1.0f, 1.0f);
  for (size_t i = 0; i < h.params.size(); ++i) fill_uniform(span_of(h.params[i]), seed + 100 + i, -1.0f, 1.0f);
  fill_uniform(span_of(h.d_output), seed + 200, -1.0f, 1.0f);
}

// |a - b| <= tol * (1 + max |b|) elementwise; returns the worst relative error.
inline double expect_close(const Buffer& a, const Buffer& b, double tol, const std::string& what) {
  double scale = 0, worst = 0;
  for (int64_t i = 0; i < b.size(); ++i) scale = std::max(scale, static_cast<double>(std::abs(b.data()[i])));
  for (int64_t i = 0; i < b.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(a.data()[i]) - b.data()[i]) / (1 + scale));
  EXPECT_LE(worst, tol) << what;
  return worst;
}

// Forward, dx, dW (overwritten and accumulated) and db of `algorithm`
// against GEMM, on a batch cut into at most `max_lanes` lanes.
inline void expect_matches_gemm(const Node& node, int64_t batch, int64_t max_lanes, int threads,
                                ConvAlgorithm algorithm) {
  SCOPED_TRACE(node.input_shapes[0].to_string() + " -> " + node.out_shape.to_string() + " k" +
               std::to_string(node.attrs.get_int("kernel")) + " s" + std::to_string(node.attrs.get_int("stride")) +
               " p" + std::to_string(node.attrs.get_int("padding")) + " batch " + std::to_string(batch) + " lanes " +
               std::to_string(max_lanes));
  OpHarness gemm(node, batch, threads, std::make_unique<cpu::Conv2dKernel>(max_lanes, ConvAlgorithm::kGemm));
  OpHarness other(node, batch, threads, std::make_unique<cpu::Conv2dKernel>(max_lanes, algorithm));
  for (OpHarness* h : {&gemm, &other}) {
    randomize(*h, 21);
    h->forward();
    h->backward();
  }
  // Sums over C*K*K (forward, dx) or batch*OH*OW (dW) terms of products of
  // values in [-1, 1], in another order: rounding differs by about 1e-6 of
  // the largest output.
  constexpr double kTol = 2e-5;
  expect_close(other.output, gemm.output, kTol, "y");
  expect_close(other.d_inputs[0], gemm.d_inputs[0], kTol, "dx");
  expect_close(other.d_params[0], gemm.d_params[0], kTol, "dW");
  if (other.d_params.size() > 1) {
    EXPECT_TRUE(same_bits(other.d_params[1], gemm.d_params[1])) << "db";
  }
  const std::vector<float> dw = to_vector(other.d_params[0]);
  other.backward(/*accumulate=*/true);
  for (size_t i = 0; i < dw.size(); ++i)
    ASSERT_EQ(other.d_params[0].data()[i], dw[i] + dw[i]) << "accumulated dW " << i;
}

// The kernel on pools of 1, 2 and 3 threads gives the same bits: forward,
// input gradient and every parameter gradient.
inline void expect_pool_size_keeps_the_bits(const Node& node, int64_t batch, ConvAlgorithm algorithm) {
  OpHarness one(node, batch, 1), two(node, batch, 2), three(node, batch, 3);
  ASSERT_EQ(static_cast<cpu::Conv2dKernel&>(*one.kernel).algorithm(node), algorithm);
  for (OpHarness* h : {&one, &two, &three}) {
    randomize(*h, 5);
    h->forward();
    h->backward();
  }
  for (OpHarness* h : {&two, &three}) {
    EXPECT_TRUE(same_bits(one.output, h->output));
    EXPECT_TRUE(same_bits(one.d_inputs[0], h->d_inputs[0]));
    for (size_t i = 0; i < one.d_params.size(); ++i) EXPECT_TRUE(same_bits(one.d_params[i], h->d_params[i])) << i;
  }
}

}  // namespace devmap::test
