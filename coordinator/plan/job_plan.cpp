#include "coordinator/plan/job_plan.h"

#include <cstdio>

#include "coordinator/plan/step_costs.h"

namespace devmap {

std::vector<int> external_ops(const Graph& graph, const std::vector<int>& outputs) {
  std::vector<int> ext = outputs;
  for (int i = 0; i < graph.size(); ++i)
    if (graph.node(i).schema->fed_by_coordinator()) ext.push_back(i);
  return ext;
}

namespace {

// Whether the step still needs micro-batches with `graph`'s recompute flags.
bool needs_micro_batches(const Config& config, const Graph& graph, const JobShape& job) {
  const Program program = build_training_program(graph);
  const Partition partition = partition_program(graph, program);
  return !plan_memory(plan_inputs(config, graph, program, partition, external_ops(graph, job.outputs)), job.batch)
              .fits();
}

std::string milliseconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  return buf;
}

// The recomputes the plan chooses (coordinator/plan/recompute_plan.h). When
// they cannot spare the step its micro-batches, the plan with them and
// micro-batches and the plan with micro-batches alone (only the pinned
// recomputes) are both built and the one with the smaller predicted step
// time is taken; `verdict` says which and why.
Graph with_recomputes_chosen(const Config& config, const RunOptions& options, Graph graph, const JobShape& job,
                             std::vector<RecomputePick>& picks, std::string& verdict) {
  const Graph given = graph;
  picks = plan_recomputes(config, options, graph, job.training, job.batch, external_ops(graph, job.outputs));
  bool chosen = false;
  for (const RecomputePick& p : picks) chosen = chosen || !p.pinned;
  if (!chosen || !needs_micro_batches(config, graph, job)) return graph;
  // Both plans, with the choice fixed: the picks pinned, nothing else auto.
  Config fixed = config;
  fixed.train.recompute_auto = false;
  Graph pinned = given;
  for (const RecomputePick& p : picks) {
    pinned.node(p.node).recompute = Node::Recompute::kAlways;
    for (int w : p.with) pinned.node(w).recompute = Node::Recompute::kAlways;
  }
  const JobPlan with(fixed, options, pinned, job);
  const JobPlan without(fixed, options, given, job);
  const RunPrediction with_p = predict_run_step(fixed, options, with.graph, with.partition, with.memory);
  const RunPrediction without_p = predict_run_step(fixed, options, without.graph, without.partition, without.memory);
  const double with_s = with_p.step_seconds, without_s = without_p.step_seconds;
  const bool calibrated = with_p.estimated.empty() && without_p.estimated.empty();
  const std::string figures = milliseconds(without_s) + " a step predicted with micro-batches alone (" +
                              split_phrase(without.memory.split.requested, without.memory.split.micro) + "), " +
                              milliseconds(with_s) + " with recomputation and " +
                              split_phrase(with.memory.split.requested, with.memory.split.micro) +
                              (calibrated ? " (calibrated)" : " (estimated: some ops are not calibrated)");
  if (with_s <= without_s) {
    verdict = "recomputation does not spare the step its micro-batches; it keeps them fewer: " + figures;
    return graph;
  }
  verdict =
      "recomputation does not spare the step its micro-batches, so it recomputes nothing the config leaves "
      "to it: " +
      figures;
  picks = without.recomputes;
  return without.graph;
}

}  // namespace

JobPlan::JobPlan(const Config& config, const RunOptions& options, Graph graph_in, const JobShape& job)
    : graph(with_recomputes_chosen(config, options, std::move(graph_in), job, recomputes, recompute_verdict)),
      program(job.training ? build_training_program(graph) : build_inference_program(graph, job.outputs)),
      partition(partition_program(graph, program)),
      inputs(plan_inputs(config, graph, program, partition, external_ops(graph, job.outputs))),
      memory(plan_run_memory_with_costs(config, options, inputs, job.batch, job.eval_batch, job.outputs)) {}

}  // namespace devmap
