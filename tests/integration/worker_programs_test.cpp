// `coordinator CONFIG --worker-programs`: the worker programs the config's
// devices run, which scripts/launch.sh builds before the run (worker_gpu,
// a third of a full build, only for a config that declares a GPU).
#include <gtest/gtest.h>

#include "tests/support/run_process.h"

namespace devmap::testing {
namespace {

const std::string kConfigs = std::string(DEVMAP_SOURCE_DIR) + "/configs/";

ProcessResult worker_programs(const std::string& config, std::vector<std::string> extra = {}) {
  TempDir dir;
  std::vector<std::string> args = {DEVMAP_COORDINATOR_BIN, kConfigs + config};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("--worker-programs");
  return run_process(args, dir.path(), {});
}

TEST(WorkerPrograms, ACpuConfigNeedsOnlyWorkerCpu) {
  const ProcessResult r = worker_programs("fashion_mnist_cnn_split.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "worker_cpu\n");
}

TEST(WorkerPrograms, AGpuConfigNeedsWorkerGpu) {
  const ProcessResult r = worker_programs("fashion_mnist_cnn_gpu.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "worker_gpu\n");
}

TEST(WorkerPrograms, ADeviceAddedBySetCounts) {
  const ProcessResult r = worker_programs("fashion_mnist_cnn.yaml", {"--set", "devices.gpu:0.threads=1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "worker_cpu\nworker_gpu\n");
}

TEST(WorkerPrograms, AConfigThatDoesNotLoadIsBadInput) {
  const ProcessResult r = worker_programs("fashion_mnist_cnn.yaml", {"--set", "devices.tpu:0.threads=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace devmap::testing
