#include "coordinator/run_outputs.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>

namespace devmap {

namespace fs = std::filesystem;

RunOutputs resolve_run_outputs(const Config& config, const RunOptions& options, bool training) {
  const std::string stem = fs::path(config.path).stem().string();
  const fs::path out_dir(options.out_dir);
  RunOutputs o;
  if (training) {
    if (!config.train.checkpoint.empty())
      o.checkpoint = config.train.checkpoint;
    else
      o.checkpoint = ((options.out_dir.empty() ? fs::path("checkpoints") : out_dir) / (stem + ".safetensors")).string();
  }
  if (!options.metrics_path.empty()) {
    o.metrics = options.metrics_path;
  } else if (!options.out_dir.empty()) {
    o.metrics = (out_dir / "metrics.jsonl").string();
  } else {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    o.metrics = "runs/" + stem + "/" + stamp + "-" + std::to_string(::getpid()) + "/metrics.jsonl";
  }
  const fs::path m(o.metrics);
  o.config_copy = (m.parent_path() / (m.stem().string() + ".config.yaml")).string();
  return o;
}

void print_run_outputs(const RunOutputs& outputs, std::ostream& log) {
  log << "devmap: outputs:";
  if (!outputs.checkpoint.empty()) log << " checkpoint " << outputs.checkpoint << ",";
  log << " metrics " << outputs.metrics << ", resolved config " << outputs.config_copy << "\n";
}

}  // namespace devmap
