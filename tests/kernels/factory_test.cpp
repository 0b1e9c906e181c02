#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/graph/op_schema.h"
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

// The registry's device_kinds, which placement asks, agree with the
// factory: every op a schema says runs on cpu devices has a kernel here,
// and no other.
TEST(CpuKernelFactory, SupportsExactlyTheOpsTheSchemasPlaceOnCpus) {
  std::vector<std::string> cpu_ops;
  for (const std::string& op : known_op_names()) {
    const OpSchema* schema = find_op(op);
    if (schema->fed_by_coordinator()) continue;
    EXPECT_EQ(CpuKernelFactory::supports(op), schema->runs_on(DeviceKind::kCpu)) << op;
    if (!schema->runs_on(DeviceKind::kCpu)) continue;
    cpu_ops.push_back(op);
    EXPECT_NE(CpuKernelFactory().make_kernel(op), nullptr) << op;
  }
  EXPECT_EQ(CpuKernelFactory::op_names(), cpu_ops);
}

TEST(CpuKernelFactory, FedOpsHaveNoKernel) {
  for (const char* op : {"input", "labels"}) {
    EXPECT_FALSE(CpuKernelFactory::supports(op));
    const std::string msg = invalid_input_message(op);
    EXPECT_NE(msg.find("fed by the executor"), std::string::npos) << msg;
  }
}

TEST(CpuKernelFactory, UnknownOpNamesTheKnownOnes) {
  std::string known;
  for (const std::string& op : CpuKernelFactory::op_names()) known += (known.empty() ? "" : ", ") + op;
  EXPECT_EQ(invalid_input_message("conv3x"), "no cpu kernel for op 'conv3x' (known: " + known + ")");
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

}  // namespace
}  // namespace devmap
