#include "coordinator/job_memory.h"

#include <algorithm>

#include "core/error.h"
#include "transport/edge_plan.h"

namespace devmap {

PlanInputs plan_inputs(const Config& config, const Graph& graph, const Program& program, const Partition& partition,
                       const std::vector<int>& external) {
  PlanInputs in;
  in.graph = &graph;
  in.program = &program;
  in.partition = &partition;
  for (const std::string& name : partition.devices) {
    const DeviceSpec* d = config.find_device(name);
    PlanDevice pd;
    pd.name = name;
    pd.limit = d && d->memory_limit > 0 ? static_cast<uint64_t>(d->memory_limit) : 0;
    pd.host_memory = !d || d->kind != DeviceKind::kGpu;
    in.devices.push_back(std::move(pd));
  }
  in.optimizer_states = program.loss_node >= 0 ? optimizer_state_count(config.train.optimizer.kind) : 0;
  in.external = external;
  in.edge_slots = kEdgeSlots;
  return in;
}

JobMemory plan_job_memory(const PlanInputs& inputs, int64_t batch, int64_t eval_batch, const std::string& config_path) {
  try {
    return plan_job_memory(inputs, batch, eval_batch);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    throw_invalid(config_path + ": " + e.what());
  }
}

JobMemory plan_job_memory(const PlanInputs& inputs, int64_t batch, int64_t eval_batch) {
  JobMemory m;
  m.split = split_batch(inputs, batch);
  if (!m.split.decision.empty()) m.decisions.push_back(m.split.decision);
  // Workers allocate for what the job runs: its (micro-)batch. Evaluation
  // reuses those buffers, so eval_batch is a maximum: a larger one runs as
  // batches of the training micro-batch.
  m.reserve = m.split.micro;
  if (eval_batch > 0) m.eval_batch = std::min(eval_batch, m.reserve);
  m.plan = m.split.plan;
  return m;
}

}  // namespace devmap
