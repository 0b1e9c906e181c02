#include "coordinator/jobs/predict_job.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "coordinator/checkpoint/checkpoint.h"
#include "coordinator/data/image_input.h"
#include "coordinator/data/prediction_writer.h"
#include "coordinator/jobs/memory_report.h"
#include "coordinator/jobs/profile_report.h"
#include "coordinator/run/batch_feeder.h"
#include "coordinator/run/run_outputs.h"
#include "coordinator/run/session.h"
#include "coordinator/telemetry/metrics_log.h"
#include "coordinator/telemetry/trace_log.h"
#include "coordinator/util/atomic_file.h"
#include "coordinator/util/progress_bar.h"
#include "coordinator/util/signals.h"
#include "core/base/process_stats.h"

namespace devmap {

namespace {

// The progress bar's status: "images, 1234 images/s" since `t0`.
std::string images_per_second(int64_t done, std::chrono::steady_clock::time_point t0) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char status[48];
  std::snprintf(status, sizeof status, "images, %.0f images/s", static_cast<double>(done) / secs);
  return status;
}

// Across hosts: the rows of `slot` (the output layout's) that another
// host's devices predicted come to rank 0, output by output. Every rank
// calls it for every collected batch, in the same order.
void gather_rows_to_rank0(const HostStages& hosts, const Graph& graph, const InputLayout& layout, char* slot,
                          int64_t rows) {
  for (size_t k = 0; k < layout.input_nodes.size(); ++k) {
    const Node& node = graph.node(layout.input_nodes[k]);
    const int owner = hosts.rank_of(node.device);
    if (owner == 0) continue;
    char* at = slot + layout.input_offsets[k];
    const size_t bytes = static_cast<size_t>(node.out_shape_for(rows).numel()) * sizeof(float);
    if (hosts.rank() == 0)
      hosts.recv(at, bytes, owner);
    else if (hosts.rank() == owner)
      hosts.send(at, bytes, 0);
  }
}

}  // namespace

int prediction_node(Graph& g, const std::string& config_path) {
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op() == "argmax") return i;
  int loss = g.find_role(OpRole::kLoss);
  if (loss < 0)
    throw_invalid(config_path + ": predict needs an argmax op, or a softmax_cross_entropy op whose logits to use");
  const Node& logits = g.node(g.node(loss).inputs[0]);
  Node n;
  n.name = "prediction";
  while (g.find(n.name) >= 0) n.name += "_";
  n.schema = find_op("argmax");
  n.inputs = {g.node(loss).inputs[0]};
  n.device = logits.device;
  int id = g.add(std::move(n));
  g.infer();
  return id;
}

int run_predict(const Config& config, const RunOptions& options, const PredictOptions& cli, const HostStages* hosts) {
  // Rank 0 of a job across hosts, or the only process: reads the weights
  // file, writes the predictions and metrics.
  const bool writes = !hosts || hosts->rank() == 0;
  // The command line overrides the config's predict section.
  PredictOptions po = cli;
  if (po.weights.empty()) po.weights = config.predict.weights;
  if (po.input.empty()) po.input = config.predict.input;
  if (po.output.empty()) po.output = config.predict.output;
  if (po.batch <= 0) po.batch = config.predict.batch;
  if (po.weights.empty() || po.input.empty() || po.output.empty())
    throw_invalid(
        "predict needs weights, input and output: --weights FILE --input FILE --output FILE, or "
        "predict.weights, predict.input and predict.output in " +
        config.path + " (see --help)");
  std::error_code ec;
  if (std::filesystem::is_directory(po.weights, ec))
    throw_invalid("--weights '" + po.weights + "' is a folder: give the .safetensors file a train run wrote");
  const RunOutputs outputs = resolve_run_outputs(config, options, /*training=*/false);
  if (writes) {
    // Nothing is read or written before every output is known to be safe.
    RunFiles files = run_files(config, outputs, options);
    files.inputs.push_back({"weights", po.weights});
    files.inputs.push_back({"input", po.input});
    files.outputs.push_back({"output", po.output});
    if (!options.trace_path.empty()) files.outputs.push_back({"--trace", options.trace_path});
    check_run_files(files);
  }
  const std::unique_ptr<TraceLog> trace = writes ? make_trace_log(options, /*prediction=*/true) : nullptr;
  if (std::vector<std::string> bad = writes ? nonfinite_tensors(po.weights) : std::vector<std::string>{};
      !bad.empty()) {
    std::string names;
    for (size_t i = 0; i < bad.size(); ++i) names += (i ? ", " : "") + bad[i];
    std::cerr << "devmap: warning: " << po.weights << " holds NaN or infinite values in " << names
              << ": predictions from these weights are not meaningful\n";
  }
  Graph graph = config.graph;
  const int pred = prediction_node(graph, config.path);
  std::vector<int> wanted = {pred};
  // --probabilities: the argmax's input (the logits, or the model's own
  // softmax of them, whose values are written as they are) is a second output.
  const int logits = graph.node(pred).inputs[0];
  const bool softmax_given = graph.node(logits).op() == "softmax";
  const int64_t classes = po.probabilities ? graph.node(logits).out_shape.numel() : 0;
  if (po.probabilities) wanted.push_back(logits);
  int image_node = graph.find_role(OpRole::kImageInput);
  int label_node = graph.find_role(OpRole::kLabelInput);
  if (image_node < 0) throw_invalid(config.path + ": the model has no input op to feed");
  PredictionInput input(po.input, graph.node(image_node).out_shape);
  // Slots are sized by what will be fed: never more than the input holds.
  const int64_t requested = std::min(po.batch > 0 ? po.batch : config.train.eval_batch_size, input.count());

  Session session(config, options, graph, SessionJob::infer(wanted, requested, hosts));
  // Prediction needs no whole batch at once: a batch that does not fit is
  // streamed as smaller ones, each written out as it arrives.
  const int64_t batch = session.memory().split.micro;
  for (const std::string& d : session.memory().decisions) std::cerr << "devmap: memory: " << d << "\n";
  // The predictions replace po.output only when all are written.
  std::optional<AtomicFile> csv;
  if (writes) csv.emplace(po.output, "predictions");
  std::ostringstream elsewhere;  // another rank's rows, never kept: rank 0 writes them
  std::ostream& out = csv ? csv->stream() : elsewhere;
  if (options.log_placement) log_placement(config, session.partition(), batch, std::cerr);
  MetricsLog metrics(writes ? outputs.metrics : "", writes ? outputs.config_copy : "",
                     writes ? config.resolved_yaml : "");
  session.start();
  if (trace) {
    trace->describe(session.graph(), session.partition());
    session.workers().set_trace(trace.get());
  }
  load_weights(session.workers(), session.graph(), po.weights);
  {
    JsonObject j;
    j.add("event", "start").add("job", "predict").add("run_id", session.run().run_id());
    j.add("weights", po.weights).add("input", po.input).add("images", input.count()).add("batch", batch);
    metrics.write(j);
    write_memory_plan_event(session.memory(), metrics);
  }
  print_run_outputs(outputs, std::cerr);
  std::cerr << "devmap: predicting " << input.count() << " images of " << po.input << " in batches of " << batch
            << "\n";

  PredictionWriter writer(out, classes, softmax_given);
  writer.write_header();
  const InputLayout& out_layout = session.output_layout();
  BatchFeeder feeder(session.workers(), session.input(), session.layout(), image_node, label_node);
  if (session.memory().rounds) feeder.set_micro_batches_per_round(session.memory().pipeline.micro_batches);
  ProgressBar bar("predict", input.count(), std::max<int64_t>(input.count() / 10, 1));
  auto t0 = std::chrono::steady_clock::now();
  bool complete = feeder.run(input, batch, batch, 0, 0, -1, [&](int64_t, int64_t n, const StepResult&, uint32_t slot) {
    char* base = static_cast<char*>(session.output()->data()) + slot * out_layout.slot_bytes;
    if (hosts) gather_rows_to_rank0(*hosts, session.graph(), out_layout, base, n);
    if (!writes) return;
    const float* labels = reinterpret_cast<const float*>(base + out_layout.input_offsets[0]);
    const float* scores = classes ? reinterpret_cast<const float*>(base + out_layout.input_offsets[1]) : nullptr;
    writer.write_rows(n, labels, scores);
    if (!out) throw_runtime("writing predictions to '" + csv->temporary_path() + "' failed: " + std::strerror(errno));
    metrics.begin();
    bar.update(writer.rows(), images_per_second(writer.rows(), t0));
  });
  const int64_t done = writer.rows();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bar.finish(images_per_second(done, t0), complete ? -1 : done);
  session.workers().shutdown();
  if (!writes) return complete ? 0 : 128 + interrupt_signal();
  metrics.begin();
  if (!complete) {
    const int sig = interrupt_signal();
    JsonObject j;
    j.add("event", "interrupted").add("job", "predict").add("signal", signal_name(sig)).add("images", done);
    metrics.write(j);
    std::cerr << "devmap: interrupted by " << signal_name(sig) << " after " << done << " of " << input.count()
              << " images; " << po.output << " was not written (a file already there is unchanged)\n";
    finish_trace(trace.get(), std::cerr);
    return 128 + sig;
  }
  csv->commit();
  write_device_events(session.workers(), session.memory(), metrics);
  if (options.profile) report_profile(session.workers().workers(), session.workers().busy(), std::cout, metrics);
  JsonObject j;
  j.add("event", "done").add("job", "predict").add("images", done).add("seconds", secs);
  j.add("images_per_s", static_cast<double>(done) / secs).add("output", po.output);
  add_busy_fields(j, session.workers().busy());
  j.add("coordinator_vm_hwm_bytes", static_cast<int64_t>(read_vm_hwm_bytes()));
  metrics.write(j);
  char took[64];
  std::snprintf(took, sizeof took, " in %.1f s (%.0f images/s)\n", secs, static_cast<double>(done) / secs);
  std::cout << "wrote " << done << " predictions to " << po.output << took;
  print_busy(session.workers().busy(), std::cout);
  std::cout << "metrics: " << metrics.path() << std::endl;
  finish_trace(trace.get(), std::cerr);
  return 0;
}

}  // namespace devmap
