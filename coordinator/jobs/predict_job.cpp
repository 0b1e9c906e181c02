#include "coordinator/jobs/predict_job.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "coordinator/checkpoint/checkpoint.h"
#include "coordinator/config/model.h"
#include "coordinator/data/image_input.h"
#include "coordinator/data/npy.h"
#include "coordinator/data/prediction_writer.h"
#include "coordinator/jobs/memory_report.h"
#include "coordinator/jobs/run_epilogue.h"
#include "coordinator/run/batch_feeder.h"
#include "coordinator/run/run_outputs.h"
#include "coordinator/run/session.h"
#include "coordinator/telemetry/metrics_log.h"
#include "coordinator/telemetry/trace_log.h"
#include "coordinator/util/atomic_file.h"
#include "coordinator/util/progress_bar.h"
#include "coordinator/util/signals.h"

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

// The command line's options over the config's predict section; throws
// devmap::Error (kInvalidInput) when weights, input or output is missing
// or the weights name a folder.
PredictOptions resolve_predict_options(const Config& config, const PredictOptions& cli) {
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
  return po;
}

// Nothing is read or written before every output is known to be safe.
void check_predict_files(const Config& config, const RunOptions& options, const RunOutputs& outputs,
                         const PredictOptions& po) {
  RunFiles files = run_files(config, outputs, options);
  files.inputs.push_back({"weights", po.weights});
  files.inputs.push_back({"input", numpy_file_of(po.input)});  // FILE of FILE.npz:KEY
  files.outputs.push_back({"output", po.output});
  if (!options.trace_path.empty()) files.outputs.push_back({"--trace", options.trace_path});
  check_run_files(files);
}

// A warning when the weights hold NaN or infinite values.
void warn_nonfinite_weights(const std::string& weights) {
  const std::vector<std::string> bad = nonfinite_tensors(weights);
  if (bad.empty()) return;
  std::string names;
  for (size_t i = 0; i < bad.size(); ++i) names += (i ? ", " : "") + bad[i];
  std::cerr << "devmap: warning: " << weights << " holds NaN or infinite values in " << names
            << ": predictions from these weights are not meaningful\n";
}

// The model as predict runs it: the prediction (prediction_node) and, with
// --probabilities, the argmax's input (the logits, or the model's own
// softmax of them, whose values are written as they are) as outputs.
struct PredictModel {
  Graph graph;
  std::vector<int> wanted;     // the session's outputs: the prediction, then the scores
  int64_t classes = 0;         // scores per row; 0 without --probabilities
  bool softmax_given = false;  // the scores are the model's softmax
  int image_node = -1, label_node = -1;
};

PredictModel predict_model(const Config& config, bool probabilities) {
  PredictModel m;
  m.graph = config.graph;
  const int pred = prediction_node(m.graph, config.path);
  m.wanted = {pred};
  const int logits = m.graph.node(pred).inputs[0];
  m.softmax_given = m.graph.node(logits).op() == "softmax";
  m.classes = probabilities ? m.graph.node(logits).out_shape.numel() : 0;
  if (probabilities) m.wanted.push_back(logits);
  m.image_node = m.graph.find_role(OpRole::kImageInput);
  m.label_node = m.graph.find_role(OpRole::kLabelInput);
  if (m.image_node < 0) throw_invalid(config.path + ": the model has no input op to feed");
  return m;
}

// Starts the workers with the weights loaded, hooks up the trace and writes
// the start and memory_plan events.
void start_prediction(Session& session, TraceLog* trace, MetricsLog& metrics, const PredictOptions& po,
                      const PredictionInput& input) {
  session.start();
  attach_trace(trace, session);
  load_weights(session.workers(), session.graph(), po.weights);
  JsonObject j;
  j.add("event", "start").add("job", "predict").add("run_id", session.run().run_id());
  j.add("weights", po.weights).add("input", po.input).add("images", input.count());
  j.add("batch", session.memory().split.micro);
  metrics.write(j);
  write_memory_plan_event(session.memory(), metrics);
}

// What the pass over the input feeds, and where its rows go.
struct PredictPass {
  Session& session;
  PredictionInput& input;
  const PredictModel& model;
  const HostStages* hosts;  // a job across hosts, or null
  AtomicFile* csv;          // where rank 0 (or the only process) writes the rows; null elsewhere
  MetricsLog& metrics;
};

struct PredictPassResult {
  bool complete = false;  // false: a stop signal ended it early
  int64_t rows = 0;       // predictions written
  double seconds = 0;
};

// Feeds every image in batches; rank 0 writes the header, then each batch's
// rows as it arrives, with the progress bar.
PredictPassResult predict_all(const PredictPass& pass) {
  Session& session = pass.session;
  std::optional<PredictionWriter> writer;
  if (pass.csv) {
    writer.emplace(pass.csv->stream(), pass.model.classes, pass.model.softmax_given);
    writer->write_header();
  }
  const int64_t count = pass.input.count();
  const int64_t batch = session.memory().split.micro;
  const InputLayout& out_layout = session.output_layout();
  BatchFeeder feeder(session.workers(), session.input(), session.layout(), pass.model.image_node,
                     pass.model.label_node);
  if (session.memory().rounds) feeder.set_micro_batches_per_round(session.memory().pipeline.micro_batches);
  ProgressBar bar("predict", count, std::max<int64_t>(count / 10, 1));
  const auto t0 = std::chrono::steady_clock::now();
  const bool complete = feeder.run(
      pass.input, {.batch_size = batch, .micro = batch}, [&](int64_t, int64_t n, const StepResult&, uint32_t slot) {
        char* base = static_cast<char*>(session.output()->data()) + slot * out_layout.slot_bytes;
        if (pass.hosts) gather_rows_to_rank0(*pass.hosts, session.graph(), out_layout, base, n);
        if (!writer) return;
        const float* labels = reinterpret_cast<const float*>(base + out_layout.input_offsets[0]);
        const float* scores =
            pass.model.classes ? reinterpret_cast<const float*>(base + out_layout.input_offsets[1]) : nullptr;
        writer->write_rows(n, labels, scores);
        if (!pass.csv->stream())
          throw_runtime("writing predictions to '" + pass.csv->temporary_path() + "' failed: " + std::strerror(errno));
        pass.metrics.begin();
        bar.update(writer->rows(), images_per_second(writer->rows(), t0));
      });
  PredictPassResult r;
  r.complete = complete;
  r.rows = writer ? writer->rows() : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bar.finish(images_per_second(r.rows, t0), complete ? -1 : r.rows);
  return r;
}

// The interrupted event's fields and the notice of a pass that signal `sig`
// stopped after `pass.rows` of `images` images.
RunStop stopped_prediction(int sig, const PredictPassResult& pass, int64_t images, const std::string& output) {
  RunStop s;
  s.where = [rows = pass.rows](JsonObject& j) { j.add("images", rows); };
  s.notice = "devmap: interrupted by " + std::string(signal_name(sig)) + " after " + std::to_string(pass.rows) +
             " of " + std::to_string(images) + " images; " + output +
             " was not written (a file already there is unchanged)\n";
  return s;
}

// The done event's fields and the summary line of a pass that wrote every
// prediction to `output`.
RunSummary prediction_summary(const PredictPassResult& pass, const std::string& output) {
  RunSummary s;
  s.what_ran = [pass, output](JsonObject& j) {
    j.add("images", pass.rows).add("seconds", pass.seconds);
    j.add("images_per_s", static_cast<double>(pass.rows) / pass.seconds).add("output", output);
  };
  char took[64];
  std::snprintf(took, sizeof took, " in %.1f s (%.0f images/s)\n", pass.seconds,
                static_cast<double>(pass.rows) / pass.seconds);
  s.headline = "wrote " + std::to_string(pass.rows) + " predictions to " + output + took;
  return s;
}

}  // namespace

int run_predict(const Config& config, const RunOptions& options, const PredictOptions& cli, const HostStages* hosts) {
  // Rank 0 of a job across hosts, or the only process: reads the weights
  // file, writes the predictions and metrics.
  const bool writes = !hosts || hosts->rank() == 0;
  const PredictOptions po = resolve_predict_options(config, cli);
  const RunOutputs outputs = resolve_run_outputs(config, options, /*training=*/false);
  if (writes) check_predict_files(config, options, outputs, po);
  const std::unique_ptr<TraceLog> trace = writes ? make_trace_log(options, /*prediction=*/true) : nullptr;
  if (writes) warn_nonfinite_weights(po.weights);
  const PredictModel model = predict_model(config, po.probabilities);
  PredictionInput input(po.input, model.graph.node(model.image_node).out_shape);
  // Slots are sized by what will be fed: never more than the input holds.
  const int64_t requested = std::min(po.batch > 0 ? po.batch : config.train.eval_batch_size, input.count());

  Session session(config, options, model.graph, SessionJob::infer(model.wanted, requested, hosts));
  // Prediction needs no whole batch at once: a batch that does not fit is
  // streamed as smaller ones, each written out as it arrives.
  const int64_t batch = session.memory().split.micro;
  for (const std::string& d : session.memory().decisions) std::cerr << "devmap: memory: " << d << "\n";
  // The predictions replace po.output only when all are written.
  std::optional<AtomicFile> csv;
  if (writes) csv.emplace(po.output, "predictions");
  if (options.log_placement) log_placement(config, session.partition(), batch, std::cerr);
  warn_round_trips(config, session, batch, std::cerr);
  MetricsLog metrics(writes ? outputs.metrics : "", writes ? outputs.config_copy : "",
                     writes ? config.resolved_yaml : "");
  start_prediction(session, trace.get(), metrics, po, input);
  print_run_outputs(outputs, std::cerr);
  std::cerr << "devmap: predicting " << input.count() << " images of " << po.input << " in batches of " << batch
            << "\n";
  const PredictPassResult pass = predict_all(PredictPass{session, input, model, hosts, csv ? &*csv : nullptr, metrics});
  session.workers().shutdown();
  if (!writes) return pass.complete ? 0 : 128 + interrupt_signal();
  metrics.begin();  // the metrics files exist before the predictions replace po.output
  const RunEnd end{Job::kPredict, options, metrics, trace.get()};
  if (!pass.complete) {
    const int sig = interrupt_signal();
    return stop_run(end, sig, stopped_prediction(sig, pass, input.count(), po.output));
  }
  csv->commit();
  return finish_run(end, session.workers(), session.memory(), prediction_summary(pass, po.output));
}

}  // namespace devmap
