#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/op_schema.h"
#include "kernels/cpu/cpu_kernel_factory.h"

namespace devmap {
namespace {

std::string invalid_input_message(const std::string& op) {
  try {
    CpuKernelFactory().make_kernel(op);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    return e.what();
  }
  ADD_FAILURE() << "make_kernel(" << op << ") did not throw";
  return "";
}

TEST(CpuKernelFactory, HasAKernelForEveryComputingOp) {
  std::vector<std::string> computing;
  for (const std::string& op : known_op_names()) {
    const OpRole role = find_op(op)->role;
    if (role == OpRole::kImageInput || role == OpRole::kLabelInput) continue;
    computing.push_back(op);
    EXPECT_NE(CpuKernelFactory().make_kernel(op), nullptr) << op;
    EXPECT_TRUE(CpuKernelFactory::supports(op)) << op;
  }
  EXPECT_EQ(CpuKernelFactory::op_names(), computing);
}

TEST(CpuKernelFactory, FedOpsHaveNoKernel) {
  for (const char* op : {"input", "labels"}) {
    EXPECT_FALSE(CpuKernelFactory::supports(op));
    const std::string msg = invalid_input_message(op);
    EXPECT_NE(msg.find("fed by the executor"), std::string::npos) << msg;
  }
}

TEST(CpuKernelFactory, UnknownOpNamesTheKnownOnes) {
  const std::string msg = invalid_input_message("conv3x");
  EXPECT_EQ(
      msg,
      "no cpu kernel for op 'conv3x' (known: accuracy, add, argmax, avg_pool2d, concat, conv2d, dense, dropout, "
      "flatten, global_avg_pool, max_pool2d, relu, reshape, softmax_cross_entropy)");
}

TEST(CpuKernelFactory, MakesEveryOptimizer) {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kSgd;
  EXPECT_EQ(CpuKernelFactory().make_optimizer(c)->state_count(), 0);
  c.kind = OptimizerConfig::Kind::kMomentum;
  EXPECT_EQ(CpuKernelFactory().make_optimizer(c)->state_count(), 1);
  c.kind = OptimizerConfig::Kind::kAdam;
  EXPECT_EQ(CpuKernelFactory().make_optimizer(c)->state_count(), 2);
}

TEST(CpuKernelFactory, SetCpuThreads) {
  set_cpu_threads(1);
  set_cpu_threads(0);  // clamped to 1
  set_cpu_threads(2);
}

}  // namespace
}  // namespace devmap
