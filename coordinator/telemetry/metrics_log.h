// MetricsLog: the run's JSON-lines file (appended, flushed per line) and the
// resolved config written beside it. Nothing is written until the run has
// begun (begin(): its first step or batch is done, or it ends): lines come
// to memory until then, so a run that fails before its first step leaves no
// files behind.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "coordinator/util/json_writer.h"

namespace devmap {

class MetricsLog {
 public:
  // `path`: the metrics file; `config_copy`: where the resolved config goes
  // (run_outputs.h decides both). An empty `path`: a log that writes
  // nothing (a data-parallel replica other than the first).
  MetricsLog(std::string path, std::string config_copy, std::string resolved_yaml);
  // Writes `line` (after begin()) or keeps it for begin().
  void write(const JsonObject& line);
  // Creates the files (and their folder) and writes the lines kept so far;
  // later calls do nothing. Throws devmap::Error when they cannot be written.
  void begin();
  const std::string& path() const { return path_; }
  const std::string& config_copy_path() const { return config_copy_; }

 private:
  std::string path_, config_copy_, resolved_yaml_;
  std::vector<std::string> held_;
  bool begun_ = false;
  std::ofstream out_;
};

}  // namespace devmap
