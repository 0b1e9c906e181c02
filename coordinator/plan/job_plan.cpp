#include "coordinator/plan/job_plan.h"

#include "coordinator/plan/step_costs.h"

namespace devmap {

std::vector<int> external_ops(const Graph& graph, const std::vector<int>& outputs) {
  std::vector<int> ext = outputs;
  for (int i = 0; i < graph.size(); ++i)
    if (graph.node(i).schema->fed_by_coordinator()) ext.push_back(i);
  return ext;
}

namespace {

Graph with_recomputes_chosen(const Config& config, const RunOptions& options, Graph graph, const JobShape& job,
                             std::vector<RecomputePick>& picks) {
  picks = plan_recomputes(config, options, graph, job.training, job.batch, external_ops(graph, job.outputs));
  return graph;
}

}  // namespace

JobPlan::JobPlan(const Config& config, const RunOptions& options, Graph graph_in, const JobShape& job)
    : graph(with_recomputes_chosen(config, options, std::move(graph_in), job, recomputes)),
      program(job.training ? build_training_program(graph) : build_inference_program(graph, job.outputs)),
      partition(partition_program(graph, program)),
      inputs(plan_inputs(config, graph, program, partition, external_ops(graph, job.outputs))),
      memory(plan_run_memory_with_costs(config, options, inputs, job.batch, job.eval_batch, job.outputs)) {}

}  // namespace devmap
