#include "coordinator/plan/job_memory.h"

#include <algorithm>
#include <cstdio>

#include "coordinator/data/dataset.h"
#include "coordinator/data/image_input.h"
#include "coordinator/util/command_name.h"
#include "coordinator/util/json_writer.h"
#include "core/base/error.h"
#include "core/exec/worker_plan.h"
#include "transport/edge_plan.h"

namespace devmap {

void attach_coordinator_memory(const Config& config, const Graph& graph, bool training, const std::vector<int>& outputs,
                               JobMemory& memory) {
  CoordinatorMemory& m = memory.coordinator;
  m.limit = static_cast<uint64_t>(config.coordinator_memory_limit);
  if (training) {
    m.datasets = dataset_bytes("train", config.data.train_images, config.data.train_limit) +
                 dataset_bytes("test", config.data.test_images, config.data.test_limit);
  } else if (const int image = graph.find_role(OpRole::kImageInput); image >= 0) {
    m.input_reader = PredictionInput::buffer_bytes(graph.node(image).out_shape, memory.reserve);
  }
  m.input_slots = InputLayout::for_graph(graph, memory.reserve, memory.input_slots()).total_bytes();
  if (!outputs.empty())
    m.output_slots = InputLayout::for_nodes(graph, outputs, memory.reserve, memory.input_slots()).total_bytes();
  check_coordinator_memory(m, config.path);
}

void attach_shared_memory(const Config& config, const Partition& partition, JobMemory& memory) {
  SharedMemoryPlan& s = memory.shared;
  s.input_slots = memory.coordinator.input_slots;
  s.output_slots = memory.coordinator.output_slots;
  s.edge_rings =
      edge_ring_bytes(partition, memory.reserve, memory.rounds ? memory.pipeline.edge_slots : std::vector<int>{});
  s.limit = static_cast<uint64_t>(config.shared_memory_limit);
}

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
    pd.offload = d && d->offload;
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

JobMemory plan_pipelined_memory(const PlanInputs& inputs, int64_t batch, int64_t eval_batch,
                                const PipelineRequest& request, const std::string& config_path) {
  const bool training = inputs.program->loss_node >= 0;
  // One sample must fit with no pipeline at all, or nothing will.
  (void)plan_job_memory(inputs, 1, 0, config_path);
  JobMemory m;
  m.rounds = true;
  for (int64_t count = std::min<int64_t>(request.micro_batches, batch);; ++count) {
    const int64_t micro = (batch + count - 1) / count;
    PipelinePlan pipeline;
    try {
      pipeline = plan_pipeline(*inputs.graph, *inputs.partition, training, request.kind, static_cast<int>(count), 2);
    } catch (const Error& e) {
      throw_invalid(config_path + ": " + e.what());
    }
    PlanInputs in = inputs;
    in.ring_slots = pipeline.edge_slots;
    for (PlanDevice& d : in.devices) d.sets = pipeline.sets_of(*inputs.partition, d.name);
    MemoryPlan plan = plan_memory(in, micro);
    if (plan.fits() || micro == 1 || count >= kMaxMicroBatches) {
      // Lock-step rounds past the rounds' cap: lock-step micro-batches (the
      // same bits), which take any count.
      if (!plan.fits() && request.kind == PipelineKind::kNone) {
        JobMemory lockstep = plan_job_memory(inputs, batch, eval_batch, config_path);
        lockstep.decisions.push_back("schedule none: more micro-batches than a round takes (" +
                                     std::to_string(kMaxMicroBatches) + "), so lock-step micro-batches");
        return lockstep;
      }
      if (!plan.fits())
        throw_invalid(config_path + ": a pipelined step does not fit the devices' memory_limit even as " +
                      std::to_string(count) + " micro-batches of " + std::to_string(micro) +
                      ": raise a memory_limit or use train.pipeline.schedule none");
      m.split.requested = batch;
      m.split.micro = micro;
      m.split.count = (batch + micro - 1) / micro;
      m.split.plan = plan;
      if (count > request.micro_batches)
        m.decisions.push_back("a pipelined step of " + std::to_string(batch) + " does not fit as " +
                              std::to_string(request.micro_batches) + " micro-batches; running " +
                              split_phrase(batch, micro));
      m.reserve = micro;
      if (eval_batch > 0) m.eval_batch = std::min(eval_batch, micro);
      m.plan = std::move(plan);
      m.pipeline = std::move(pipeline);
      return m;
    }
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

namespace {

// micro_batches auto: the budget's fewest micro-batches, then the count
// whose predicted step is best (choose_micro_batches).
JobMemory plan_auto_memory(const Config& config, const PlanInputs& inputs, int64_t batch, int64_t eval_batch,
                           const StepCosts& costs) {
  const PipelineKind kind = config.train.pipeline;
  const int least = static_cast<int>(
      plan_pipelined_memory(inputs, batch, eval_batch, PipelineRequest{kind, 1}, config.path).split.count);
  const bool training = inputs.program->loss_node >= 0;
  const MicroBatchChoice choice = choose_micro_batches(
      *inputs.partition, training, kind, batch, micro_batch_candidates(batch, least, kAutoMaxMicroBatches), costs);
  JobMemory m = choice.count == 1 ? plan_job_memory(inputs, batch, eval_batch, config.path)
                                  : plan_pipelined_memory(inputs, batch, eval_batch,
                                                          PipelineRequest{kind, choice.count}, config.path);
  m.auto_choice = choice;
  return m;
}

}  // namespace

JobMemory plan_run_memory(const Config& config, const PlanInputs& inputs, int64_t batch, int64_t eval_batch,
                          const std::vector<int>& outputs, const StepCosts* costs) {
  if (config.train.auto_micro_batches() && !costs)
    throw_runtime("internal: train.pipeline.micro_batches auto needs step costs");
  JobMemory m =
      config.train.auto_micro_batches() ? plan_auto_memory(config, inputs, batch, eval_batch, *costs)
      : config.train.micro_batches > 1
          ? plan_pipelined_memory(inputs, batch, eval_batch,
                                  PipelineRequest{config.train.pipeline, static_cast<int>(config.train.micro_batches)},
                                  config.path)
          : plan_job_memory(inputs, batch, eval_batch, config.path);
  const bool training = inputs.program->loss_node >= 0;
  if (training)
    check_batch_statistics(*inputs.graph, m.split.requested / std::max<int64_t>(m.split.count, 1), config.path,
                           "micro-batches");
  if (training) m.micro_batch_statistics = micro_batch_statistics(*inputs.graph, m.split);
  if (!m.micro_batch_statistics.empty() && config.train.refuse_micro_batch_statistics)
    throw_invalid(config.path + ": " + m.micro_batch_statistics.front() +
                  ", and train.micro_batch_statistics is refuse: " +
                  "raise the devices' memory_limit or lower train.batch_size so that a step runs whole, "
                  "set train.pipeline.micro_batches to 1, or set train.micro_batch_statistics: allow");
  attach_coordinator_memory(config, *inputs.graph, training, outputs, m);
  attach_shared_memory(config, *inputs.partition, m);
  return m;
}

int64_t smallest_trainable_batch(const Graph& graph, const Node** which) {
  int64_t smallest = 1;
  for (const Node& n : graph.nodes()) {
    if (!n.schema->couples_samples || n.input_shapes.empty()) continue;
    const Shape& s = n.input_shapes[0];  // per sample: [C] or [C, H, W]
    const int64_t per_channel = s.rank() == 0 || s.dims()[0] == 0 ? 1 : s.numel() / s.dims()[0];
    const int64_t need = (2 + per_channel - 1) / per_channel;
    if (need > smallest) {
      smallest = need;
      if (which != nullptr) *which = &n;
    }
  }
  return smallest;
}

void check_batch_statistics(const Graph& graph, int64_t samples, const std::string& config_path,
                            const std::string& what) {
  const Node* op = nullptr;
  const int64_t need = smallest_trainable_batch(graph, &op);
  if (samples >= need || op == nullptr) return;
  throw_invalid(config_path + ": " + op->op() + " " + op->name + " computes its statistics over each batch's " +
                op->input_shapes[0].to_string() + " features, and " + what + " of " + std::to_string(samples) +
                (samples == 1 ? " sample give it one value" : " samples give it too few values") +
                " per channel (it needs " + std::to_string(need) +
                " samples): raise train.batch_size, lower "
                "train.pipeline.micro_batches, or raise the devices' memory_limit");
}

std::vector<std::string> micro_batch_statistics(const Graph& graph, const BatchSplit& split) {
  std::vector<std::string> lines;
  if (split.count <= 1) return lines;
  // Uneven micro-batches (16 as 6, 5, 5) are named by their range.
  const int64_t smallest = split.requested / split.count;
  const std::string sizes =
      (smallest == split.micro ? "" : std::to_string(smallest) + " to ") + std::to_string(split.micro);
  for (const Node& n : graph.nodes())
    if (n.schema->couples_samples)
      lines.push_back(n.op() + " " + n.name + " computes its statistics over micro-batches of " + sizes +
                      ", not the step's " + std::to_string(split.requested));
  return lines;
}

std::string micro_batch_statistics_json(const JobMemory& memory) {
  std::string out = "[";
  for (const std::string& line : memory.micro_batch_statistics)
    out += (out.size() > 1 ? "," : "") + JsonObject::quote(line);
  return out + "]";
}

std::vector<std::string> describe_auto_choice(const JobMemory& memory, const std::string& config_path) {
  if (!memory.auto_choice) return {};
  const MicroBatchChoice& c = *memory.auto_choice;
  std::string line = "micro_batches auto: " + std::to_string(c.count) + " (predicted step";
  for (size_t i = 0; i < c.predicted.size(); ++i) {
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", c.predicted[i].second * 1e3);
    line += std::string(i ? ", " : " ") + std::to_string(c.predicted[i].first) + ": " + ms + " ms" +
            (c.predicted[i].first == c.count ? "*" : "");
  }
  std::vector<std::string> out{line + "; the fewest within 5% of the best)"};
  if (!memory.estimated.empty()) {
    std::string names;
    for (size_t i = 0; i < memory.estimated.size() && i < 4; ++i) names += (i ? ", " : "") + memory.estimated[i];
    if (memory.estimated.size() > 4) names += " and " + std::to_string(memory.estimated.size() - 4) + " more";
    out.push_back("predicted from estimates, not measurements, for " + names + ": run `" + command_name() +
                  " calibrate " + config_path + "`");
  }
  return out;
}

std::string auto_choice_json(const JobMemory& memory) {
  if (!memory.auto_choice) return "null";
  JsonObject j;
  j.add("chosen", static_cast<int64_t>(memory.auto_choice->count));
  JsonObject predicted;
  for (const auto& [count, seconds] : memory.auto_choice->predicted)
    predicted.add(std::to_string(count), seconds * 1e3);
  j.add_raw("predicted_ms", predicted.str());
  std::string estimated = "[";
  for (const std::string& e : memory.estimated) estimated += (estimated.size() > 1 ? "," : "") + JsonObject::quote(e);
  j.add_raw("estimated", estimated + "]");
  return j.str();
}

}  // namespace devmap
