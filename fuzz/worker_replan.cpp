#include "fuzz/worker_replan.h"

#include "core/plan/partition.h"
#include "core/plan/program.h"
#include "fuzz/fuzz_check.h"
#include "transport/edge_plan.h"

namespace devmap::fuzz {

void replan_as_worker(const WorkerPlan& plan) {
  const Program program =
      plan.training ? build_training_program(plan.graph) : build_inference_program(plan.graph, plan.outputs);
  const Partition partition = partition_program(plan.graph, program);
  const DeviceProgram& mine = partition.program_for(plan.device);
  FUZZ_CHECK(mine.device == plan.device, "a worker finds its own share");
  (void)channel_edges(partition, plan.run_prefix, plan.max_batch, plan.device);
  (void)data_endpoints(partition, plan.run_dir);
}

}  // namespace devmap::fuzz
