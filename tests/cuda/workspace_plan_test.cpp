// The workspace every CUDA kernel needs against what its op schema plans
// (OpSchema::workspace_bytes: the figure the memory plan counts and the
// executor allocates; Executor::reserve() refuses a kernel that needs
// more). The CUDA kernel factory makes kernels without touching a GPU, and
// workspace_bytes() asks none, so this runs everywhere: every op of every
// shipped config, at a range of batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "coordinator/config/loader.h"
#include "tests/cuda/gpu_test_util.h"

namespace devmap::test {
namespace {

std::vector<std::string> shipped_configs() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(config_dir()))
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(CudaWorkspace, EveryKernelOfEveryShippedConfigNeedsAtMostItsSchemasFigure) {
  cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));
  const std::vector<std::string> configs = shipped_configs();
  ASSERT_GE(configs.size(), 7u) << config_dir();
  std::set<std::string> ops;
  int checks = 0;
  for (const std::string& path : configs) {
    const Config config = load_config(path);
    const Graph& g = config.graph;
    for (int i = 0; i < g.size(); ++i) {
      const Node& node = g.node(i);
      if (node.schema->fed_by_coordinator()) continue;  // inputs: the coordinator feeds them, no kernel
      const std::unique_ptr<OpKernel> kernel = factory.make_kernel(node.op());
      ops.insert(node.op());
      for (int64_t batch : {1, 2, 3, 7, 8, 9, 16, 63, 64, 100, 256, 1000, 4096}) {
        const uint64_t need = kernel->workspace_bytes(node, batch), planned = node.workspace_bytes(batch);
        EXPECT_LE(need, planned) << path << ": " << node.name << " (" << node.op() << ") at a batch of " << batch
                                 << ": its CUDA kernel needs " << need << " bytes of workspace, its op schema plans "
                                 << planned;
        ++checks;
      }
    }
  }
  // The configs hold the ops whose workspace matters on a GPU.
  for (const char* op : {"conv2d", "dense", "softmax_cross_entropy", "accuracy"})
    EXPECT_EQ(ops.count(op), 1u) << op << " is in no shipped config";
  EXPECT_GT(checks, 0);
}

// The loss and the metric's kernels use a per-sample scratch: planned, and
// growing with the batch.
TEST(CudaWorkspace, LabelOpsPlanTheirScratch) {
  cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));
  for (const char* op : {"softmax_cross_entropy", "accuracy"}) {
    const Node n = make_node(op, "l", {{10}, {1}});
    for (int64_t batch : {1, 64, 1000}) {
      EXPECT_EQ(factory.make_kernel(op)->workspace_bytes(n, batch), n.workspace_bytes(batch)) << op << " " << batch;
      EXPECT_GE(n.workspace_bytes(batch), static_cast<uint64_t>(batch) * sizeof(double)) << op << " " << batch;
    }
  }
}

// layer_norm's backward and mse_loss's forward keep per-sample sums: the
// kernel asks for exactly what the schema plans, which grows with the batch.
TEST(CudaWorkspace, LayerNormAndMseLossPlanTheirScratch) {
  cuda::CudaKernelFactory factory(std::make_shared<cuda::CudaDevice>(0));
  const Node ln = make_node("layer_norm", "ln", {{4, 5}});
  const Node mse = make_node("mse_loss", "loss", {{3}, {3}});
  for (const Node* n : {&ln, &mse}) {
    for (int64_t batch : {1, 64, 1000}) {
      EXPECT_EQ(factory.make_kernel(n->op())->workspace_bytes(*n, batch), n->workspace_bytes(batch))
          << n->op() << " " << batch;
      EXPECT_GE(n->workspace_bytes(batch), static_cast<uint64_t>(batch) * sizeof(double)) << n->op() << " " << batch;
    }
  }
}

}  // namespace
}  // namespace devmap::test
