#include "coordinator/cli.h"

#include <charconv>

#include "core/error.h"

namespace devmap {

const char* usage_text() {
  return R"(usage: coordinator [SUBCOMMAND] CONFIG [options]

Runs a devmap job: reads CONFIG (YAML: model, data, training settings and
device map), launches one worker process per device and drives the job.

Subcommands:
  train        train the model (the default when the config's job is train);
               saves the weights to train.checkpoint
  predict      predict the class of every image of --input with --weights,
               writing ImageId,Label rows (1-based ids) to --output
  plan         print the memory plan of the config's job and run nothing:
               per device and per op, parameters, gradients, optimizer
               state, activations, workspace and transport slots, how the
               batch is split to fit each memory_limit, and the cut edges
  (none)       run the config's `job`

Options:
  --set KEY=VALUE   override one value of the config, e.g. --set train.epochs=1
                    (dotted path; ops as model.ops.NAME.ATTR); repeatable
  --metrics FILE    append JSON-lines metrics to FILE (default:
                    runs/<config>/<time>-<pid>/metrics.jsonl); the resolved
                    config is written beside it as <FILE stem>.config.yaml
  --log-every N     a step metrics line every N steps (default 100)
  --param-stats     log each parameter's gradient and update norm at step 1
  --log-placement   print the device of every op, then every tensor that
                    crosses devices with its shape and bytes per step, and
                    the bytes per step between each pair of devices
  --profile         time every op in the workers: per op and direction,
                    calls, total ms and GFLOP/s, printed at the end and
                    written to the metrics as "profile" lines (FLOPs as
                    the op defines them: a Winograd conv2d shows its
                    effective rate)
  --resume          (train) continue from train.checkpoint and the training
                    state beside it: weights, optimizer state and step; the
                    losses continue as if the run had never stopped, under
                    any device map
  --worker-dir DIR  where worker_cpu lives (default: beside coordinator, or
                    $DEVMAP_WORKER_DIR)
  --weights FILE    (predict) safetensors weights written by train
  --input FILE      (predict) images: IDX (gzip or plain) or CSV pixel rows
  --output FILE     (predict) where to write the predictions CSV
  --batch N         (predict, plan) images per step (default: predict.batch,
                    else train.eval_batch_size; for plan, the job's batch)
  --json            (plan) print the plan as JSON
  --version         print the version and exit
  -h, --help        this text

Exit status: 0 success, 1 a run failed, 2 bad input (config, data, options),
130 interrupted by SIGINT, 143 by SIGTERM.
Config reference: docs/CONFIG.md
)";
}

namespace {

int64_t parse_positive(const std::string& flag, const std::string& v, int64_t max = int64_t{1} << 62) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > max)
    throw_invalid(flag + " needs an integer from 1 to " + std::to_string(max) + ", got '" + v + "' (see --help)");
  return n;
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine cl;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw_invalid(arg + " needs a value (see --help)");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help")
      cl.help = true;
    else if (arg == "--version")
      cl.version = true;
    else if (arg == "--set")
      cl.overrides.push_back(value());
    else if (arg.rfind("--set=", 0) == 0)
      cl.overrides.push_back(arg.substr(6));
    else if (arg == "--metrics")
      cl.run.metrics_path = value();
    else if (arg == "--log-every")
      cl.run.log_every = parse_positive(arg, value());
    else if (arg == "--param-stats")
      cl.run.param_stats = true;
    else if (arg == "--log-placement")
      cl.run.log_placement = true;
    else if (arg == "--profile")
      cl.run.profile = true;
    else if (arg == "--resume")
      cl.run.resume = true;
    else if (arg == "--weights")
      cl.predict.weights = value();
    else if (arg == "--input")
      cl.predict.input = value();
    else if (arg == "--output")
      cl.predict.output = value();
    else if (arg == "--batch")
      cl.predict.batch = parse_positive(arg, value(), int64_t{1} << 24);
    else if (arg == "--json")
      cl.json = true;
    else if (arg == "--worker-dir")
      cl.run.worker_dir = value();
    else if (arg.size() > 1 && arg[0] == '-')
      throw_invalid("unknown option '" + arg + "' (see --help)");
    else
      positional.push_back(arg);
  }
  if (cl.help || cl.version) return cl;
  static const std::vector<std::string> kSubcommands = {"train", "predict", "plan"};
  if (!positional.empty()) {
    for (const auto& s : kSubcommands)
      if (positional[0] == s) {
        cl.subcommand = s;
        positional.erase(positional.begin());
        break;
      }
  }
  if (positional.empty()) throw_invalid("no config file given (see --help)");
  if (positional.size() > 1) {
    bool looks_like_subcommand = positional[0].find('.') == std::string::npos;
    if (looks_like_subcommand)
      throw_invalid("unknown subcommand '" + positional[0] + "' (known: train, predict, plan)");
    throw_invalid("unexpected argument '" + positional[1] + "' (see --help)");
  }
  cl.config_path = positional[0];
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,") ==
                          std::string::npos;
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cl.run.resume_command += (i ? " " : "") + (plain ? a : quoted + "'");
  }
  if (!cl.run.resume) cl.run.resume_command += " --resume";
  return cl;
}

}  // namespace devmap
