#include "coordinator/jobs/calibrate_job.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "coordinator/data/dataset.h"
#include "coordinator/plan/calibration_cache.h"
#include "coordinator/plan/job_memory.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/run/batch_feeder.h"
#include "coordinator/run/run_outputs.h"
#include "coordinator/run/run_resources.h"
#include "coordinator/run/session.h"
#include "coordinator/telemetry/trace_log.h"
#include "coordinator/util/signals.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "transport/handoff_probe.h"

namespace devmap {
namespace {

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// The config with every op on `device`, its memory_limit lifted, training
// `steps` lock-step steps of `micro_batches` micro-batches of `batch`.
Config single_device(const Config& config, const std::string& device, int64_t batch, int64_t steps,
                     int64_t micro_batches = 1) {
  Config c = config;
  for (int i = 0; i < c.graph.size(); ++i)
    if (!c.graph.node(i).schema->fed_by_coordinator()) c.graph.node(i).device = device;
  for (DeviceSpec& d : c.devices)
    if (d.name == device) d.memory_limit = 0;
  c.train.batch_size = batch * micro_batches;
  c.train.micro_batches = micro_batches;
  c.train.pipeline = PipelineKind::kNone;
  c.train.max_steps = steps;
  return c;
}

// What one calibration run measured: per op, its forward and backward
// slices; the optimizer updates.
struct RunTimes {
  std::map<int, std::vector<double>> forward, backward;
  std::vector<double> update;
  // Per measured step: the coordinator's time from one result to the next
  // less the worker's ops and update (the STEP round trip, the input, the
  // loss and what else a step does besides its ops).
  std::vector<double> overhead;

  void append(const RunTimes& o) {
    for (const auto& [node, v] : o.forward) forward[node].insert(forward[node].end(), v.begin(), v.end());
    for (const auto& [node, v] : o.backward) backward[node].insert(backward[node].end(), v.begin(), v.end());
    update.insert(update.end(), o.update.begin(), o.update.end());
    overhead.insert(overhead.end(), o.overhead.begin(), o.overhead.end());
  }
};

// Each batch size is measured in this many rounds, one round of every size
// after another.
constexpr int kCalibrationRounds = 3;

// A micro-batch of `batch` is measured inside a step of this many, about
// the largest batch's samples, as it runs in a micro-batched step: its ops
// back to back between two updates of the weights (a step of its own
// would put an update, and its trip through every parameter, between any
// two micro-batches).
int64_t micro_batches_at(int64_t batch, int64_t largest) {
  return (largest + batch - 1) / batch;
}

// Per op, its slices of a step divided by the step's micro-batches: the
// time of one micro-batch.
RunTimes measure(const Config& c, const RunOptions& options, const Dataset& data, int warmup, int repeats) {
  const int64_t micro = c.train.micro_batches, batch = c.train.batch_size;
  Session session(c, options, c.graph, SessionJob::train(batch));
  session.start();
  WorkerGroup& group = session.workers();
  TraceLog trace("", TraceSteps{warmup + 1, warmup + repeats}, false);
  trace.describe(session.graph(), session.partition());
  group.set_trace(&trace);
  const int image = c.graph.find_role(OpRole::kImageInput), label = c.graph.find_role(OpRole::kLabelInput);
  BatchFeeder feeder(group, session.input(), session.layout(), image, label);
  const JobMemory& memory = session.memory();
  if (memory.rounds) feeder.set_micro_batches_per_round(memory.pipeline.micro_batches);
  const std::vector<int64_t> order = epoch_order(data.count, c.train.seed, 1, false);
  const int64_t steps = warmup + repeats;
  std::map<int64_t, double> interval;  // by 1-based step, as the trace numbers them
  Clock::time_point last = Clock::now();
  if (!feeder.run(OrderedSamples{data, order},
                  {.batch_size = batch, .micro = memory.split.micro, .flags = wire::kTrain, .max_batches = steps},
                  [&](int64_t step, int64_t, const StepResult&, uint32_t) {
                    const Clock::time_point now = Clock::now();
                    interval[step + 1] = std::chrono::duration<double>(now - last).count();
                    last = now;
                  }))
    throw_runtime("calibration interrupted");
  group.shutdown();
  RunTimes t;
  // Per step, an op's forward (backward, with the sums of its output's
  // gradient) slices add up; then the median over the steps.
  std::map<std::pair<int64_t, int>, double> fwd, bwd;
  std::map<int64_t, double> upd, work;
  trace.for_each_training_event([&](const std::string&, int64_t step, const TraceEvent& e) {
    const double s = static_cast<double>(e.end_ns - e.start_ns) * 1e-9;
    if (e.kind == TraceKind::kForward) fwd[{step, e.id}] += s;
    if (e.kind == TraceKind::kBackward || e.kind == TraceKind::kSumGrads) bwd[{step, e.id}] += s;
    if (e.kind == TraceKind::kOptimizer) upd[step] += s;
    if (e.kind == TraceKind::kForward || e.kind == TraceKind::kBackward || e.kind == TraceKind::kSumGrads ||
        e.kind == TraceKind::kOptimizer)
      work[step] += s;
  });
  for (const auto& [k, s] : fwd) t.forward[k.second].push_back(s / static_cast<double>(micro));
  for (const auto& [k, s] : bwd) t.backward[k.second].push_back(s / static_cast<double>(micro));
  for (const auto& [k, s] : upd) t.update.push_back(s);
  for (const auto& [step, s] : work)
    if (auto it = interval.find(step); it != interval.end()) t.overhead.push_back(std::max(0.0, it->second - s));
  return t;
}

// Another device's worker training its own copy of the model, pass after
// pass over `data`, until stop(): the load the other CPU devices put on the
// host while one is measured. The session is made on the caller's thread;
// only the feeding runs on its own.
class BackgroundLoad {
 public:
  BackgroundLoad(Config c, const RunOptions& options, const Dataset& data, int64_t batch)
      : config_(std::move(c)), session_(config_, options, config_.graph, SessionJob::train(batch)) {
    session_.start();
    const int image = config_.graph.find_role(OpRole::kImageInput);
    const int label = config_.graph.find_role(OpRole::kLabelInput);
    order_ = epoch_order(data.count, config_.train.seed, 1, false);
    thread_ = std::thread([this, &data, batch, image, label] {
      try {
        BatchFeeder feeder(session_.workers(), session_.input(), session_.layout(), image, label);
        for (int64_t first = 0; !stop_; first += data.count / batch)
          if (!feeder.run(OrderedSamples{data, order_},
                          {.batch_size = batch, .micro = batch, .first_step = first, .flags = wire::kTrain},
                          [](int64_t, int64_t, const StepResult&, uint32_t) {}))
            break;
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }
  ~BackgroundLoad() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Ends the load after its pass in flight; rethrows what stopped it early.
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(error_);
    session_.workers().shutdown();
  }

 private:
  Config config_;
  Session session_;
  std::vector<int64_t> order_;
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::thread thread_;
};

// Seconds of the model's forward and backward ops in a measurement: the
// sum of each op's median.
double model_seconds(const RunTimes& t) {
  double seconds = 0;
  for (const auto& [node, v] : t.forward) seconds += median_of(v);
  for (const auto& [node, v] : t.backward) seconds += median_of(v);
  return seconds;
}

constexpr int kContentionRepeats = 10;  // at least: a ratio of two noisy times

// How much the CPU devices slow each other down: the first one's model at
// `batch` measured alone, then while every other CPU device trains its own
// copy, in kCalibrationRounds rounds; the factor c of
// ScheduleRequest::contention, from the median round's together / alone =
// 1 + c x (devices - 1).
double measure_contention(const Config& config, const RunOptions& options, const Dataset& data,
                          const std::vector<const DeviceSpec*>& cpus, int64_t batch, const CalibrateOptions& cal) {
  const int repeats = std::max(cal.repeats, kContentionRepeats);
  const int64_t steps = cal.warmup + repeats;
  const std::string& first = cpus.front()->name;
  std::vector<double> ratios;
  for (int round = 0; round < kCalibrationRounds; ++round) {
    const double alone =
        model_seconds(measure(single_device(config, first, batch, steps), options, data, cal.warmup, repeats));
    std::vector<std::unique_ptr<BackgroundLoad>> others;
    for (size_t i = 1; i < cpus.size(); ++i)
      others.push_back(
          std::make_unique<BackgroundLoad>(single_device(config, cpus[i]->name, batch, 0), options, data, batch));
    const double together =
        model_seconds(measure(single_device(config, first, batch, steps), options, data, cal.warmup, repeats));
    for (auto& o : others) o->stop();
    if (alone > 0) ratios.push_back(together / alone);
  }
  if (ratios.empty()) return 0;
  return std::max(0.0, (median_of(ratios) - 1) / static_cast<double>(cpus.size() - 1));
}

LinkCost measure_link() {
  // The ring and sockets are a run's: a kill -9 now leaves nothing behind.
  const RunResources run;
  const HandoffPlace place{run.segment_prefix(), run.directory()};
  const HandoffTiming small = measure_handoffs(4 << 10, 0.2, place);
  if (interrupt_signal() != 0) throw_runtime("calibration interrupted");
  const HandoffTiming large = measure_handoffs(4 << 20, 0.3, place);
  if (interrupt_signal() != 0) throw_runtime("calibration interrupted");
  LinkCost c;
  const double extra = large.seconds_per_handoff - small.seconds_per_handoff;
  c.bytes_per_s = extra > 0 ? static_cast<double>(large.bytes - small.bytes) / extra : 0;
  c.latency_s = std::max(
      0.0, small.seconds_per_handoff - (c.bytes_per_s > 0 ? static_cast<double>(small.bytes) / c.bytes_per_s : 0.0));
  return c;
}

// One calibration's inputs and the cache it fills; each phase returns how
// many entries it wrote.
struct Calibration {
  const Config& config;
  const RunOptions& options;  // without profile or trace
  const Dataset& data;
  const CalibrateOptions& cal;
  const std::vector<int64_t>& batches;
  int64_t largest = 0;
  CalibrationCache& cache;
  std::ostream& log;

  // The batch sizes whose op times (or the optimizer's) device `key` lacks;
  // all of them with --force.
  std::vector<int64_t> missing_batches(const std::string& key) const {
    const std::string optimizer = optimizer_kind_name(config.train.optimizer.kind);
    std::vector<int64_t> todo;
    for (int64_t batch : batches) {
      bool cached = !cal.force && cache.optimizer(key, optimizer).has_value();
      for (int i = 0; i < config.graph.size() && cached; ++i)
        if (!config.graph.node(i).schema->fed_by_coordinator() && !cache.op(key, op_signature(config.graph, i), batch))
          cached = false;
      if (!cached) todo.push_back(batch);
    }
    return todo;
  }

  // Device d's op times at every missing batch size, measured in rounds
  // over the sizes, so that a slow spell of the machine lands in one round
  // of each size rather than in all steps of one.
  int64_t device_ops(const DeviceSpec& d, const std::string& key) {
    const std::vector<int64_t> todo = missing_batches(key);
    std::map<int64_t, RunTimes> times;
    std::map<int64_t, double> seconds_measuring;
    for (int round = 0; round < kCalibrationRounds; ++round)
      for (int64_t batch : todo) {
        const auto t0 = Clock::now();
        const Config c =
            single_device(config, d.name, batch, cal.warmup + cal.repeats, micro_batches_at(batch, largest));
        times[batch].append(measure(c, options, data, cal.warmup, cal.repeats));
        seconds_measuring[batch] += std::chrono::duration<double>(Clock::now() - t0).count();
      }
    int64_t written = 0;
    for (int64_t batch : todo) {
      written += store(key, batch, times[batch]);
      log << "calibrate: " << d.name << " (" << d.threads << (d.threads == 1 ? " thread" : " threads") << "), batch "
          << batch << ", " << micro_batches_at(batch, largest) << " a step: " << cal.repeats * kCalibrationRounds
          << " steps measured in " << kCalibrationRounds << " rounds, " << fixed1(seconds_measuring[batch]) << " s\n";
    }
    return written;
  }

  // Device `key`'s times at `batch` into the cache: each op's medians, and
  // at the largest batch the device's rate over the whole model (for ops it
  // has no time of) and what a step costs besides its ops; the optimizer's
  // update per parameter.
  int64_t store(const std::string& key, int64_t batch, const RunTimes& t) {
    const Graph& g = config.graph;
    int64_t written = 0;
    for (int i = 0; i < g.size(); ++i) {
      if (g.node(i).schema->fed_by_coordinator()) continue;
      const auto f = t.forward.find(i), b = t.backward.find(i);
      cache.put_op(key, op_signature(g, i), batch,
                   OpSeconds{f == t.forward.end() ? 0.0 : median_of(f->second),
                             b == t.backward.end() ? 0.0 : median_of(b->second)});
      ++written;
    }
    const double seconds = model_seconds(t);
    if (batch == largest && seconds > 0) {
      cache.put_rate(key, g.training_flops(batch) / seconds);
      ++written;
    }
    if (batch == largest && !t.overhead.empty()) {
      cache.put_step_overhead(key, median_of(t.overhead));
      ++written;
    }
    const int64_t params = g.param_count();
    if (params > 0 && !t.update.empty()) {
      cache.put_optimizer(key, optimizer_kind_name(config.train.optimizer.kind),
                          median_of(t.update) / static_cast<double>(params));
      ++written;
    }
    return written;
  }

  // How the CPU devices among `usable` (device name -> key, the devices
  // whose workers run here) slow each other down, when there are two or
  // more and the cache lacks it (or --force).
  int64_t contention(const std::map<std::string, std::string>& usable) {
    std::vector<const DeviceSpec*> cpus;
    std::map<std::string, std::string> cpu_keys;
    for (const DeviceSpec& d : config.devices)
      if (auto k = usable.find(d.name); k != usable.end() && d.kind != DeviceKind::kGpu) {
        cpus.push_back(&d);
        cpu_keys[d.name] = k->second;
      }
    const std::optional<std::string> ck = contention_key(config, cpu_keys);
    if (!ck || (!cal.force && cache.contention(*ck))) return 0;
    const double c = measure_contention(config, options, data, cpus, largest, cal);
    cache.put_contention(*ck, c);
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.0f%%", c * 100);
    log << "calibrate: " << cpus.size() << " CPU devices computing at once: each op takes " << pct
        << " longer per other device busy\n";
    return 1;
  }

  // The handoff between two CPU processes, when the cache lacks it (or --force).
  int64_t link() {
    const std::string machine = key_hash(machine_key_text());
    if (!cal.force && cache.link(machine, "cpu", "cpu")) return 0;
    const LinkCost link = measure_link();
    cache.put_link(machine, "cpu", "cpu", link);
    log << "calibrate: cpu -> cpu handoffs: " << fixed1(link.latency_s * 1e6) << " us + bytes at "
        << fixed1(link.bytes_per_s / 1e9) << " GB/s\n";
    return 1;
  }
};

}  // namespace

std::vector<int64_t> calibration_batches(const Config& config) {
  const int64_t batch = config.train.batch_size;
  // No batch too small for the model's batch statistics (a [C] batch_norm needs 2).
  const int64_t smallest = smallest_trainable_batch(config.graph);
  std::vector<int64_t> out;
  for (int c : micro_batch_candidates(batch, 1, kAutoMaxMicroBatches))
    if (const int64_t b = (batch + c - 1) / c; b >= smallest) out.push_back(b);
  if (out.empty()) out.push_back(batch);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t calibrate(const Config& config, const RunOptions& options, const CalibrateOptions& cal,
                  const std::string& cache_path, std::ostream& log) {
  const std::vector<int64_t> batches = cal.batches.empty() ? calibration_batches(config) : cal.batches;
  const int64_t largest = *std::max_element(batches.begin(), batches.end());
  const int image = config.graph.find_role(OpRole::kImageInput);
  if (image < 0 || config.graph.find_role(OpRole::kLabelInput) < 0)
    throw_invalid(config.path + ": calibration trains the model, so it needs an input and a labels op");
  // What is measured is kept: the cache must be writable before anything runs.
  check_run_files(RunFiles{{}, {{"calibration cache", cache_path}}});
  const Dataset data = load_dataset("train", config.data.train_images, config.data.train_labels,
                                    2 * largest * (cal.warmup + std::max(cal.repeats, kContentionRepeats)),
                                    config.graph.node(image).out_shape);
  // Every measured step needs its own samples: a batch the data cannot fill
  // that often would record nothing (0 s).
  const int64_t steps_needed = cal.warmup + std::max(cal.repeats, kContentionRepeats);
  if (data.count < largest * steps_needed)
    throw_invalid(config.path + ": calibrating batches of " + std::to_string(largest) + " takes " +
                  std::to_string(steps_needed) + " steps of training samples (" +
                  std::to_string(largest * steps_needed) + "), and the data set has " + std::to_string(data.count) +
                  ": calibrate batches of at most " + std::to_string(std::max<int64_t>(data.count / steps_needed, 1)) +
                  " (--batch-sizes)");
  RunOptions quiet = options;
  quiet.profile = false;
  quiet.trace_path.clear();
  CalibrationCache cache = CalibrationCache::load(cache_path);
  Calibration run{.config = config,
                  .options = quiet,
                  .data = data,
                  .cal = cal,
                  .batches = batches,
                  .largest = largest,
                  .cache = cache,
                  .log = log};
  int64_t written = 0;
  std::map<std::string, std::string> usable;  // device name -> its key, for the devices whose worker runs here
  for (const DeviceSpec& d : config.devices) {
    std::string why;
    if (const std::optional<std::string> key = usable_device_key(config, options, d.name, why)) {
      usable[d.name] = *key;
      written += run.device_ops(d, *key);
    } else {
      log << "calibrate: " << d.name << ": skipped: " << why << "\n";
    }
  }
  written += run.contention(usable);
  written += run.link();
  if (written > 0) cache.save(cache_path);
  return written;
}

int run_calibrate(const Config& config, const RunOptions& options, const CalibrateOptions& cal) {
  const std::string path = calibration_path(options);
  const int64_t written = calibrate(config, options, cal, path, std::cerr);
  const CalibrationCache cache = CalibrationCache::load(path);
  std::cout << "calibration: " << path << " (" << written << (written == 1 ? " time" : " times") << " measured now; "
            << cache.size() << " entries in the file)\n";
  // The whole model per device and batch, as the cache now has it.
  const std::vector<int64_t> batches = cal.batches.empty() ? calibration_batches(config) : cal.batches;
  const std::string optimizer = optimizer_kind_name(config.train.optimizer.kind);
  for (const DeviceSpec& d : config.devices) {
    std::string key;
    try {
      key = device_key(config, options, d.name);
    } catch (const Error&) {
      continue;  // said while calibrating
    }
    for (int64_t batch : batches) {
      double forward = 0, backward = 0;
      for (int i = 0; i < config.graph.size(); ++i)
        if (!config.graph.node(i).schema->fed_by_coordinator())
          if (auto s = cache.op(key, op_signature(config.graph, i), batch)) {
            forward += s->forward;
            backward += s->backward;
          }
      const double update =
          cache.optimizer(key, optimizer).value_or(0) * static_cast<double>(config.graph.param_count());
      std::cout << "  " << d.name << " (" << d.threads << (d.threads == 1 ? " thread" : " threads") << "), batch "
                << batch << ": forward " << fixed1(forward * 1e3) << " ms, backward " << fixed1(backward * 1e3)
                << " ms, update " << fixed1(update * 1e3) << " ms\n";
    }
  }
  return 0;
}

}  // namespace devmap
