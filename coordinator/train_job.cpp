#include "coordinator/train_job.h"

#include <zlib.h>
#include <zmq.h>

#include <algorithm>
#include <boost/version.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "coordinator/batch_feeder.h"
#include "coordinator/checkpoint.h"
#include "coordinator/dataset.h"
#include "coordinator/memory_report.h"
#include "coordinator/metrics_log.h"
#include "coordinator/profile_report.h"
#include "coordinator/progress_bar.h"
#include "coordinator/session.h"
#include "coordinator/signals.h"
#include "coordinator/worker_group.h"
#include "core/process_stats.h"

#ifndef DEVMAP_VERSION
#define DEVMAP_VERSION "dev"
#endif

namespace devmap {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string library_versions_json() {
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  JsonObject v;
  v.add("devmap", DEVMAP_VERSION);
  v.add("zeromq", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch));
  v.add("boost", std::to_string(BOOST_VERSION / 100000) + "." + std::to_string(BOOST_VERSION / 100 % 1000) + "." +
                     std::to_string(BOOST_VERSION % 100));
  v.add("zlib", zlibVersion());
#ifdef DEVMAP_YAML_CPP_VERSION
  v.add("yaml-cpp", DEVMAP_YAML_CPP_VERSION);
#endif
  return v.str();
}

struct EvalResult {
  double loss = 0, metric = 0;
};

EvalResult evaluate(BatchFeeder& feeder, const Dataset& test, int64_t batch_size) {
  std::vector<int64_t> order = epoch_order(test.count, 0, 0, false);
  EvalResult r;
  ProgressBar bar("  test", test.count, std::max<int64_t>(test.count, 1));
  int64_t done = 0;
  feeder.run(test, order, batch_size, batch_size, 0, 0, -1, [&](int64_t, int64_t batch, const StepResult& s, uint32_t) {
    r.loss += static_cast<double>(s.loss) * static_cast<double>(batch);
    r.metric += static_cast<double>(s.metric) * static_cast<double>(batch);
    done += batch;
    bar.update(done, "");
  });
  r.loss /= static_cast<double>(std::max<int64_t>(test.count, 1));
  r.metric /= static_cast<double>(std::max<int64_t>(test.count, 1));
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int run_train(const Config& config, const RunOptions& options) {
  const Graph& graph = config.graph;
  const TrainConfig& tc = config.train;
  int image_node = graph.find_role(OpRole::kImageInput);
  int label_node = graph.find_role(OpRole::kLabelInput);
  if (image_node < 0 || label_node < 0)
    throw_invalid(config.path + ": training needs an 'input' op and a 'labels' op in the model");
  auto metrics_nodes = graph.find_all_role(OpRole::kMetric);
  std::string metric_name = metrics_nodes.empty() ? "" : graph.node(metrics_nodes[0]).op();

  const Shape& image_shape = graph.node(image_node).out_shape;
  Dataset train =
      load_dataset("train", config.data.train_images, config.data.train_labels, config.data.train_limit, image_shape);
  Dataset test =
      load_dataset("test", config.data.test_images, config.data.test_labels, config.data.test_limit, image_shape);
  int64_t classes = graph.node(label_node).attrs.get_int("classes");
  for (const Dataset* d : {&train, &test})
    for (uint8_t l : d->labels)
      if (l >= classes)
        throw_invalid(d->name + " data holds label " + std::to_string(l) + " but the labels op has " +
                      std::to_string(classes) + " classes");

  Session session(config, options, graph, /*training=*/true, {}, tc.batch_size, tc.eval_batch_size);
  if (options.log_placement) log_placement(config, session.partition(), tc.batch_size, std::cerr);
  const JobMemory& memory = session.memory();
  for (const std::string& d : memory.decisions) std::cerr << "devmap: memory: " << d << "\n";
  MetricsLog metrics(options.metrics_path, config.path, config.resolved_yaml);
  session.start();
  WorkerGroup& group = session.workers();
  const InputLayout& layout = session.layout();

  {
    JsonObject start;
    start.add("event", "start").add("run_id", session.run().run_id()).add("config_path", config.path);
    start.add("resolved_config", config.resolved_yaml).add_raw("versions", library_versions_json());
    std::string workers = "[";
    for (const WorkerInfo& w : group.workers()) {
      JsonObject wj;
      wj.add("device", w.device).add("pid", static_cast<int64_t>(w.pid));
      wj.add("params", static_cast<int64_t>(w.param_count)).add("runtime", w.runtime);
      workers += (workers.size() > 1 ? "," : "") + wj.str();
    }
    start.add_raw("workers", workers + "]");
    metrics.write(start);
    write_memory_plan_event(memory, metrics);
  }
  std::string where;
  for (const std::string& d : session.partition().devices)
    where += (where.empty() ? "" : ", ") + d + " (" + std::to_string(config.find_device(d)->threads) + " threads)";
  std::cerr << "devmap: training " << config.path << " on " << where << ", " << graph.param_count() << " parameters, "
            << train.count << " training / " << test.count << " test images\n";

  BatchFeeder feeder(group, session.input(), layout, image_node, label_node);
  if (options.param_stats) feeder.set_first_step_flags(wire::kParamStats);
  const int64_t steps_per_epoch = (train.count + tc.batch_size - 1) / tc.batch_size;
  int64_t step = 0, epochs_done = 0;
  const std::string checkpoint =
      tc.checkpoint.empty() ? "checkpoints/" + std::filesystem::path(config.path).stem().string() + ".safetensors"
                            : tc.checkpoint;
  auto save = [&] {
    save_checkpoint(group, graph, tc.optimizer, checkpoint, TrainingState{step, epochs_done, tc.seed});
    JsonObject j;
    j.add("event", "checkpoint").add("step", step).add("path", checkpoint);
    metrics.write(j);
  };
  if (options.resume) {
    // The weights, the optimizer state and the step go back into the
    // workers; the data order and dropout masks follow from (seed, epoch,
    // step), so the run continues as if it had never stopped.
    if (!std::filesystem::exists(checkpoint))
      throw_invalid("--resume: there is no checkpoint at " + checkpoint + " (train.checkpoint) to resume from");
    TrainingState state = load_checkpoint(group, graph, tc.optimizer, checkpoint);
    if (state.seed != tc.seed)
      throw_invalid(checkpoint + " was trained with seed " + std::to_string(state.seed) + ", the config has " +
                    std::to_string(tc.seed) + ": resume with the same train.seed");
    step = state.step;
    epochs_done = state.epoch;
    std::cerr << "devmap: resuming from " << checkpoint << " at step " << step << " (epoch "
              << step / steps_per_epoch + 1 << ")\n";
    JsonObject j;
    j.add("event", "resume").add("step", step).add("path", checkpoint);
    metrics.write(j);
  }
  double last_loss = 0;
  EvalResult last_eval;
  auto run_start = Clock::now();
  for (int64_t epoch = step / steps_per_epoch + 1; epoch <= tc.epochs; ++epoch) {
    const bool limited = tc.max_steps > 0;
    const int64_t budget = limited ? tc.max_steps - step : 0;
    if (limited && budget <= 0) break;
    std::vector<int64_t> order = epoch_order(train.count, tc.seed, epoch, tc.shuffle);
    // A resumed epoch starts at the first batch its checkpoint had not run.
    const int64_t done_in_epoch = step - (epoch - 1) * steps_per_epoch;
    order.erase(order.begin(),
                order.begin() + std::min<int64_t>(done_in_epoch * tc.batch_size, static_cast<int64_t>(order.size())));
    int64_t left = steps_per_epoch - done_in_epoch;
    int64_t epoch_steps = limited ? std::min(budget, left) : left;
    ProgressBar bar("epoch " + std::to_string(epoch) + "/" + std::to_string(tc.epochs), epoch_steps, options.log_every);
    double loss_sum = 0;
    int64_t samples = 0;
    std::vector<double> step_seconds;
    auto epoch_start = Clock::now();
    auto step_start = epoch_start;
    feeder.run(
        train, order, tc.batch_size, memory.split.micro, step, wire::kTrain, epoch_steps,
        [&](int64_t i, int64_t batch, const StepResult& r, uint32_t) {
          auto now = Clock::now();
          step_seconds.push_back(std::chrono::duration<double>(now - step_start).count());
          step_start = now;
          loss_sum += static_cast<double>(r.loss) * static_cast<double>(batch);
          samples += batch;
          last_loss = r.loss;
          ++step;
          double elapsed = std::chrono::duration<double>(now - epoch_start).count();
          bar.update(i + 1, "loss " + fmt("%.4f", r.loss) + " " + fmt("%.0f", static_cast<double>(samples) / elapsed) +
                                " img/s");
          for (const wire::ParamStat& ps : r.param_stats) {
            JsonObject j;
            j.add("event", "param_stats").add("step", step).add("name", wire::read_name(ps.name));
            j.add("grad_norm", static_cast<double>(ps.grad_norm));
            j.add("update_norm", static_cast<double>(ps.update_norm));
            j.add("value_norm", static_cast<double>(ps.value_norm));
            metrics.write(j);
          }
          if (tc.checkpoint_every > 0 && step % tc.checkpoint_every == 0) save();
          if (step % options.log_every == 0 || step == 1) {
            JsonObject j;
            j.add("event", "step").add("step", step).add("epoch", epoch).add("loss", static_cast<double>(r.loss));
            j.add("step_ms", step_seconds.back() * 1e3).add("compute_ms", r.compute_seconds * 1e3);
            metrics.write(j);
          }
        });
    double epoch_seconds = std::chrono::duration<double>(Clock::now() - epoch_start).count();
    double train_loss = loss_sum / static_cast<double>(std::max<int64_t>(samples, 1));
    bar.finish("loss " + fmt("%.4f", train_loss) + " " + fmt("%.0f", static_cast<double>(samples) / epoch_seconds) +
               " img/s");
    last_eval = evaluate(feeder, test, memory.eval_batch);
    if (step == epoch * steps_per_epoch) epochs_done = epoch;
    // The median step after a short warm-up: the steady-state speed.
    std::vector<double> steady(
        step_seconds.begin() + std::min<ptrdiff_t>(5, static_cast<ptrdiff_t>(step_seconds.size()) / 2),
        step_seconds.end());
    double med = median(steady);
    JsonObject j;
    j.add("event", "epoch").add("epoch", epoch).add("steps", static_cast<int64_t>(step_seconds.size()));
    j.add("train_loss", train_loss).add("test_loss", last_eval.loss);
    if (!metric_name.empty()) j.add("test_" + metric_name, last_eval.metric);
    j.add("images_per_s", static_cast<double>(samples) / epoch_seconds).add("epoch_seconds", epoch_seconds);
    j.add("median_step_ms", med * 1e3)
        .add("median_images_per_s", med > 0 ? static_cast<double>(tc.batch_size) / med : 0.0);
    metrics.write(j);
    std::cerr << "epoch " << epoch << ": train loss " << fmt("%.4f", train_loss) << ", test loss "
              << fmt("%.4f", last_eval.loss);
    if (!metric_name.empty()) std::cerr << ", test " << metric_name << " " << fmt("%.4f", last_eval.metric);
    std::cerr << "\n";
  }
  save();
  group.shutdown();
  double total = std::chrono::duration<double>(Clock::now() - run_start).count();
  write_device_events(group, memory, metrics);
  if (options.profile) report_profile(group.workers(), std::cerr, metrics);
  JsonObject done;
  done.add("event", "done").add("steps", step).add("seconds", total).add("final_loss", static_cast<double>(last_loss));
  done.add("test_loss", last_eval.loss);
  if (!metric_name.empty()) done.add("test_" + metric_name, last_eval.metric);
  done.add("coordinator_vm_hwm_bytes", static_cast<int64_t>(read_vm_hwm_bytes()));
  metrics.write(done);
  std::cerr << "devmap: done, " << step << " steps in " << fmt("%.1f", total) << " s; weights: " << checkpoint
            << "; metrics: " << metrics.path() << "\n";
  return 0;
}

}  // namespace devmap
