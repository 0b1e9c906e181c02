// Target config_plan: the coordinator's path from a config's bytes to the
// plans it sends its workers, with no process, segment or file involved.
#include <sstream>
#include <string>

#include "coordinator/config/loader.h"
#include "coordinator/config/model.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/job_plan.h"
#include "coordinator/run/session.h"
#include "core/base/error.h"
#include "core/plan/partition.h"
#include "core/plan/program.h"
#include "fuzz/config_planner.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_targets.h"
#include "fuzz/worker_replan.h"
#include "transport/edge_plan.h"

namespace devmap::fuzz {

// Mirrors Session's constructor (coordinator/run/session.cpp) and run_plan
// (coordinator/jobs/plan_job.cpp) up to the point where they create segments
// and processes.
std::vector<WorkerPlan> plan_workers(const Config& config) {
  const bool training = config.job != Job::kPredict;
  Graph graph = config.graph;
  std::vector<int> outputs;
  if (!training) outputs.push_back(prediction_node(graph, config.path));
  const int64_t batch = training ? config.train.batch_size
                                 : (config.predict.batch > 0 ? config.predict.batch : config.train.eval_batch_size);
  (void)graph.param_count();
  (void)graph.training_flops(batch);

  const Program program = training ? build_training_program(graph) : build_inference_program(graph, outputs);
  const Partition partition = partition_program(graph, program);
  FUZZ_CHECK(!partition.devices.empty(), "a program runs somewhere");
  const PlanInputs inputs = plan_inputs(config, graph, program, partition, external_ops(graph, outputs));
  const JobMemory memory = plan_job_memory(inputs, batch, training ? config.train.eval_batch_size : 0, config.path);
  const int64_t max_batch = memory.reserve;
  FUZZ_CHECK(max_batch >= 1 && memory.split.micro >= 1 && memory.split.micro <= batch, "a batch that fits");
  const InputLayout layout = InputLayout::for_graph(graph, max_batch, 2);
  const InputLayout output_layout = InputLayout::for_nodes(graph, outputs, max_batch, 2);
  (void)layout.total_bytes();
  (void)output_layout.total_bytes();
  const std::string prefix = "devmap-fuzz-";
  (void)channel_edges(partition, prefix, max_batch);
  std::ostringstream log;
  log_placement(config, partition, batch, log);

  std::vector<WorkerPlan> plans;
  for (const std::string& device : partition.devices) {
    const DeviceSpec* spec = config.find_device(device);
    FUZZ_CHECK(spec != nullptr, "every placed device is declared");
    WorkerPlan p;
    p.device = device;
    p.threads = spec->threads;
    p.affinity = spec->affinity;
    p.seed = config.train.seed;
    p.training = training;
    p.optimizer = config.train.optimizer;
    p.max_batch = max_batch;
    p.memory_limit = spec->memory_limit > 0 ? static_cast<uint64_t>(spec->memory_limit) : 0;
    p.graph = graph;
    p.outputs = outputs;
    if (!outputs.empty()) {
      p.output_segment = prefix + "output";
      p.output_layout = output_layout;
    }
    p.input_segment = prefix + "input";
    p.layout = layout;
    p.run_prefix = prefix;
    p.run_dir = "/tmp/devmap-fuzz";
    plans.push_back(std::move(p));
  }
  return plans;
}

void run_config_plan(std::string_view data) {
  std::vector<WorkerPlan> plans;
  try {
    plans = plan_workers(load_config_text(std::string(data), "fuzz.yaml"));
  } catch (const Error&) {
    return;  // bad input, rejected with a message: the expected outcome
  }
  // A plan the coordinator accepted must not be refused by its worker.
  for (const WorkerPlan& p : plans) {
    try {
      const std::string bytes = encode_worker_plan(p);
      const WorkerPlan decoded = decode_worker_plan(bytes);
      FUZZ_CHECK(encode_worker_plan(decoded) == bytes, "a worker plan survives encode -> decode");
      replan_as_worker(decoded);
    } catch (const Error& e) {
      FUZZ_CHECK(false, e.what());
    }
  }
}

}  // namespace devmap::fuzz
