#include "coordinator/jobs/plan_job.h"

#include <iostream>

#include "coordinator/config/model.h"
#include "coordinator/plan/auto_placement.h"
#include "coordinator/plan/device_map_writer.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/memory_curve.h"
#include "coordinator/plan/placement_dot.h"
#include "coordinator/plan/plan_report.h"
#include "coordinator/plan/recompute_plan.h"
#include "coordinator/plan/round_trips_report.h"
#include "coordinator/plan/split_verdict.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/run/run_outputs.h"
#include "coordinator/run/session.h"
#include "coordinator/util/atomic_file.h"
#include "coordinator/util/command_name.h"
#include "coordinator/util/json_writer.h"

namespace devmap {

namespace {

bool has_suffix(const std::string& s, const std::string& tail) {
  return s.size() > tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// --memory-curve FILE: FILE.svg and FILE.csv beside it, or FILE.csv alone.
void write_memory_curve(const Config& config, const PlanOptions& options, const JobPlan& plan, const JobShape& shape) {
  const std::string& path = options.memory_curve_path;
  const bool svg = has_suffix(path, ".svg");  // else .csv: run_plan checked
  const MemoryCurve curve = memory_curve(config, options.run, plan, shape);
  const std::string csv_path = svg ? path.substr(0, path.size() - 4) + ".csv" : path;
  write_file_atomically(csv_path, memory_curve_csv(curve), "--memory-curve");
  if (svg)
    write_file_atomically(path,
                          memory_curve_svg(curve, config.path + ": predicted step over " + curve.device +
                                                      "'s memory (" + std::to_string(curve.points.size()) + " plans)"),
                          "--memory-curve");
  std::cerr << "devmap: memory curve of " << curve.device << " (" << curve.points.size()
            << " plans): " << (svg ? path + " and " : std::string()) << csv_path << "\n";
}

}  // namespace

int run_plan(const Config& config, const PlanOptions& options) {
  // Its outputs never replace what it reads or what other runs wrote.
  RunFiles files = plan_files(config, options.run);
  if (!options.dot_path.empty()) files.outputs.push_back({"--dot", options.dot_path});
  if (!options.emit_map_path.empty()) files.outputs.push_back({"--emit-map", options.emit_map_path});
  if (!options.memory_curve_path.empty()) {
    const std::string& path = options.memory_curve_path;
    if (!has_suffix(path, ".svg") && !has_suffix(path, ".csv"))
      throw_invalid("--memory-curve " + path +
                    ": name an .svg file (the picture; the numbers go beside it as .csv) or a .csv file");
    files.outputs.push_back({"--memory-curve", path});
    if (has_suffix(path, ".svg")) files.outputs.push_back({"--memory-curve", path.substr(0, path.size() - 4) + ".csv"});
  }
  check_run_files(files);
  const bool training = config.job != Job::kPredict;
  Graph graph = config.graph;
  std::vector<int> outputs;
  if (!training) outputs.push_back(prediction_node(graph, config.path));
  int64_t batch = options.batch;
  if (batch <= 0)
    batch = training ? config.train.batch_size
                     : (config.predict.batch > 0 ? config.predict.batch : config.train.eval_batch_size);
  const JobShape shape{training, outputs, batch, training ? config.train.eval_batch_size : 0};
  const JobPlan plan(config, options.run, std::move(graph), shape);
  const Partition& partition = plan.partition;
  const JobMemory& memory = plan.memory;
  PlanReportInfo info{config.path, training ? "train" : "predict", &partition, &plan.recomputes};
  const RoundTrips trips = find_round_trips(plan.graph, plan.program, config.placed_by_user());
  if (options.json) {
    // The planner's account and the round trips join the plan's object.
    std::string json = memory_plan_json(info, memory, plan.graph);
    json = json.substr(0, json.size() - 1) +
           ",\"round_trips\":" + round_trips_json(trips, plan.graph, memory.split.requested) +
           ",\"recomputes\":" + recomputes_json(plan.recomputes, plan.graph) +
           ",\"recompute_verdict\":" + JsonObject::quote(plan.recompute_verdict) + "}";
    if (options.auto_plan)
      json = json.substr(0, json.size() - 1) + ",\"auto_placement\":" + auto_placement_json(*options.auto_plan) + "}";
    std::cout << json << "\n";
  } else {
    if (options.auto_plan) print_auto_placement(*options.auto_plan, config, std::cout);
    for (const std::string& line : describe_recomputes(plan.recomputes, plan.graph)) std::cout << line << "\n";
    if (!plan.recompute_verdict.empty()) std::cout << plan.recompute_verdict << "\n";
    print_memory_plan(info, memory, plan.graph, std::cout);
    if (!trips.ops.empty()) std::cout << "\n";
    print_round_trips(trips, plan.graph, memory.split.requested, "", std::cout);
    if (training)
      if (const std::string verdict =
              split_verdict_text({config, options.run, plan.graph, partition, memory, std::nullopt}, std::cerr);
          !verdict.empty())
        std::cout << "\n" << verdict;
  }
  if (!options.dot_path.empty()) {
    write_placement_picture(options.dot_path, placement_dot({&config, &plan.graph, &partition, &memory, batch}));
    std::cerr << "devmap: placement picture: " << options.dot_path << "\n";
  }
  if (!options.memory_curve_path.empty()) write_memory_curve(config, options, plan, shape);
  if (!options.emit_map_path.empty()) {
    const std::string header = "The placement of " + config.path + " as `" + command_name() +
                               " plan --emit-map` wrote it:\n" + "launch this file as it is, or edit device_map.";
    write_file_atomically(options.emit_map_path,
                          config_with_device_map({&config, &plan.graph, memory.split.count,
                                                  memory.rounds ? memory.pipeline.kind : PipelineKind::kNone, header}),
                          "--emit-map");
    std::cerr << "devmap: device map: " << options.emit_map_path << "\n";
  }
  return 0;
}

}  // namespace devmap
