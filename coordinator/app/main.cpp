// coordinator: reads a config, launches one worker per device, runs the job.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>

#include "coordinator/app/cli.h"
#include "coordinator/app/job_ranks.h"
#include "coordinator/config/loader.h"
#include "coordinator/config/worker_program.h"
#include "coordinator/jobs/calibrate_job.h"
#include "coordinator/jobs/plan_job.h"
#include "coordinator/jobs/predict_job.h"
#include "coordinator/jobs/train_job.h"
#include "coordinator/plan/auto_placement.h"
#include "coordinator/plan/gpu_placement.h"
#include "coordinator/plan/step_costs.h"
#include "coordinator/run/process_limits.h"
#include "coordinator/util/command_name.h"
#include "coordinator/util/progress_bar.h"
#include "coordinator/util/signals.h"
#include "coordinator/util/version.h"
#include "core/base/error.h"
#include "core/exec/cpu_path.h"
#include "core/exec/gemm_library.h"
#ifdef DEVMAP_HAS_ONNX
#include "coordinator/onnx/export_command.h"
#include "coordinator/onnx/import_command.h"
#endif

namespace devmap {
namespace {

// What the command line asks for: train, predict, plan or calibrate.
Job job_of(const CommandLine& cl, const Config& config) {
  return cl.subcommand.empty() ? config.job : *parse_job(cl.subcommand);
}

// The job a rank runs, after the config is loaded and the ranks agree.
int run_job(CommandLine& cl, Config& config, const TrainReplica& replica = {}) {
  const Job job = job_of(cl, config);
  if (job == Job::kCalibrate) return run_calibrate(config, cl.run, cl.calibrate);
  if (job != Job::kPlan) resolve_gpu_placement(config, cl.run, std::cerr);
  // device_map `auto`: the planner places what the user left to it, from
  // op times measured first (train) or as the cache has them.
  std::optional<AutoPlan> auto_plan;
  if (has_auto_placement(config)) {
    if (job == Job::kTrain) calibrate(config, cl.run, {}, calibration_path(cl.run), std::cerr);
    auto_plan = place_automatically(config, cl.run, job == Job::kTrain ? 0 : cl.predict.batch);
    if (job != Job::kPlan) print_auto_placement(*auto_plan, config, std::cerr);
  }
  if (job == Job::kPlan) {
    PlanOptions plan{cl.json,
                     cl.predict.batch,
                     cl.run,
                     cl.dot_path,
                     cl.emit_map_path,
                     auto_plan ? &*auto_plan : nullptr,
                     cl.memory_curve_path};
    return run_plan(config, plan);
  }
  check_process_limits(config);
  if (job == Job::kPredict) return run_predict(config, cl.run, cl.predict, replica.hosts);
  return run_train(config, cl.run, replica);
}

// devmap import / export, where this build has ONNX; else why not (exit 2).
int run_onnx_command(const CommandLine& cl) {
#ifdef DEVMAP_HAS_ONNX
  if (cl.subcommand == "import") return onnx_io::run_import({cl.config_path, cl.predict.output}, std::cout);
  return onnx_io::run_export({cl.config_path, cl.overrides, cl.predict.weights, cl.predict.output}, std::cout);
#else
  throw_invalid("this " + command_name() + " cannot " + cl.subcommand + " ONNX models: " + DEVMAP_NO_ONNX_REASON);
#endif
}

// A rank other than the first prints nothing while it runs (rank 0 reports
// the job); its streams come back for its errors.
class QuietStreams {
 public:
  explicit QuietStreams(bool quiet) {
    if (!quiet) return;
    out_ = std::cout.rdbuf(&null_);
    err_ = std::cerr.rdbuf(&null_);
    ProgressBar::set_quiet(true);
  }
  ~QuietStreams() {
    if (out_) std::cout.rdbuf(out_);
    if (err_) std::cerr.rdbuf(err_);
    ProgressBar::set_quiet(false);
  }
  QuietStreams(const QuietStreams&) = delete;
  QuietStreams& operator=(const QuietStreams&) = delete;

 private:
  struct NullBuffer : std::streambuf {
    int overflow(int c) override { return c == EOF ? 0 : c; }
  } null_;
  std::streambuf *out_ = nullptr, *err_ = nullptr;
};

// What `body` returns, or the exit code of what it threw (the message on
// stderr).
template <class Body>
int exit_code_of(Body body) {
  try {
    return body();
  } catch (const Error& e) {
    if (int sig = interrupt_signal()) {
      std::cerr << "devmap: " << e.what() << "\n"
                << "devmap: interrupted by " << signal_name(sig)
                << " and stopped without a checkpoint; the workers are stopped and the run's files removed\n";
      return 128 + sig;
    }
    // One write: mpirun interleaves the ranks' lines. An empty message was
    // written where it arose (JobRanks::refuse_to_start).
    if (*e.what() != '\0') std::cerr << std::string(e.what()) + "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "devmap: internal error: " << e.what() << "\n";
    return 1;
  }
}

// `code`, unless what went to standard output could not all be written (a
// full disk, a closed pipe's reader gone): then 1, with the reason.
int with_stdout_written(int code) {
  std::cout.flush();
  errno = 0;
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!failed) return code;
  const int err = errno;
  std::cerr << "devmap: writing the results to standard output failed"
            << (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) << "\n";
  return code == 0 ? 1 : code;
}

}  // namespace
}  // namespace devmap

int main(int argc, char** argv) {
  using namespace devmap;
  set_command_name(argc > 0 ? argv[0] : nullptr);
  install_interrupt_handlers();
  return with_stdout_written(exit_code_of([&] {
    CommandLine cl = parse_command_line(argc, argv);
    if (cl.help) {
      std::cout << usage_text(cl.subcommand);
      return 0;
    }
    if (cl.version) {
      std::cout << "devmap " << devmap_version() << "\n";
      return 0;
    }
    if (cl.subcommand == "import" || cl.subcommand == "export") return run_onnx_command(cl);
    // `predict` checks the model as a prediction job: it needs no labels or
    // loss op, whatever the file's job says (a --set job=... still wins).
    if (parse_job(cl.subcommand) == Job::kPredict) cl.overrides.insert(cl.overrides.begin(), "job=predict");
    Config config = load_config(cl.config_path, cl.overrides);
    if (cl.worker_programs) {
      for (const std::string& name : worker_programs(config)) std::cout << name << "\n";
      return 0;
    }
    set_grace_period(std::chrono::milliseconds(static_cast<int64_t>(config.faults.grace_period * 1000)));
    // The CPU workers would fail on a bad DEVMAP_CPU_PATH or DEVMAP_GEMM: say so before any starts.
    cpu_path_from_environment();
    gemm_library_from_environment();
    // A plan runs nothing: it needs no ranks, on one host or several.
    if (parse_job(cl.subcommand) == Job::kPlan) return run_job(cl, config);
    // Every rank of a job across hosts agrees on the config and its hosts;
    // rank 0 runs the job and the others wait for its end.
    JobRanks ranks(&argc, &argv, config);
    ranks.check_job(job_of(cl, config), config);
    int code = 0;
    if (ranks.runs(job_of(cl, config), config))
      code = exit_code_of([&] {
        QuietStreams quiet(!ranks.drives_the_job());
        try {
          return run_job(cl, config,
                         TrainReplica{ranks.rank(), static_cast<int>(config.data_parallel.replicas), ranks.start_sum(),
                                      ranks.stages()});
        } catch (const Error& e) {
          if (ranks.size() == 1) throw;
          throw Error(e.kind(), ranks.where() + ": " + e.what());  // which host failed
        }
      });
    return ranks.finish(code, config);
  }));
}
