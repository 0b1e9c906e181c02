#include "coordinator/metrics_log.h"

#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "core/error.h"

namespace devmap {

namespace fs = std::filesystem;

MetricsLog::MetricsLog(std::string path, const std::string& config_path, const std::string& resolved_yaml) {
  if (path.empty()) {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    path = "runs/" + fs::path(config_path).stem().string() + "/" + stamp + "-" + std::to_string(::getpid()) +
           "/metrics.jsonl";
  }
  path_ = path;
  fs::path p(path_);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  out_.open(path_, std::ios::app);
  if (!out_) throw_invalid("cannot open metrics file '" + path_ + "' for appending");
  config_copy_ = (p.parent_path() / (p.stem().string() + ".config.yaml")).string();
  std::ofstream cfg(config_copy_, std::ios::trunc);
  cfg << resolved_yaml;
  if (!cfg) throw_invalid("cannot write resolved config to '" + config_copy_ + "'");
}

void MetricsLog::write(const JsonObject& line) {
  out_ << line.str() << "\n";
  out_.flush();
}

}  // namespace devmap
