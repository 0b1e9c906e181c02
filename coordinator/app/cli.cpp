#include "coordinator/app/cli.h"

#include <charconv>
#include <cstdlib>
#include <functional>

#include "coordinator/config/names.h"
#include "coordinator/telemetry/trace_log.h"
#include "coordinator/util/command_name.h"
#include "core/base/error.h"

namespace devmap {
namespace {

// Which subcommands an option applies to.
enum Scope : unsigned {
  kTrain = 1,
  kPredict = 2,
  kPlan = 4,
  kCalibrate = 8,
  kImport = 16,
  kExport = 32,
  kRun = kTrain | kPredict,
  kJobs = kTrain | kPredict | kPlan | kCalibrate,  // the subcommands that run a config's job
  kAll = kJobs | kImport | kExport
};

struct OptionSpec {
  const char* name;  // "--set"
  const char* arg;   // "KEY=VALUE", or nullptr for a flag
  unsigned scope;
  const char* help;  // lines of at most ~58 characters, joined by '\n'
  std::function<void(CommandLine&, const std::string& flag, const std::string& value)> apply;
};

int64_t parse_positive(const std::string& flag, const std::string& v, int64_t max = int64_t{1} << 62) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < 1 || n > max)
    throw_invalid(flag + " needs an integer from 1 to " + std::to_string(max) + ", got '" + v + "' (see --help)");
  return n;
}

const std::vector<OptionSpec>& options() {
  using CL = CommandLine;
  using S = const std::string&;
  static const std::vector<OptionSpec> kOptions = {
      {"--set", "KEY=VALUE", kJobs | kExport,
       "override one value of the config, e.g. --set train.epochs=1\n(dotted path; ops as model.ops.NAME.ATTR); "
       "repeatable",
       [](CL& c, S, S v) { c.overrides.push_back(v); }},
      {"--out-dir", "DIR", kRun,
       "put the run's outputs in DIR: the checkpoint\n(<config stem>.safetensors), metrics.jsonl and\n"
       "metrics.config.yaml (the resolved config); an explicit\n--checkpoint, train.checkpoint or --metrics wins",
       [](CL& c, S, S v) { c.run.out_dir = v; }},
      {"--checkpoint", "FILE", kTrain, "where to save the weights: short for\n--set train.checkpoint=FILE",
       [](CL& c, S, S v) { c.overrides.push_back("train.checkpoint=" + v); }},
      {"--metrics", "FILE", kRun,
       "append JSON-lines metrics to FILE (default:\n<--out-dir>/metrics.jsonl, else\n"
       "runs/<config>/<time>-<pid>/metrics.jsonl); the resolved\nconfig goes beside it as <FILE stem>.config.yaml",
       [](CL& c, S, S v) { c.run.metrics_path = v; }},
      {"--log-every", "N", kTrain,
       "a step metrics line every N steps (default 100); when\nstderr is not a terminal, also a progress line every N\n"
       "steps (default: every tenth of an epoch)",
       [](CL& c, S f, S v) {
         c.run.log_every = parse_positive(f, v);
         c.run.log_every_given = true;
       }},
      {"--param-stats", nullptr, kTrain, "log each parameter's gradient and update norm at step 1",
       [](CL& c, S, S) { c.run.param_stats = true; }},
      {"--log-placement", nullptr, kRun,
       "print the device of every op, then every tensor that\ncrosses devices with its shape and bytes per step, and\n"
       "the bytes per step between each pair of devices",
       [](CL& c, S, S) { c.run.log_placement = true; }},
      {"--profile", nullptr, kRun,
       "time every op in the workers: per op and direction,\ncalls, total ms and GFLOP/s, printed at the end and\n"
       "written to the metrics as \"profile\" lines (FLOPs as\nthe op defines them: a Winograd conv2d shows its\n"
       "effective rate)",
       [](CL& c, S, S) { c.run.profile = true; }},
      {"--trace", "FILE", kRun,
       "write the run's timeline to FILE as Chrome trace-event\nJSON (open it in ui.perfetto.dev or "
       "chrome://tracing):\n"
       "a track per worker and one for the coordinator, a slice\nper op and micro-batch, sends, receives and waits, "
       "and\nan arrow from each send to its receive (docs/TRACING.md)",
       [](CL& c, S, S v) { c.run.trace_path = v; }},
      {"--trace-steps", "A:B", kTrain,
       "trace only training steps A to B (1-based, inclusive;\ndefault: all); an evaluation is traced when the step\n"
       "before it is",
       [](CL& c, S f, S v) {
         const TraceSteps r = parse_trace_steps(f, v);
         c.run.trace_first = r.first;
         c.run.trace_last = r.last;
       }},
      {"--resume", nullptr, kTrain,
       "continue from the checkpoint (train.checkpoint, else\n--out-dir's, else the default) and the training state\n"
       "beside it: weights, optimizer state and step; the\nlosses continue as if the run had never stopped, under\n"
       "any device map",
       [](CL& c, S, S) { c.run.resume = true; }},
      {"--calibration", "FILE", kJobs,
       "the calibration cache of measured op and handoff times\n(default: $DEVMAP_CALIBRATION_CACHE, else\n"
       "~/.cache/devmap/calibration.tsv); read by\nmicro_batches auto, written by calibrate",
       [](CL& c, S, S v) { c.run.calibration_path = v; }},
      {"--batch-sizes", "N,N,...", kCalibrate,
       "the batches to measure every op at (default: the\nmicro-batch sizes micro_batches auto considers for\n"
       "train.batch_size)",
       [](CL& c, S f, S v) {
         c.calibrate.batches.clear();
         size_t at = 0;
         for (;;) {
           const size_t comma = v.find(',', at);
           c.calibrate.batches.push_back(parse_positive(f, v.substr(at, comma - at), int64_t{1} << 24));
           if (comma == std::string::npos) break;
           at = comma + 1;
         }
       }},
      {"--repeats", "N", kCalibrate,
       "measured steps per device, batch size and round (default 5,\nafter 2 warm-up steps; 3 rounds)",
       [](CL& c, S f, S v) { c.calibrate.repeats = static_cast<int>(parse_positive(f, v, 1000)); }},
      {"--force", nullptr, kCalibrate, "measure again what the cache already holds",
       [](CL& c, S, S) { c.calibrate.force = true; }},
      {"--worker-dir", "DIR", kRun | kPlan | kCalibrate,
       "where worker_cpu lives (default: $DEVMAP_WORKER_DIR,\nelse beside this program or in its "
       "installed\n../libexec/devmap)",
       [](CL& c, S, S v) { c.run.worker_dir = v; }},
      {"--weights", "FILE", kPredict | kExport, "safetensors weights written by train",
       [](CL& c, S, S v) { c.predict.weights = v; }},
      {"--input", "FILE", kPredict, "images: IDX (gzip or plain) or CSV pixel rows",
       [](CL& c, S, S v) { c.predict.input = v; }},
      {"--output", "FILE", kPredict | kImport | kExport,
       "predict: where to write the predictions CSV; import:\nthe config to write (default <model stem>.yaml; the\n"
       "weights go beside it as .safetensors); export: the\nONNX file to write",
       [](CL& c, S, S v) { c.predict.output = v; }},
      {"--probabilities", nullptr, kPredict,
       "add each class's probability (the softmax of the\nlogits, or the model's own softmax output; 6\nsignificant "
       "digits) to every row:\n"
       "ImageId,Label,p0,p1,...",
       [](CL& c, S, S) { c.predict.probabilities = true; }},
      {"--batch", "N", kPredict | kPlan,
       "images per step (default: predict.batch, else\ntrain.eval_batch_size; for plan, the job's batch)",
       [](CL& c, S f, S v) { c.predict.batch = parse_positive(f, v, int64_t{1} << 24); }},
      {"--json", nullptr, kPlan, "print the plan as JSON", [](CL& c, S, S) { c.json = true; }},
      {"--dot", "FILE", kPlan,
       "draw the placement with Graphviz: a cluster per device,\nops inside, cut edges labelled with their bytes "
       "per\nstep; FILE.svg or FILE.png is rendered, else DOT text",
       [](CL& c, S, S v) { c.dot_path = v; }},
      {"--emit-map", "FILE", kPlan,
       "write the config with its placement as a plain device\nmap (default + place per op) and the "
       "micro-batches the\nplan runs: a file to read, edit and launch as it is",
       [](CL& c, S, S v) { c.emit_map_path = v; }},
      {"--memory-curve", "FILE", kPlan,
       "write the step time the plan predicts for a range of\nmemory limits of one device (the tightest limit's,\nelse "
       "the largest plan's): FILE.svg (a\n"
       "picture, today's plan marked) and FILE.csv beside it\n(the numbers), or FILE.csv alone",
       [](CL& c, S, S v) { c.memory_curve_path = v; }},
      {"--worker-programs", nullptr, kJobs,
       "print the worker programs the config's devices run,\none a line (worker_cpu, worker_gpu), and exit;\n"
       "scripts/launch.sh builds just those",
       [](CL& c, S, S) { c.worker_programs = true; }},
      {"--version", nullptr, kAll, "print the version and exit", [](CL& c, S, S) { c.version = true; }},
      {"--help", nullptr, kAll, "this text (also -h); SUBCOMMAND --help: its own options",
       [](CL& c, S, S) { c.help = true; }},
  };
  return kOptions;
}

struct SubcommandSpec {
  const char* name;
  unsigned scope;
  const char* summary;
  const char* operand = "CONFIG";  // what the one positional argument is
};

const std::vector<SubcommandSpec>& subcommands() {
  static const std::vector<SubcommandSpec> kSubcommands = {
      {"train", kTrain,
       "train the model (the default when the config's job is\ntrain); saves the weights to the checkpoint (see\n"
       "--out-dir) and prints each epoch's losses and the\nsummary on stdout"},
      {"predict", kPredict,
       "predict the class of every image of --input with\n--weights, writing ImageId,Label rows (1-based ids) to\n"
       "--output"},
      {"plan", kPlan,
       "print the memory plan of the config's job and run\nnothing: per device and per op, parameters, gradients,\n"
       "optimizer state, activations, workspace and transport\nslots, how the batch is split to fit each\n"
       "memory_limit, and the cut edges"},
      {"calibrate", kCalibrate,
       "measure every op of the model, forward and backward, on\nevery declared device at the batch sizes "
       "micro_batches\nauto considers, and the handoff between CPU workers;\nkeeps the times in the calibration "
       "cache (--calibration)"},
      {"import", kImport,
       "import an ONNX model: write a devmap config of its\ngraph (--output) and its weights beside it, for "
       "train\nto start from; lists every node it cannot map, exit 2",
       "MODEL.onnx"},
      {"export", kExport,
       "export the config's forward graph with --weights as an\nONNX model (--output), runnable by ONNX Runtime"},
  };
  return kSubcommands;
}

const SubcommandSpec* find_subcommand(const std::string& name) {
  for (const SubcommandSpec& s : subcommands())
    if (name == s.name) return &s;
  return nullptr;
}

// `text` with every line after the first indented by `indent` spaces.
std::string indented(const std::string& text, size_t indent) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(indent, ' ');
  }
  return out;
}

std::string option_lines(unsigned scope) {
  std::string out;
  for (const OptionSpec& o : options()) {
    if (!(o.scope & scope)) continue;
    std::string head = std::string("  ") + o.name + (o.arg ? std::string(" ") + o.arg : "");
    head.resize(std::max<size_t>(head.size() + 2, 21), ' ');
    out += head + indented(o.help, 21) + "\n";
  }
  return out;
}

const char* kExitStatus =
    "Exit status: 0 success, 1 a run failed, 2 bad input (config, data, options),\n"
    "130 interrupted by SIGINT, 143 by SIGTERM.\n"
    "Config reference: docs/CONFIG.md\n";

}  // namespace

std::string usage_text(const std::string& subcommand) {
  if (const SubcommandSpec* s = find_subcommand(subcommand)) {
    std::string out = "usage: " + command_name() + " " + s->name + " " + s->operand + " [options]\n\n";
    std::string summary = s->summary;
    summary[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(summary[0])));
    out += summary + ".\n\nOptions:\n" + option_lines(s->scope) + "\n" + kExitStatus;
    return out;
  }
  std::string out = "usage: " + command_name() +
                    " [SUBCOMMAND] CONFIG [options]\n\n"
                    "Runs a devmap job: reads CONFIG (YAML: model, data, training settings and\n"
                    "device map), launches one worker process per device and drives the job.\n"
                    "Results go to stdout; progress and diagnostics to stderr.\n\nSubcommands:\n";
  for (const SubcommandSpec& s : subcommands()) {
    std::string head = std::string("  ") + s.name;
    head.resize(15, ' ');
    out += head + indented(s.summary, 15) + "\n";
  }
  out +=
      "  (none)       run the config's `job`\n\nOptions (" + command_name() + " SUBCOMMAND --help lists each one's):\n";
  out += option_lines(kAll) + "\n" + kExitStatus;
  return out;
}

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine cl;
  std::vector<std::string> positional;
  std::vector<std::pair<const OptionSpec*, std::string>> given;  // option, flag as typed
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    std::string value;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
      inline_value = true;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      const OptionSpec* spec = nullptr;
      for (const OptionSpec& o : options())
        if (arg == o.name) spec = &o;
      if (!spec) {
        std::vector<std::string> names;
        for (const OptionSpec& o : options()) names.push_back(o.name);
        if (auto near = nearest_name(arg, names))
          throw_invalid("unknown option '" + arg + "' (did you mean '" + *near + "'? see --help)");
        throw_invalid("unknown option '" + arg + "' (see --help)");
      }
      if (spec->arg && !inline_value) {
        if (i + 1 >= argc) throw_invalid(arg + " needs a value (see --help)");
        value = argv[++i];
      } else if (!spec->arg && inline_value) {
        throw_invalid(arg + " takes no value (see --help)");
      }
      spec->apply(cl, arg, value);
      given.emplace_back(spec, arg);
    } else {
      positional.push_back(arg);
    }
  }
  if (!positional.empty())
    if (const SubcommandSpec* s = find_subcommand(positional[0])) {
      cl.subcommand = s->name;
      positional.erase(positional.begin());
    }
  if (cl.help || cl.version) return cl;
  if (const SubcommandSpec* s = find_subcommand(cl.subcommand))
    for (const auto& [spec, flag] : given)
      if (!(spec->scope & s->scope)) {
        std::string where;
        for (const SubcommandSpec& other : subcommands())
          if (spec->scope & other.scope) where += std::string(where.empty() ? "" : " and ") + other.name;
        throw_invalid(flag + " is an option of " + where + ", not of " + s->name + " (see " + command_name() + " " +
                      s->name + " --help)");
      }
  if (positional.empty()) throw_invalid("no config file given (see --help)");
  if (positional.size() > 1) {
    bool looks_like_subcommand = positional[0].find('.') == std::string::npos;
    if (looks_like_subcommand) {
      std::vector<std::string> names;
      for (const SubcommandSpec& s : subcommands()) names.push_back(s.name);
      std::string msg = "unknown subcommand '" + positional[0] + "' (";
      if (auto near = nearest_name(positional[0], names)) msg += "did you mean '" + *near + "'? ";
      throw_invalid(msg + "known: " + join_names(names) + ")");
    }
    throw_invalid("unexpected argument '" + positional[1] + "' (see --help)");
  }
  cl.config_path = positional[0];
  // scripts/launch.sh names itself, as the user ran it, in DEVMAP_LAUNCH_AS
  // (with --hosts and its hosts): the resume line starts with that rather
  // than with the coordinator's path.
  const char* launched_as = std::getenv("DEVMAP_LAUNCH_AS");
  if (launched_as && *launched_as) cl.run.resume_command = launched_as;
  for (int i = cl.run.resume_command.empty() ? 0 : 1; i < argc; ++i) {
    std::string a = argv[i];
    bool plain =
        !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,") ==
                          std::string::npos;
    std::string quoted_arg = "'";
    for (char c : a) quoted_arg += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cl.run.resume_command += (cl.run.resume_command.empty() ? "" : " ") + (plain ? a : quoted_arg + "'");
  }
  if (!cl.run.resume) cl.run.resume_command += " --resume";
  return cl;
}

}  // namespace devmap
