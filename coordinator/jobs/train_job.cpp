#include "coordinator/jobs/train_job.h"

#include <zlib.h>
#include <zmq.h>

#include <algorithm>
#include <boost/version.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "coordinator/checkpoint/checkpoint.h"
#include "coordinator/checkpoint/lock.h"
#include "coordinator/checkpoint/store.h"
#include "coordinator/data/dataset.h"
#include "coordinator/data/npy.h"
#include "coordinator/jobs/calibrate_job.h"
#include "coordinator/jobs/memory_report.h"
#include "coordinator/jobs/run_epilogue.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/recompute_plan.h"
#include "coordinator/plan/split_verdict.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/run/batch_feeder.h"
#include "coordinator/run/run_outputs.h"
#include "coordinator/run/session.h"
#include "coordinator/run/worker_group.h"
#include "coordinator/telemetry/metrics_log.h"
#include "coordinator/telemetry/trace_log.h"
#include "coordinator/util/command_name.h"
#include "coordinator/util/progress_bar.h"
#include "coordinator/util/signals.h"
#include "coordinator/util/version.h"

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
  v.add("devmap", devmap_version());
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

// False when a stop signal ended the pass early.
bool evaluate(BatchFeeder& feeder, const Dataset& test, int64_t batch_size, EvalResult& out) {
  std::vector<int64_t> order = epoch_order(test.count, 0, 0, false);
  EvalResult r;
  ProgressBar bar("  test", test.count, std::max<int64_t>(test.count, 1));
  int64_t done = 0;
  bool complete = feeder.run(OrderedSamples{test, order}, {.batch_size = batch_size, .micro = batch_size},
                             [&](int64_t, int64_t batch, const StepResult& s, uint32_t) {
                               r.loss += static_cast<double>(s.loss) * static_cast<double>(batch);
                               r.metric += static_cast<double>(s.metric) * static_cast<double>(batch);
                               done += batch;
                               bar.update(done, "");
                             });
  r.loss /= static_cast<double>(std::max<int64_t>(test.count, 1));
  r.metric /= static_cast<double>(std::max<int64_t>(test.count, 1));
  if (complete) out = r;
  return complete;
}

// The progress bar's status: the running mean of the epoch's loss so far.
std::string progress_status(double mean_loss, int64_t samples, double seconds) {
  return "mean loss " + fmt("%.4f", mean_loss) + " " + fmt("%.0f", static_cast<double>(samples) / seconds) + " img/s";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// One training run: the data, the metrics and the checkpoints stay across
// its attempts; each attempt has its own session (workers, segments).
class Trainer {
 public:
  Trainer(const Config& config, const RunOptions& options, const TrainReplica& replica)
      : config_(config),
        options_(options),
        replica_(replica),
        graph_(config.graph),
        tc_(config_.train),
        outputs_(resolve_run_outputs(config, options, /*training=*/true)),
        store_(outputs_.checkpoint, config.train.keep_checkpoints),
        trace_(make_trace_log(options, /*prediction=*/false)) {
    check_files();
    if (replica_.writes_outputs()) lock_.emplace(outputs_.checkpoint);
    image_node_ = graph_.find_role(OpRole::kImageInput);
    label_node_ = graph_.find_role(OpRole::kLabelInput);
    if (image_node_ < 0 || label_node_ < 0)
      throw_invalid(config.path + ": training needs an 'input' op and a 'labels' op in the model");
    auto metrics_nodes = graph_.find_all_role(OpRole::kMetric);
    metric_name_ = metrics_nodes.empty() ? "" : graph_.node(metrics_nodes[0]).op();
    const Shape& image_shape = graph_.node(image_node_).out_shape;
    train_ =
        load_dataset("train", config.data.train_images, config.data.train_labels, config.data.train_limit, image_shape);
    test_ = load_dataset("test", config.data.test_images, config.data.test_labels, config.data.test_limit, image_shape);
    int64_t classes = graph_.node(label_node_).attrs.get_int("classes");
    for (const Dataset* d : {&train_, &test_})
      for (uint8_t l : d->labels)
        if (l >= classes)
          throw_invalid(d->name + " data holds label " + std::to_string(l) + " but the labels op has " +
                        std::to_string(classes) + " classes");
    steps_per_epoch_ = (train_.count + tc_.batch_size - 1) / tc_.batch_size;
    if (const int64_t last = train_.count % tc_.batch_size; replica_.count > 1 && last > 0 && last < replica_.count)
      throw_invalid(config.path + ": the last step of each epoch has " + std::to_string(last) +
                    " training samples, fewer than the " + std::to_string(replica_.count) +
                    " replicas of data_parallel.replicas: change train.batch_size or data.train_limit so that it "
                    "has none or at least " +
                    std::to_string(replica_.count));
    if (const int64_t last = train_.count % tc_.batch_size; last > 0)
      check_batch_statistics(graph_, last, config.path,
                             "the last batch of each epoch (" + std::to_string(train_.count) +
                                 " training samples in "
                                 "batches of " +
                                 std::to_string(tc_.batch_size) + ")");
    resolve_schedule();
    if (options.resume && reads_checkpoints()) {
      if (store_.list().empty())
        throw_invalid("--resume: there is no checkpoint at " + store_.path() + " to resume from (" +
                      checkpoint_origin() + ")");
      store_.adopt_existing();
    }
  }

  // The schedule's rates are a function of the global step and the run's
  // total steps (epochs, capped by max_steps), the same for a resumed run.
  void resolve_schedule() {
    LrSchedule& s = config_.train.optimizer.schedule;
    const int64_t all = tc_.epochs * steps_per_epoch_;
    s.total_steps = tc_.max_steps > 0 ? std::min(tc_.max_steps, all) : all;
    if (s.kind == LrSchedule::Kind::kCosine && s.cosine_period() < 1)
      throw_invalid(config_.path + ": train.optimizer.schedule.warmup_steps " + std::to_string(s.warmup_steps) +
                    " leaves none of the run's " + std::to_string(s.total_steps) +
                    " steps for the cosine: lower warmup_steps, or give the cosine's length as "
                    "train.optimizer.schedule.steps");
  }

  double learning_rate(int64_t step) const { return config_.train.optimizer.rate_at(step); }

  // Whether a checkpoint is written once `steps` steps are done
  // (train.checkpoint_every).
  bool checkpoint_due(int64_t steps) const { return tc_.checkpoint_every > 0 && steps % tc_.checkpoint_every == 0; }

  // Runs attempts until one ends; a worker failure starts another, from
  // the newest checkpoint, while train.max_restarts allows.
  int run() {
    // micro_batches auto predicts from measured op times: what the
    // calibration cache lacks for this machine is measured first.
    if (config_.train.auto_micro_batches()) calibrate(config_, options_, {}, calibration_path(options_), std::cerr);
    metrics_ = replica_.writes_outputs()
                   ? std::make_unique<MetricsLog>(outputs_.metrics, outputs_.config_copy, config_.resolved_yaml)
                   : std::make_unique<MetricsLog>("", "", "");
    bool resume = options_.resume;
    for (;;) {
      try {
        return attempt(resume);
      } catch (const WorkerFailed& e) {
        if (interrupted() || restarts_ >= tc_.max_restarts) {
          std::string what = e.what();
          if (restarts_ > 0)
            what += " (gave up after " + std::to_string(restarts_) + " restarts; train.max_restarts is " +
                    std::to_string(tc_.max_restarts) + ")";
          // A checkpoint this run wrote (on another host: sent to rank 0's
          // file) or resumed from is where the job continues.
          if (!interrupted() && (saved_ || last_saved_step_ >= 0 || options_.resume))
            what += "\ndevmap: the newest checkpoint is " + store_.path() + "; resume with: " + options_.resume_command;
          throw WorkerFailed(what);
        }
        ++restarts_;
        // Resume from this run's own checkpoints (or those it resumed
        // from); without any, start over: the seed makes that the same run.
        resume = options_.resume || saved_;
        std::cerr << "devmap: " << e.what() << "\n"
                  << "devmap: restart " << restarts_ << " of " << tc_.max_restarts << ": relaunching the workers"
                  << (resume ? ", resuming from the newest checkpoint" : ", from the start (no checkpoint yet)")
                  << "\n";
        JsonObject j;
        j.add("event", "restart").add("restart", restarts_).add("max_restarts", tc_.max_restarts);
        j.add("reason", e.what());
        metrics_->write(j);
      }
    }
  }

 private:
  // Every output is checked before anything is read or locked.
  void check_files() const {
    RunFiles files = run_files(config_, outputs_, options_);
    for (const std::string* data :
         {&config_.data.train_images, &config_.data.train_labels, &config_.data.test_images, &config_.data.test_labels})
      files.inputs.push_back({"data file", numpy_file_of(*data)});  // FILE of FILE.npz:KEY
    if (!replica_.writes_outputs()) {  // a replica that writes nothing checks only what it reads
      check_run_files(RunFiles{files.inputs, {}});
      return;
    }
    files.outputs.push_back({"train.checkpoint", outputs_.checkpoint});
    files.outputs.push_back({"train.checkpoint", state_path_for(outputs_.checkpoint)});
    files.outputs.push_back({"train.checkpoint", CheckpointLock::lock_path_for(outputs_.checkpoint)});
    for (const CheckpointFiles& c : store_.list()) {
      files.outputs.push_back({"train.checkpoint", c.weights});
      files.outputs.push_back({"train.checkpoint", c.state});
    }
    if (!options_.trace_path.empty()) files.outputs.push_back({"--trace", options_.trace_path});
    check_run_files(files);
  }

  // A loss that is NaN or infinite: stop (train.stop_on_nonfinite), or
  // say so once and go on.
  void check_loss(float loss, int64_t epoch) {
    if (std::isfinite(loss)) return;
    const std::string value = std::isnan(loss) ? "nan" : "infinite";
    JsonObject j;
    j.add("event", "nonfinite_loss").add("step", step_).add("epoch", epoch).add("loss", value);
    metrics_->write(j);
    if (!tc_.stop_on_nonfinite) {
      if (!nonfinite_reported_)
        std::cerr << "\ndevmap: warning: the loss is " << value << " at step " << step_
                  << "; training goes on (train.stop_on_nonfinite is false), checkpoints with non-finite weights "
                     "are not written\n";
      nonfinite_reported_ = true;
      return;
    }
    std::string newest =
        newest_step_ >= 0 ? "the newest checkpoint is " + store_.path() + " (step " + std::to_string(newest_step_) + ")"
                          : "no checkpoint was written";
    throw_runtime("the loss is " + value + " at step " + std::to_string(step_) + " (epoch " + std::to_string(epoch) +
                  "): training stopped; " + newest +
                  "; lower train.optimizer.learning_rate, or set train.stop_on_nonfinite: false to go on");
  }

  // Why the checkpoint is where it is, for messages.
  std::string checkpoint_origin() const {
    if (!config_.train.checkpoint.empty()) return "train.checkpoint";
    return options_.out_dir.empty() ? "the default; set train.checkpoint or --out-dir" : "--out-dir";
  }

  // One attempt: its own session, from the start or from the newest
  // checkpoint; returns the exit code (stop() after a stop signal).
  int attempt(bool resume) {
    const bool first = attempts_++ == 0;
    Session session(config_, options_, graph_, session_job());
    start_session(session, first);
    WorkerGroup& group = session.workers();
    BatchFeeder feeder(group, session.input(), session.layout(), image_node_, label_node_);
    std::optional<GradientExchange> exchange;  // data-parallel replicas only
    wire_feeder(feeder, session, exchange);
    begin_attempt(group, resume);
    const int64_t start_step = step_;
    const auto run_start = Clock::now();
    for (int64_t epoch = step_ / steps_per_epoch_ + 1; epoch <= tc_.epochs; ++epoch) {
      const std::optional<EpochPlan> plan = plan_epoch(epoch);
      if (!plan) break;  // train.max_steps reached
      if (!train_epoch(feeder, group, session.memory(), *plan)) return stop(group, start_step);
    }
    if (interrupted()) return stop(group, start_step);
    return finish(session, start_step, run_start);
  }

  // The session of an attempt. No step holds more samples than the data set
  // has: slots are sized by what will be fed (a batch_size of 1000000 over
  // 640 samples is one step of 640).
  SessionJob session_job() const {
    const int64_t step_batch = std::min(tc_.batch_size, std::max<int64_t>(train_.count, 1));
    const int64_t eval_batch = std::min(tc_.eval_batch_size, std::max<int64_t>(test_.count, 1));
    return SessionJob::train(step_batch, eval_batch, replica_.hosts);
  }

  // Starts the workers, hooks up the trace and writes the start event; the
  // first attempt also says how the job is placed, cut and run.
  void start_session(Session& session, bool first) {
    if (first && options_.log_placement) log_placement(config_, session.partition(), tc_.batch_size, std::cerr);
    if (first) warn_round_trips(config_, session, tc_.batch_size, std::cerr);
    const JobMemory& memory = session.memory();
    split_ = split_text(memory);
    if (first) {
      for (const std::string& d : describe_recomputes(session.plan().recomputes, session.plan().graph))
        std::cerr << "devmap: memory: " << d << "\n";
      if (!session.plan().recompute_verdict.empty())
        std::cerr << "devmap: memory: " << session.plan().recompute_verdict << "\n";
      for (const std::string& d : memory.decisions) std::cerr << "devmap: memory: " << d << "\n";
      for (const std::string& d : memory.micro_batch_statistics) std::cerr << "devmap: " << d << "\n";
      for (const std::string& line : describe_auto_choice(memory, config_.path))
        std::cerr << "devmap: " << line << "\n";
    }
    session.start();
    attach_trace(trace_.get(), session);
    write_start(session, first);
    if (first) {
      print_banner(session);
      print_run_outputs(outputs_, std::cerr);
    }
  }

  // "devmap: training CONFIG on DEVICES, N parameters, ..."; with
  // data-parallel replicas, a second line: "devmap: data parallel: N
  // replicas, each trains S of every batch of B samples" (or "S or S+1 ...
  // (S+1: replicas 0-K)" where B does not divide evenly). Rank 0 prints it
  // for the job (the other ranks' streams are quiet).
  void print_banner(Session& session) const {
    std::string where;
    for (const std::string& d : session.partition().devices)
      where += (where.empty() ? "" : ", ") + d + " (" + std::to_string(config_.find_device(d)->threads) +
               (config_.find_device(d)->threads == 1 ? " thread)" : " threads)");
    std::cerr << "devmap: training " << config_.path << " on " << where << ", " << graph_.param_count()
              << " parameters, " << train_.count << " training / " << test_.count << " test images\n";
    if (replica_.count > 1) {
      // The first batch_size % count replicas take one sample more (docs/CONFIG.md, data_parallel).
      const int64_t share = tc_.batch_size / replica_.count, more = tc_.batch_size % replica_.count;
      std::cerr << "devmap: data parallel: " << replica_.count << " replicas, each trains "
                << (more == 0 ? std::to_string(share) : std::to_string(share) + " or " + std::to_string(share + 1))
                << " of every batch of " << tc_.batch_size << " samples"
                << (more == 0 ? std::string()
                              : " (" + std::to_string(share + 1) + ": replica" +
                                    (more == 1 ? std::string(" 0") : "s 0-" + std::to_string(more - 1)) + ")")
                << "\n";
    }
  }

  // How the feeder runs the steps: pipelined rounds, data-parallel
  // replicas (`exchange` is made for them), --param-stats, run-ahead.
  void wire_feeder(BatchFeeder& feeder, Session& session, std::optional<GradientExchange>& exchange) {
    const JobMemory& memory = session.memory();
    if (memory.rounds) feeder.set_micro_batches_per_round(memory.pipeline.micro_batches);
    if (replica_.count > 1) {
      if (memory.rounds)
        throw_invalid(config_.path + ": data_parallel.replicas " + std::to_string(replica_.count) +
                      " with pipelined micro-batches (train.pipeline) is not built yet: set "
                      "train.pipeline.micro_batches: 1 or train.pipeline.schedule: none");
      exchange.emplace(session.workers(), session.graph(), session.run().segment_name("grads"),
                       config_.data_parallel.bucket_size, replica_.start_sum);
      feeder.set_replica(replica_.rank, replica_.count, &*exchange);
    }
    if (options_.param_stats) feeder.set_first_step_flags(wire::kParamStats);
    // The workers start a step while the coordinator takes in the one
    // before, unless that one ends in a checkpoint (which needs them idle).
    feeder.set_run_ahead([this](int64_t step) { return !checkpoint_due(step + 1); });
  }

  // Clears what an earlier attempt counted; with `resume`, the workers
  // continue from the newest checkpoint.
  void begin_attempt(WorkerGroup& group, bool resume) {
    step_ = 0;
    epochs_done_ = 0;
    steady_steps_.clear();
    last_loss_ = 0;
    last_eval_ = EvalResult{};
    if (resume)
      resume_from_checkpoint(group);
    else if (!tc_.init_weights.empty())
      load_weights(group, graph_, tc_.init_weights);
  }

  // The steps of one epoch that this attempt runs.
  struct EpochPlan {
    int64_t epoch = 0;           // 1-based
    std::vector<int64_t> order;  // its samples not yet trained, in the epoch's order
    int64_t done_in_epoch = 0;   // its steps that ran before this attempt (a resumed epoch)
    int64_t steps = 0;           // its steps to run now: the rest, or fewer by train.max_steps
  };

  // Epoch `epoch` from the first batch its checkpoint had not run; nullopt
  // when train.max_steps is reached.
  std::optional<EpochPlan> plan_epoch(int64_t epoch) const {
    const bool limited = tc_.max_steps > 0;
    const int64_t budget = limited ? tc_.max_steps - step_ : 0;
    if (limited && budget <= 0) return std::nullopt;
    EpochPlan plan;
    plan.epoch = epoch;
    plan.order = epoch_order(train_.count, tc_.seed, epoch, tc_.shuffle);
    plan.done_in_epoch = step_ - (epoch - 1) * steps_per_epoch_;
    plan.order.erase(plan.order.begin(),
                     plan.order.begin() + std::min<int64_t>(plan.done_in_epoch * tc_.batch_size,
                                                            static_cast<int64_t>(plan.order.size())));
    const int64_t left = steps_per_epoch_ - plan.done_in_epoch;
    plan.steps = limited ? std::min(budget, left) : left;
    return plan;
  }

  // An epoch's running totals as its steps end, and its progress bar.
  struct EpochProgress {
    EpochProgress(const EpochPlan& p, std::string title, int64_t every)
        : plan(p), bar(std::move(title), p.steps, every) {}
    const EpochPlan& plan;
    ProgressBar bar;
    double loss_sum = 0;
    int64_t samples = 0;
    std::vector<double> step_seconds;
    Clock::time_point start = Clock::now(), step_start = start;
  };

  // Trains the steps of `plan`, then evaluates on the test set and reports
  // the epoch. False when a stop signal ended either early.
  bool train_epoch(BatchFeeder& feeder, WorkerGroup& group, const JobMemory& memory, const EpochPlan& plan) {
    EpochProgress progress(plan, "epoch " + std::to_string(plan.epoch) + "/" + std::to_string(tc_.epochs),
                           options_.log_every_given ? options_.log_every : std::max<int64_t>(plan.steps / 10, 1));
    const DeviceBusy busy_before = group.busy();
    const bool complete = feeder.run(
        OrderedSamples{train_, plan.order},
        {.batch_size = tc_.batch_size,
         .micro = memory.split.micro,
         .first_step = step_,
         .flags = wire::kTrain,
         .max_batches = plan.steps},
        [&](int64_t i, int64_t batch, const StepResult& r, uint32_t) { end_step(group, progress, i, batch, r); });
    if (step_ == plan.epoch * steps_per_epoch_) epochs_done_ = plan.epoch;
    if (!complete) return false;
    const double seconds = std::chrono::duration<double>(Clock::now() - progress.start).count();
    const double train_loss = progress.loss_sum / static_cast<double>(std::max<int64_t>(progress.samples, 1));
    progress.bar.finish(progress_status(train_loss, progress.samples, seconds));
    const DeviceBusy epoch_busy = group.busy().since(busy_before);  // the training steps'
    if (!evaluate(feeder, test_, memory.eval_batch, last_eval_)) return false;
    report_epoch(progress, train_loss, seconds, epoch_busy);
    return true;
  }

  // The step callback: counts training step i of the epoch (0-based) of
  // `batch` samples, checks its loss, updates the bar, writes its events and
  // the checkpoint when one is due.
  void end_step(WorkerGroup& group, EpochProgress& p, int64_t i, int64_t batch, const StepResult& r) {
    const auto now = Clock::now();
    p.step_seconds.push_back(std::chrono::duration<double>(now - p.step_start).count());
    p.step_start = now;
    p.loss_sum += static_cast<double>(r.loss) * static_cast<double>(batch);
    p.samples += batch;
    last_loss_ = r.loss;
    ++step_;
    metrics_->begin();
    check_loss(r.loss, p.plan.epoch);
    const double elapsed = std::chrono::duration<double>(now - p.start).count();
    p.bar.update(i + 1, progress_status(p.loss_sum / static_cast<double>(p.samples), p.samples, elapsed) + " lr " +
                            fmt("%.3g", learning_rate(step_)));
    write_step_events(r, p.plan.epoch, p.step_seconds.back());
    if (checkpoint_due(step_)) save(group);
  }

  // The step's param_stats events (--param-stats), and its step event every
  // --log-every steps and at step 1.
  void write_step_events(const StepResult& r, int64_t epoch, double step_seconds) {
    for (const wire::ParamStat& ps : r.param_stats) {
      JsonObject j;
      j.add("event", "param_stats").add("step", step_).add("name", wire::read_name(ps.name));
      j.add("grad_norm", static_cast<double>(ps.grad_norm));
      j.add("update_norm", static_cast<double>(ps.update_norm));
      j.add("value_norm", static_cast<double>(ps.value_norm));
      metrics_->write(j);
    }
    if (step_ % options_.log_every == 0 || step_ == 1) {
      JsonObject j;
      j.add("event", "step").add("step", step_).add("epoch", epoch).add("loss", static_cast<double>(r.loss));
      j.add("lr", learning_rate(step_));
      j.add("step_ms", step_seconds * 1e3).add("compute_ms", r.compute_seconds * 1e3);
      metrics_->write(j);
    }
  }

  // The epoch event and the epoch's line on stdout, after its evaluation.
  void report_epoch(const EpochProgress& p, double train_loss, double seconds, const DeviceBusy& busy) {
    const EpochPlan& plan = p.plan;
    // The median step after a short warm-up: the steady-state speed.
    std::vector<double> steady(
        p.step_seconds.begin() + std::min<ptrdiff_t>(5, static_cast<ptrdiff_t>(p.step_seconds.size()) / 2),
        p.step_seconds.end());
    steady_steps_.insert(steady_steps_.end(), steady.begin(), steady.end());
    const double med = median(steady);
    JsonObject j;
    j.add("event", "epoch").add("epoch", plan.epoch).add("steps", static_cast<int64_t>(p.step_seconds.size()));
    j.add("first_step_in_epoch", plan.done_in_epoch + 1);
    j.add("train_loss", train_loss).add("test_loss", last_eval_.loss);
    if (!metric_name_.empty()) j.add("test_" + metric_name_, last_eval_.metric);
    j.add("images_per_s", static_cast<double>(p.samples) / seconds).add("epoch_seconds", seconds);
    j.add("median_step_ms", med * 1e3)
        .add("median_images_per_s", med > 0 ? static_cast<double>(tc_.batch_size) / med : 0.0);
    add_busy_idle_fields(j, busy);
    metrics_->write(j);
    std::cout << "epoch " << plan.epoch << ": train loss " << fmt("%.4f", train_loss);
    if (plan.done_in_epoch > 0 || plan.steps < steps_per_epoch_)
      std::cout << " (mean of steps " << plan.done_in_epoch + 1 << "-" << plan.done_in_epoch + plan.steps << " of "
                << steps_per_epoch_ << ")";
    std::cout << ", test loss " << fmt("%.4f", last_eval_.loss);
    if (!metric_name_.empty()) std::cout << ", test " << metric_name_ << " " << fmt("%.4f", last_eval_.metric);
    std::cout << std::endl;
  }

  // Every step ran: the last checkpoint, the workers' shutdown, the run's
  // end (run_epilogue.h).
  int finish(Session& session, int64_t start_step, Clock::time_point run_start) {
    WorkerGroup& group = session.workers();
    if (last_saved_step_ != step_) save(group);
    group.shutdown();
    const double seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
    return finish_run(run_end(), group, session.memory(), summary(session, start_step, seconds));
  }

  // The done event's fields and the summary lines of a completed run of
  // `seconds` that began at `start_step`.
  RunSummary summary(Session& session, int64_t start_step, double seconds) const {
    const bool by_max_steps = tc_.max_steps > 0 && step_ < tc_.epochs * steps_per_epoch_;
    // The step time the cost model predicted for this run, against the
    // measured one (the median step after each epoch's warm-up).
    const RunPrediction predicted =
        predict_run_step(config_, options_, session.graph(), session.partition(), session.memory());
    const double measured = median(steady_steps_);
    RunSummary s;
    s.what_ran = [this, start_step, seconds, by_max_steps](JsonObject& j) {
      j.add("steps", step_).add("steps_run", step_ - start_step).add("seconds", seconds);
      j.add("stopped_by", by_max_steps ? "max_steps" : "epochs");
    };
    s.results = [this](JsonObject& j) {
      j.add("final_loss", last_loss_).add("test_loss", last_eval_.loss);
      if (!metric_name_.empty()) j.add("test_" + metric_name_, last_eval_.metric);
      j.add("restarts", restarts_);
    };
    s.estimates = [measured, predicted](JsonObject& j) {
      j.add("measured_step_ms", measured * 1e3).add("predicted_step_ms", predicted.step_seconds * 1e3);
      j.add("predicted_from", predicted.estimated.empty() ? "calibration" : "estimates");
    };
    std::ostringstream headline;
    headline << "done, ";
    if (start_step > 0)
      headline << step_ - start_step << " of " << step_ << " steps (resumed at step " << start_step << ")";
    else
      headline << step_ << " steps";
    headline << " in " << fmt("%.1f", seconds) << " s";
    if (by_max_steps)
      headline << "; stopped by train.max_steps " << tc_.max_steps << " (" << tc_.epochs << " epochs would be "
               << tc_.epochs * steps_per_epoch_ << " steps)";
    headline << "\n";
    s.headline = headline.str();
    s.details = "step time: measured " + fmt("%.1f", measured * 1e3) + " ms (median), predicted " +
                fmt("%.1f", predicted.step_seconds * 1e3) + " ms" +
                (predicted.estimated.empty() ? " from the calibration"
                                             : " from FLOPs estimates (run `" + command_name() + " calibrate " +
                                                   config_.path + "` to measure)") +
                "\n" +
                split_verdict_text(
                    {config_, options_, session.graph(), session.partition(), session.memory(), measured}, std::cerr) +
                "weights: " + store_.path() + "\n";
    return s;
  }

  // After SIGINT or SIGTERM, at a step boundary: checkpoint what was
  // trained, stop the workers, say how to continue.
  int stop(WorkerGroup& group, int64_t start_step) {
    const int sig = interrupt_signal();
    // A second signal before this point means: no checkpoint, stop now.
    if (abort_requested()) throw_runtime("aborted before writing the checkpoint of step " + std::to_string(step_));
    if (step_ > start_step && last_saved_step_ != step_) save(group);
    group.shutdown();
    RunStop s;
    s.where = [this](JsonObject& j) { j.add("step", step_); };
    s.closing = "devmap: interrupted by " + std::string(signal_name(sig)) + " at step " + std::to_string(step_) + "; ";
    if (saved_ || options_.resume)
      s.closing +=
          "the newest checkpoint is " + store_.path() + "\ndevmap: resume with: " + options_.resume_command + "\n";
    else
      s.closing += "no step had run, so there is no checkpoint\n";
    return stop_run(run_end(), sig, s);
  }

  // Where this run's end goes (run_epilogue.h).
  RunEnd run_end() const { return RunEnd{Job::kTrain, options_, *metrics_, trace_.get()}; }

  // Whether this rank reads the checkpoint files: every replica of a
  // data-parallel job does; of a job across hosts, rank 0 does and sends
  // the other hosts their tensors.
  bool reads_checkpoints() const { return replica_.writes_outputs() || !replica_.hosts; }

  void save(WorkerGroup& group) {
    if (!replica_.writes_outputs()) {  // replica 0 writes the job's checkpoints
      // Across hosts, this host's tensors go to rank 0's file.
      if (replica_.hosts)
        save_checkpoint(group, graph_, tc_.optimizer, "", TrainingState{step_, epochs_done_, tc_.seed, split_});
      last_saved_step_ = step_;
      return;
    }
    const std::string weights = store_.weights_for(step_);
    save_checkpoint(group, graph_, tc_.optimizer, weights, TrainingState{step_, epochs_done_, tc_.seed, split_});
    // Non-finite weights never become the newest checkpoint.
    if (std::vector<std::string> bad = nonfinite_tensors(weights); !bad.empty()) {
      store_.discard(step_);
      std::string names;
      for (size_t i = 0; i < bad.size() && i < 5; ++i) names += (i ? ", " : "") + bad[i];
      if (bad.size() > 5) names += " and " + std::to_string(bad.size() - 5) + " more";
      std::cerr << "\ndevmap: warning: not writing the checkpoint of step " << step_
                << ": its weights hold NaN or infinite values (" << names << ")\n";
      JsonObject j;
      j.add("event", "checkpoint_skipped").add("step", step_).add("reason", "non-finite weights: " + names);
      metrics_->write(j);
      last_saved_step_ = step_;
      return;
    }
    store_.commit(step_);
    newest_step_ = step_;
    saved_ = true;
    last_saved_step_ = step_;
    JsonObject j;
    j.add("event", "checkpoint").add("step", step_).add("path", store_.path()).add("step_path", weights);
    metrics_->write(j);
  }

  // How this run cuts a step, as TrainingState::split records it.
  std::string split_text(const JobMemory& memory) const {
    std::string s = memory.split.count > 1
                        ? std::to_string(memory.split.count) + " micro-batches of " + std::to_string(memory.split.micro)
                        : "one batch of " + std::to_string(memory.split.requested);
    if (memory.rounds) s += std::string(", schedule ") + pipeline_kind_name(memory.pipeline.kind);
    s += "; gradient chunks of " + std::to_string(tc_.gradient_chunk) + "; " + std::to_string(replica_.count) +
         (replica_.count == 1 ? " replica" : " replicas");
    return s;
  }

  // The weights, the optimizer state and the step go back into the
  // workers; the data order and dropout masks follow from (seed, epoch,
  // step), so the run continues as if it had never stopped.
  void resume_from_checkpoint(WorkerGroup& group) {
    std::optional<CheckpointFiles> c = reads_checkpoints() ? store_.latest_valid(std::cerr) : CheckpointFiles{};
    if (!c) throw_invalid("--resume: no checkpoint at " + store_.path() + " (train.checkpoint) is whole; see above");
    TrainingState state = load_checkpoint(group, graph_, tc_.optimizer, c->weights);
    if (state.seed != tc_.seed)
      throw_invalid(c->weights + " was trained with seed " + std::to_string(state.seed) + ", the config has " +
                    std::to_string(tc_.seed) + ": resume with the same train.seed");
    if (!state.split.empty() && state.split != split_)
      std::cerr << "devmap: warning: " << c->weights << " was trained with each step as " << state.split
                << "; this run cuts it as " << split_
                << ": the steps from here keep the bits of an uninterrupted run only if both cut the step into "
                   "whole gradient chunks and add them in the same order\n";
    step_ = state.step;
    epochs_done_ = state.epoch;
    last_saved_step_ = step_;
    newest_step_ = step_;
    std::cerr << "devmap: resuming from " << c->weights << " at step " << step_ << " (epoch "
              << step_ / steps_per_epoch_ + 1 << ")\n";
    JsonObject j;
    j.add("event", "resume").add("step", step_).add("path", c->weights);
    metrics_->write(j);
  }

  void write_start(Session& session, bool first) {
    JsonObject start;
    start.add("event", "start")
        .add("job", "train")
        .add("run_id", session.run().run_id())
        .add("config_path", config_.path);
    if (first) start.add("resolved_config", config_.resolved_yaml).add_raw("versions", library_versions_json());
    start.add("attempt", attempts_);
    std::string workers = "[";
    for (const WorkerInfo& w : session.workers().workers()) {
      JsonObject wj;
      wj.add("device", w.device).add("pid", static_cast<int64_t>(w.pid));
      wj.add("params", static_cast<int64_t>(w.param_count)).add("runtime", w.runtime);
      workers += (workers.size() > 1 ? "," : "") + wj.str();
    }
    start.add_raw("workers", workers + "]");
    metrics_->write(start);
    write_memory_plan_event(session.memory(), *metrics_);
  }

  Config config_;  // a copy: the schedule's total steps are resolved into it
  const RunOptions& options_;
  const TrainReplica replica_;
  const Graph& graph_;
  const TrainConfig& tc_;
  RunOutputs outputs_;
  CheckpointStore store_;
  std::optional<CheckpointLock> lock_;  // after the checks of check_files(); replica 0 only
  std::unique_ptr<TraceLog> trace_;     // --trace, or null
  bool nonfinite_reported_ = false;
  int image_node_ = -1, label_node_ = -1;
  std::vector<double> steady_steps_;  // every epoch's step times after its warm-up
  double last_loss_ = 0;              // the loss of the attempt's last step
  EvalResult last_eval_;              // the attempt's last evaluation
  std::string metric_name_;
  Dataset train_, test_;
  int64_t steps_per_epoch_ = 0;
  std::unique_ptr<MetricsLog> metrics_;
  int64_t step_ = 0, epochs_done_ = 0;
  std::string split_;  // how a step is cut (split_text), saved with each checkpoint
  int64_t restarts_ = 0, attempts_ = 0;
  bool saved_ = false;  // this run has written a checkpoint
  int64_t last_saved_step_ = -1;
  int64_t newest_step_ = -1;  // the step of the newest checkpoint: written or resumed from
};

}  // namespace

int run_train(const Config& config, const RunOptions& options, const TrainReplica& replica) {
  Trainer trainer(config, options, replica);
  return trainer.run();
}

}  // namespace devmap
