// What a CUDA conv2d asks ConvPlans for (kernels/cuda/conv_plan.h,
// conv_request): its algorithms are chosen within its own planned
// workspace, the op schema's figure, never within the device's shared
// workspace, which depends on the other ops of the device. The kernel
// calls the same conv_request, so this checks without a GPU what a GPU
// would be asked.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/error.h"
#include "kernels/cuda/conv_plan.h"
#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

Node conv(int64_t channels, int64_t side, int64_t filters, int64_t kernel) {
  return make_node("conv2d", "c", {{channels, side, side}},
                   {{"filters", filters}, {"kernel", kernel}, {"padding", kernel / 2}});
}

KernelContext with_workspace(size_t bytes) {
  static float sentinel = 0.0f;  // never read: only the size matters
  KernelContext ctx;
  ctx.workspace = &sentinel;
  ctx.workspace_bytes = bytes;
  return ctx;
}

TEST(ConvRequest, IsTheConvsOwnFigureWhateverTheDevicesWorkspace) {
  for (const Node& n : {conv(1, 28, 32, 5), conv(32, 14, 64, 5), conv(3, 8, 4, 3), conv(16, 7, 16, 1)})
    for (int64_t batch : {1, 8, 64, 1000}) {
      const size_t own = std::min<uint64_t>(n.workspace_bytes(batch), cuda::ConvPlans::kMaxWorkspaceBytes);
      const cuda::ConvRequest alone = cuda::conv_request(n, batch, with_workspace(own));
      // The same conv on a device whose largest op plans 1 GiB (a big dense
      // or conv beside it): the same request, hence the same algorithms.
      const cuda::ConvRequest shared = cuda::conv_request(n, batch, with_workspace(size_t{1} << 30));
      EXPECT_EQ(alone.workspace_limit, own) << batch;
      EXPECT_EQ(shared.workspace_limit, own) << batch;
      EXPECT_FALSE(alone.shape < shared.shape || shared.shape < alone.shape);
      EXPECT_EQ(alone.shape.batch, batch);
      EXPECT_EQ(cuda::conv_request(n, batch).workspace_limit, own);
    }
}

TEST(ConvRequest, KernelReportsTheFigureItChoosesWithinWithoutAGpu) {
  cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));
  auto k = factory.make_kernel("conv2d");
  const Node n = conv(32, 14, 64, 5);
  for (int64_t batch : {1, 64})
    EXPECT_EQ(k->workspace_bytes(n, batch), cuda::conv_request(n, batch).workspace_limit) << batch;
}

TEST(ConvRequest, CapsHugeFigures) {
  const Node n = conv(512, 64, 512, 5);  // the CPU's im2col scratch is far above the cap
  ASSERT_GT(n.workspace_bytes(8), cuda::ConvPlans::kMaxWorkspaceBytes);
  EXPECT_EQ(cuda::conv_request(n, 8).workspace_limit, cuda::ConvPlans::kMaxWorkspaceBytes);
}

TEST(ConvRequest, LessWorkspaceThanPlannedIsAnExecutorBug) {
  const Node n = conv(32, 14, 64, 5);
  const size_t own = cuda::conv_request(n, 16).workspace_limit;
  ASSERT_GT(own, 0u);
  try {
    cuda::conv_request(n, 16, with_workspace(own - 1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("smaller than the " + std::to_string(own) + " bytes its op schema plans"),
              std::string::npos)
        << e.what();
  }
  KernelContext none;
  EXPECT_THROW(cuda::conv_request(n, 16, none), Error);
}

}  // namespace
}  // namespace devmap::test
