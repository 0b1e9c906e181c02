// batch_norm and add with their relu fused (ForwardArgs::relu_output) give
// the bits of the op then relu, in training and in inference (batch_norm's
// batch statistics against its running ones), on every CPU path, whatever
// the pool size. conv2d's fusion: conv2d_fused_relu_test.cpp.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kernels/cpu/add.h"
#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/relu.h"
#include "tests/kernels/conv_test_util.h"
#include "tests/kernels/cpu_paths.h"

namespace devmap::test {
namespace {

class FusedReluKernels : public EveryCpuPath {};
DEVMAP_ON_EVERY_CPU_PATH(FusedReluKernels);

template <class Kernel>
void expect_fused_equals_op_then_relu(const Node& node, int64_t batch, bool training) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(node.name + " batch " + std::to_string(batch) + ", " + std::to_string(threads) + " threads" +
                 (training ? ", training" : ", inference"));
    OpHarness plain(node, batch, threads, std::make_unique<Kernel>());
    OpHarness fused(node, batch, threads, std::make_unique<Kernel>());
    ASSERT_TRUE(fused.kernel->fuses_relu());
    for (OpHarness* h : {&plain, &fused}) {
      randomize(*h, 5);
      h->ctx.training = training;
      if (node.op() == "batch_norm")
        for (int64_t c = 0; c < h->params[3].size(); ++c)
          h->params[3].data()[c] = 0.5f + 0.25f * static_cast<float>(c % 3);
    }
    fill_uniform(span_of(fused.output), 3, -1, 1);  // whatever was there is overwritten
    plain.forward();
    fused.forward(/*relu_output=*/true);
    cpu::relu_in_place(plain.output.data(), plain.output.size());
    int64_t clamped = 0, kept = 0;
    for (int64_t i = 0; i < plain.output.size(); ++i) (fused.output.data()[i] == 0.0f ? clamped : kept) += 1;
    EXPECT_GT(clamped, 0) << "no output was clamped: the test shows nothing";
    EXPECT_GT(kept, 0) << "every output was clamped: the test shows nothing";
    EXPECT_TRUE(same_bits(plain.output, fused.output));
    if (node.op() == "batch_norm") {
      EXPECT_TRUE(same_bits(plain.params[2], fused.params[2])) << "running mean";
    }
  }
}

TEST_P(FusedReluKernels, BatchNormGivesBatchNormThenReluBits) {
  const Node planes = make_node("batch_norm", "bn", {{6, 9, 7}});
  const Node flat = make_node("batch_norm", "bn_flat", {{5}});
  for (int64_t batch : {2, 5, 19})
    for (bool training : {true, false}) {
      expect_fused_equals_op_then_relu<cpu::BatchNormKernel>(planes, batch, training);
      expect_fused_equals_op_then_relu<cpu::BatchNormKernel>(flat, batch, training);
    }
}

TEST_P(FusedReluKernels, AddGivesAddThenReluBits) {
  const Node big = make_node("add", "add", {{16, 40, 40}, {16, 40, 40}});  // several ranges on 2 threads
  const Node small = make_node("add", "add_small", {{3, 5}, {3, 5}});
  for (int64_t batch : {1, 7}) {
    expect_fused_equals_op_then_relu<cpu::AddKernel>(big, batch, true);
    expect_fused_equals_op_then_relu<cpu::AddKernel>(small, batch, false);
  }
}

}  // namespace
}  // namespace devmap::test
