#include "coordinator/plan/split_verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>

#include "coordinator/plan/job_plan.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/util/command_name.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "core/base/format_number.h"
#include "core/plan/program.h"

namespace devmap {
namespace {

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}

// "1.31x slower", "1.12x faster", "as fast" (within 2%): `seconds`
// against `other`.
std::string against(double seconds, double other) {
  const double r = seconds / other;
  char buf[32];
  if (r > 1.02) {
    std::snprintf(buf, sizeof buf, "%.2fx slower", r);
    return buf;
  }
  if (r < 1 / 1.02) {
    std::snprintf(buf, sizeof buf, "%.2fx faster", 1 / r);
    return buf;
  }
  return "as fast";
}

// against(), followed by "than" or "as".
std::string against_than(double seconds, double other) {
  const std::string a = against(seconds, other);
  return a + (a == "as fast" ? " as" : " than");
}

std::string source(bool calibrated) {
  return calibrated ? "calibrated" : "estimated";
}

std::string threads_phrase(int threads) {
  return std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

std::string alone_phrase(const SingleDevice& a) {
  return a.device + " alone" + (a.gpu ? "" : " with " + threads_phrase(a.threads));
}

// A config and graph that run the model lock-step at the full batch (the
// budgets may still split it): every op on `device` alone (with `threads`)
// when `device` is not empty, else as `graph` places it.
struct Variant {
  Config config;
  Graph graph;
};
Variant lockstep_variant(const Config& config, const Graph& graph, const std::string& device, int threads) {
  Variant v{config, graph};
  v.config.train.micro_batches = 1;
  v.config.train.pipeline = PipelineKind::kNone;
  if (!device.empty()) {
    std::vector<DeviceSpec> kept;
    for (const DeviceSpec& d : config.devices)
      if (d.name == device) kept.push_back(d);
    kept.front().threads = threads;
    v.config.devices = kept;
    for (int i = 0; i < v.graph.size(); ++i) v.graph.node(i).device = device;
  }
  return v;
}

// The predicted step of `v` at the job's batch; throws devmap::Error when
// its budgets cannot hold it.
struct VariantStep {
  RunPrediction prediction;
  int micro_batches = 1;
};
VariantStep predict_variant(const Variant& v, const RunOptions& options, const JobShape& shape) {
  const JobPlan plan(v.config, options, v.graph, shape);
  return {predict_run_step(v.config, options, plan.graph, plan.partition, plan.memory),
          static_cast<int>(plan.memory.split.count)};
}

// Why `v` (one device) cannot run: "needs 39.79 MiB at one sample but its
// memory_limit is 20.00 MiB", else `error` without the config's path.
std::string no_fit_reason(const Variant& v, const std::string& error) {
  const Program program = build_training_program(v.graph);
  const Partition partition = partition_program(v.graph, program);
  const PlanInputs inputs = plan_inputs(v.config, v.graph, program, partition, external_ops(v.graph, {}));
  for (const DeviceMemoryPlan& d : plan_memory(inputs, 1).devices)
    if (!d.fits())
      return "needs " + format_bytes(d.total()) + " at one sample but its memory_limit is " + format_bytes(d.limit);
  const std::string prefix = v.config.path + ": ";
  return error.rfind(prefix, 0) == 0 ? error.substr(prefix.size()) : error;
}

// Whether every computed op of `graph` has a kernel of `kind`.
bool runs_every_op(const Graph& graph, DeviceKind kind) {
  for (const Node& n : graph.nodes())
    if (!n.schema->fed_by_coordinator() && !n.schema->runs_on(kind)) return false;
  return true;
}

// The model on each declared device of this machine alone: the fastest
// that fits, and why the others do not.
void gather_alone(const Config& config, const RunOptions& options, const Graph& graph, const JobShape& shape,
                  SplitVerdictInputs& in) {
  for (const DeviceSpec& d : config.devices) {
    std::string unusable;
    if (!d.host.empty() || !runs_every_op(graph, d.kind) || !usable_device_key(config, options, d.name, unusable))
      continue;
    const bool gpu = d.kind == DeviceKind::kGpu;
    try {
      std::optional<SingleDevice> best;
      // At the split's threads together where the cache has them measured.
      if (!gpu && in.split_threads > d.threads) {
        const VariantStep s =
            predict_variant(lockstep_variant(config, graph, d.name, in.split_threads), options, shape);
        if (s.prediction.estimated.empty())
          best =
              SingleDevice{d.name, gpu, in.split_threads, d.threads, s.prediction.step_seconds, true, s.micro_batches};
      }
      if (!best) {
        const VariantStep s = predict_variant(lockstep_variant(config, graph, d.name, d.threads), options, shape);
        best = SingleDevice{
            d.name,         gpu, d.threads, d.threads, s.prediction.step_seconds, s.prediction.estimated.empty(),
            s.micro_batches};
      }
      if (!in.alone || best->seconds < in.alone->seconds) in.alone = best;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;
      in.no_fit.push_back({d.name, no_fit_reason(lockstep_variant(config, graph, d.name, d.threads), e.what())});
    }
  }
}

}  // namespace

bool wants_split_verdict(const Partition& partition, const JobMemory& memory) {
  return partition.devices.size() > 1 || memory.split.count > 1;
}

std::vector<std::string> split_verdict_lines(const SplitVerdictInputs& in) {
  std::vector<std::string> lines;
  const bool split = in.devices.size() > 1;
  const std::string label = (split                ? std::string("split")
                             : in.devices.empty() ? std::string("?")
                                                  : in.devices[0]) +
                            " (" + in.schedule + ", " + std::to_string(in.micro_batches) + " x " +
                            std::to_string(in.micro_batch) + ")";
  // Comparisons use the measured step where there is one.
  const double step = in.measured ? *in.measured : in.predicted;
  const bool mismatch = in.measured && in.predicted > 0 && std::abs(*in.measured / in.predicted - 1) > kVerdictMismatch;
  std::string head = label + ": " + format_ms(step) + " a step " +
                     (in.measured ? std::string("measured") : "predicted (" + source(in.predicted_calibrated) + ")");
  if (in.alone) {
    head += ", " + against_than(step, in.alone->seconds) + " " + alone_phrase(*in.alone) + " (" +
            format_ms(in.alone->seconds) + " predicted, " + source(in.alone->calibrated);
    if (in.alone->micro_batches > 1)
      head += "; as " + std::to_string(in.alone->micro_batches) + " micro-batches to fit its memory_limit";
    if (mismatch) head += "; predicted against predicted: " + against(in.predicted, in.alone->seconds);
    head += ")";
  }
  lines.push_back(head);
  if (!in.alone && !in.no_fit.empty()) {
    std::string s = "  no single device fits: ";
    for (size_t i = 0; i < in.no_fit.size(); ++i)
      s += (i ? "; " : "") + in.no_fit[i].device + " alone " + in.no_fit[i].why;
    lines.push_back(s);
  }
  if (in.alone && !in.alone->gpu && in.alone->threads < in.split_threads)
    lines.push_back("  " + in.alone->device + " alone is predicted at its own " + threads_phrase(in.alone->threads) +
                    ": the calibration cache has no " + in.alone->device + " with " + threads_phrase(in.split_threads) +
                    ", the split's together (`" + in.command + " calibrate " + in.config_path + " --set devices." +
                    in.alone->device + ".threads=" + std::to_string(in.split_threads) + "` measures it)");
  if (in.lockstep) {
    std::string s = "  against lock-step at the full batch (" + std::to_string(in.lockstep_micro_batches) + " x " +
                    std::to_string((in.batch + in.lockstep_micro_batches - 1) / in.lockstep_micro_batches) +
                    (in.lockstep_micro_batches > 1 ? ", as the budgets need" : "") +
                    "): " + against(step, *in.lockstep) + " (" + format_ms(*in.lockstep) + " predicted, " +
                    source(in.lockstep_calibrated);
    if (mismatch) s += "; predicted against predicted: " + against(in.predicted, *in.lockstep);
    lines.push_back(s + ")");
  }
  if (in.micro_batches > 1) {
    std::string s = "  micro-batches of " + std::to_string(in.micro_batch) + " run the ops at " + percent(in.op_share) +
                    " of their speed at " + std::to_string(in.batch);
    for (size_t i = 0; i < in.slow_ops.size(); ++i)
      s += (i ? ", " : "; ") + in.slow_ops[i].op + " at " + percent(in.slow_ops[i].share);
    lines.push_back(s + " (" + source(in.op_speeds_calibrated) + ")");
  }
  // What to try: the fastest of the alternatives, where it beats the run.
  const bool alone_best = in.alone && (!in.lockstep || in.alone->seconds <= *in.lockstep);
  const double best = alone_best ? in.alone->seconds : in.lockstep ? *in.lockstep : step;
  if (best < step / 1.02) {
    if (alone_best) {
      std::string s = "  to try: every op on " + in.alone->device + " (`device_map.default: " + in.alone->device +
                      "` and nothing placed elsewhere)";
      if (!in.alone->gpu && in.alone->configured_threads < in.split_threads)
        s += " with threads: " + std::to_string(in.split_threads) + ", the split's threads together";
      lines.push_back(s + "; or `device_map.default: auto`, which picks it where it predicts it faster");
    } else {
      std::string s = "  to try: `train.pipeline.micro_batches: 1`, lock-step at the full batch";
      if (!in.slow_ops.empty()) s += ", where " + in.slow_ops.front().op + " runs at full speed";
      lines.push_back(s + "; or `micro_batches: auto`, which predicts each count");
    }
  } else if (in.alone || in.lockstep) {
    lines.push_back("  nothing above is predicted faster than this");
  }
  if (mismatch) {
    const double off = *in.measured / in.predicted - 1;
    lines.push_back("  measured " + format_ms(*in.measured) + " is " + percent(std::abs(off)) +
                    (off > 0 ? " above" : " below") + " the predicted " + format_ms(in.predicted) +
                    (in.predicted_calibrated
                         ? ": the calibration does not describe this run (a machine busier or quieter than when it "
                           "calibrated, or a stale cache); recalibrate on a quiet machine with `" +
                               in.command + " calibrate " + in.config_path + " --force`"
                         : " (from FLOPs estimates): run `" + in.command + " calibrate " + in.config_path +
                               "` to measure the ops"));
  } else if (!in.predicted_calibrated) {
    lines.push_back("  predicted from FLOPs estimates, not measured: run `" + in.command + " calibrate " +
                    in.config_path + "` for calibrated figures");
  }
  return lines;
}

SplitVerdictInputs gather_split_verdict(const VerdictRun& run) {
  const Config& config = run.config;
  const RunOptions& options = run.options;
  const Graph& graph = run.graph;
  const Partition& partition = run.partition;
  const JobMemory& memory = run.memory;
  SplitVerdictInputs in;
  if (run.measured && *run.measured > 0) in.measured = run.measured;
  in.config_path = config.path;
  in.command = command_name();
  in.devices = partition.devices;
  in.schedule = memory.rounds && memory.pipeline.kind != PipelineKind::kNone ? pipeline_kind_name(memory.pipeline.kind)
                                                                             : "lock-step";
  in.micro_batches = static_cast<int>(memory.split.count);
  in.micro_batch = memory.split.micro;
  in.batch = memory.split.requested;
  for (const std::string& name : partition.devices)
    if (const DeviceSpec* d = config.find_device(name); d && d->kind != DeviceKind::kGpu)
      in.split_threads += d->threads;
  const RunPrediction predicted = predict_run_step(config, options, graph, partition, memory);
  in.predicted = predicted.step_seconds;
  in.predicted_calibrated = predicted.estimated.empty();
  const JobShape shape{true, {}, memory.split.requested, config.train.eval_batch_size};
  gather_alone(config, options, graph, shape, in);
  // Lock-step at the full batch, unless the run is that (or a one-device
  // run whose device alone says it).
  const bool same_as_alone = partition.devices.size() == 1 && in.alone && in.alone->device == partition.devices[0];
  if (memory.rounds && !same_as_alone) {
    try {
      const VariantStep s = predict_variant(lockstep_variant(config, graph, "", 0), options, shape);
      in.lockstep = s.prediction.step_seconds;
      in.lockstep_calibrated = s.prediction.estimated.empty();
      in.lockstep_micro_batches = s.micro_batches;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidInput) throw;  // lock-step does not fit: nothing to compare
    }
  }
  // Each op's samples/s at the micro-batch against at the full batch.
  if (memory.split.count > 1) {
    const PlanCosts costs = plan_costs(config, options, graph);
    double at_batch = 0, at_micro = 0;
    std::vector<std::pair<OpSpeed, double>> ops;  // with its seconds at the full batch
    for (int i = 0; i < graph.size(); ++i) {
      const Node& n = graph.node(i);
      if (n.schema->fed_by_coordinator()) continue;
      const OpSeconds b = costs.costs.op(i, n.device, in.batch);
      const OpSeconds m = costs.costs.op(i, n.device, in.micro_batch);
      const double tb = b.forward + b.backward, tm = m.forward + m.backward;
      if (tb <= 0 || tm <= 0) continue;
      at_batch += tb;
      at_micro += tm * static_cast<double>(in.batch) / static_cast<double>(in.micro_batch);
      ops.push_back(
          {OpSpeed{n.name, tb * static_cast<double>(in.micro_batch) / (tm * static_cast<double>(in.batch))}, tb});
    }
    if (at_micro > 0) in.op_share = at_batch / at_micro;
    // The ops under kVerdictSlowOp that take at least 5% of the step's op time.
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first.share < b.first.share; });
    for (const auto& [op, seconds] : ops)
      if (op.share < kVerdictSlowOp && seconds >= 0.05 * at_batch && in.slow_ops.size() < 3) in.slow_ops.push_back(op);
    in.op_speeds_calibrated = costs.estimated->empty();
  }
  return in;
}

std::string split_verdict_text(const VerdictRun& run, std::ostream& log) {
  if (!wants_split_verdict(run.partition, run.memory) || run.config.data_parallel.replicas > 1) return "";
  for (const std::string& name : run.partition.devices)
    if (const DeviceSpec* d = run.config.find_device(name); !d || !d->host.empty()) return "";
  try {
    std::string text;
    for (const std::string& line : split_verdict_lines(gather_split_verdict(run))) text += line + "\n";
    return text;
  } catch (const Error& e) {
    log << "devmap: no verdict on the split: " << e.what() << "\n";
    return "";
  }
}

}  // namespace devmap
