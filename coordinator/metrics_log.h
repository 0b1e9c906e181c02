// MetricsLog: the run's JSON-lines file (appended, flushed per line) and the
// resolved config written beside it.
#pragma once

#include <fstream>
#include <string>

#include "coordinator/json_writer.h"

namespace devmap {

class MetricsLog {
 public:
  // Opens `path` for appending, creating its directory; an empty path picks
  // runs/<config stem>/<YYYYmmdd-HHMMSS>-<pid>/metrics.jsonl. Writes
  // `resolved_yaml` to <path without extension>.config.yaml.
  MetricsLog(std::string path, const std::string& config_path, const std::string& resolved_yaml);
  void write(const JsonObject& line);
  const std::string& path() const { return path_; }
  const std::string& config_copy_path() const { return config_copy_; }

 private:
  std::string path_, config_copy_;
  std::ofstream out_;
};

}  // namespace devmap
