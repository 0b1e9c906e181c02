// conv_direct_weight_gradient computes the chains
// kernels/cpu/conv2d_direct_weight_gradient.h documents, bit for bit, on
// every path that runs it and for any pool size.
#include "kernels/cpu/conv2d_direct_weight_gradient.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/exec/cpu_path.h"
#include "tests/kernels/test_util.h"

namespace devmap::test {
namespace {

using cpu::DirectWeightGradient;

struct Case {
  int64_t batch, channels, height, width, filters, kernel, stride, padding, dilation;
};

// The conv2d op's own geometry (its output size included) for the case.
ConvGeometry geometry_of(const Case& c) {
  const Node node = make_node("conv2d", "c", {{c.channels, c.height, c.width}},
                              {{"filters", c.filters},
                               {"kernel", c.kernel},
                               {"stride", c.stride},
                               {"padding", c.padding},
                               {"dilation", c.dilation},
                               {"bias", false}});
  return ConvGeometry::of(node.attrs, node.input_shapes[0], node.out_shape);
}

struct Operands {
  ConvGeometry g;
  int64_t batch;
  std::vector<float> x, dy, dw_before;
  explicit Operands(const Case& c)
      : g(geometry_of(c)),
        batch(c.batch),
        x(c.batch * g.channels * g.in_plane()),
        dy(c.batch * g.filters * g.positions()),
        dw_before(g.filters * g.patch()) {
    fill_uniform(x, 1, -1, 1);
    fill_uniform(dy, 2, -1, 1);
    fill_uniform(dw_before, 3, -1, 1);
  }
  std::vector<float> run(ThreadPool* pool, bool accumulate) const {
    std::vector<float> dw = dw_before;
    cpu::conv_direct_weight_gradient(pool, DirectWeightGradient{&g, batch, x.data(), dy.data(), dw.data(), accumulate});
    return dw;
  }
};

// The header's contract, one output at a time with std::fma.
float documented(const Operands& op, int64_t o, int64_t c, int64_t kh, int64_t kw, float before, bool accumulate) {
  const ConvGeometry& g = op.g;
  const int64_t p_n = g.positions(), padded = (p_n + 7) / 8 * 8;
  float lanes[8] = {};
  for (int64_t n = 0; n < op.batch; ++n)
    for (int64_t p = 0; p < padded; ++p) {
      float d = 0.0f, x = 0.0f;
      if (p < p_n) {
        d = op.dy[(n * g.filters + o) * p_n + p];
        const int64_t ih = p / g.out_w * g.stride - g.padding + kh * g.dilation;
        const int64_t iw = p % g.out_w * g.stride - g.padding + kw * g.dilation;
        if (ih >= 0 && ih < g.height && iw >= 0 && iw < g.width)
          x = op.x[((n * g.channels + c) * g.height + ih) * g.width + iw];
      }
      lanes[p % 8] = std::fma(d, x, lanes[p % 8]);
    }
  float h[4];
  for (int l = 0; l < 4; ++l) h[l] = lanes[l] + lanes[l + 4];
  const float s = (h[0] + h[2]) + (h[1] + h[3]);
  return accumulate ? before + s : s;
}

bool fma_path_here() {
  return cpu_supports(CpuPath::kAvx2);
}

const Case kCases[] = {
    {7, 1, 28, 28, 32, 5, 1, 2, 1},  // the reference CNN's conv1; 7 samples cross a group of columns
    {3, 3, 9, 11, 7, 3, 2, 1, 1},    // RGB, stride 2, filters not a multiple of 4, positions not of 8
    {2, 2, 10, 10, 5, 3, 1, 2, 2},   // dilation 2
    {2, 1, 5, 5, 1, 5, 1, 0, 1},     // one position, one filter
    {1, 7, 6, 6, 10, 1, 1, 0, 1},    // 1x1, seven channels
};

TEST(ConvDirectWeightGradient, IsTheDocumentedChainOfFusedMultiplyAdds) {
  if (!fma_path_here()) GTEST_SKIP() << "no AVX2 with FMA on this CPU: the direct weight gradient does not run";
  ScopedCpuPath path(CpuPath::kAvx2);
  for (const Case& c : kCases)
    for (bool accumulate : {false, true}) {
      const Operands op(c);
      ASSERT_TRUE(cpu::conv_direct_weight_gradient_runs(op.g));
      const std::vector<float> dw = op.run(nullptr, accumulate);
      const ConvGeometry& g = op.g;
      int64_t wrong = 0;
      for (int64_t o = 0; o < g.filters; ++o)
        for (int64_t ch = 0; ch < g.channels; ++ch)
          for (int64_t kh = 0; kh < g.kernel; ++kh)
            for (int64_t kw = 0; kw < g.kernel; ++kw) {
              const int64_t i = ((o * g.channels + ch) * g.kernel + kh) * g.kernel + kw;
              const float want = documented(op, o, ch, kh, kw, op.dw_before[i], accumulate);
              if (std::memcmp(&want, &dw[i], sizeof want) != 0 && ++wrong <= 3)
                ADD_FAILURE() << "batch " << c.batch << " channels " << c.channels << " filters " << c.filters
                              << " kernel " << c.kernel << " stride " << c.stride << " dilation " << c.dilation
                              << " accumulate " << accumulate << ": dW[" << o << "," << ch << "," << kh << "," << kw
                              << "] is " << dw[i] << ", the documented chain gives " << want;
            }
      EXPECT_EQ(wrong, 0);
    }
}

TEST(ConvDirectWeightGradient, SameBitsForAnyPoolSizeAndOnEveryFmaPath) {
  if (!fma_path_here()) GTEST_SKIP() << "no AVX2 with FMA on this CPU: the direct weight gradient does not run";
  for (const Case& c : kCases) {
    const Operands op(c);
    std::vector<float> one;
    {
      ScopedCpuPath path(CpuPath::kAvx2);
      one = op.run(nullptr, true);
    }
    for (int threads : {2, 3}) {
      ThreadPool pool(threads);
      ScopedCpuPath path(CpuPath::kAvx2);
      EXPECT_TRUE(op.run(&pool, true) == one) << threads << " threads, " << c.filters << " filters";
    }
    if (cpu_supports(CpuPath::kAvx512)) {
      ScopedCpuPath path(CpuPath::kAvx512);
      EXPECT_TRUE(op.run(nullptr, true) == one) << "avx512 path, " << c.filters << " filters";
    }
  }
}

TEST(ConvDirectWeightGradient, RunsWhereItShould) {
  ConvGeometry g = geometry_of({1, 1, 28, 28, 32, 5, 1, 2, 1});
  {
    ScopedCpuPath path(CpuPath::kBaseline);
    EXPECT_FALSE(cpu::conv_direct_weight_gradient_runs(g)) << "the baseline path has no FMA";
  }
  if (!fma_path_here()) return;
  ScopedCpuPath path(CpuPath::kAvx2);
  EXPECT_TRUE(cpu::conv_direct_weight_gradient_runs(g));
  g.channels = cpu::kDirectWeightGradientMaxChannels + 1;
  EXPECT_FALSE(cpu::conv_direct_weight_gradient_runs(g)) << "oneDNN's own kernel takes 8 channels and more";
  g.channels = 2;
  g.groups = 2;
  EXPECT_FALSE(cpu::conv_direct_weight_gradient_runs(g));
}

}  // namespace
}  // namespace devmap::test
