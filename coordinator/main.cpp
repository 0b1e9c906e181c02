// coordinator: reads a config, launches one worker per device, runs the job.
#include <iostream>

#include "coordinator/cli.h"
#include "coordinator/config.h"
#include "coordinator/gpu_placement.h"
#include "coordinator/plan_job.h"
#include "coordinator/predict_job.h"
#include "coordinator/process_limits.h"
#include "coordinator/signals.h"
#include "coordinator/train_job.h"
#include "core/cpu_path.h"

#ifndef DEVMAP_VERSION
#define DEVMAP_VERSION "dev"
#endif

int main(int argc, char** argv) {
  using namespace devmap;
  install_interrupt_handlers();
  try {
    CommandLine cl = parse_command_line(argc, argv);
    if (cl.help) {
      std::cout << usage_text(cl.subcommand);
      return 0;
    }
    if (cl.version) {
      std::cout << "devmap " << DEVMAP_VERSION << "\n";
      return 0;
    }
    // `predict` checks the model as a prediction job: it needs no labels or
    // loss op, whatever the file's job says (a --set job=... still wins).
    if (cl.subcommand == "predict") cl.overrides.insert(cl.overrides.begin(), "job=predict");
    Config config = load_config(cl.config_path, cl.overrides);
    set_grace_period(std::chrono::milliseconds(static_cast<int64_t>(config.faults.grace_period * 1000)));
    if (cl.subcommand == "plan") return run_plan(config, PlanOptions{cl.json, cl.predict.batch});
    resolve_gpu_placement(config, cl.run, std::cerr);
    check_process_limits(config);
    // The CPU workers would fail on a bad DEVMAP_CPU_PATH: say so before any starts.
    cpu_path_from_environment();
    std::string job = cl.subcommand.empty() ? config.job : cl.subcommand;
    if (job == "predict") return run_predict(config, cl.run, cl.predict);
    return run_train(config, cl.run);
  } catch (const Error& e) {
    if (int sig = interrupt_signal()) {
      std::cerr << "devmap: " << e.what() << "\n"
                << "devmap: interrupted by " << signal_name(sig)
                << " and stopped without a checkpoint; the workers are stopped and the run's files removed\n";
      return 128 + sig;
    }
    std::cerr << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "devmap: internal error: " << e.what() << "\n";
    return 1;
  }
}
