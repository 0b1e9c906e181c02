#include "coordinator/telemetry/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"

namespace devmap {

namespace fs = std::filesystem;

MetricsLog::MetricsLog(std::string path, std::string config_copy, std::string resolved_yaml)
    : path_(std::move(path)), config_copy_(std::move(config_copy)), resolved_yaml_(std::move(resolved_yaml)) {}

void MetricsLog::begin() {
  if (begun_) return;
  begun_ = true;
  if (path_.empty()) return;  // a log that writes nothing
  fs::path p(path_);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  out_.open(path_, std::ios::app);
  if (!out_) throw_invalid("cannot open metrics file '" + path_ + "' for appending: " + std::strerror(errno));
  write_file_atomically(config_copy_, resolved_yaml_, "the resolved config");
  for (const std::string& line : held_) out_ << line << "\n";
  held_.clear();
  out_.flush();
  if (!out_) throw_runtime("writing metrics file '" + path_ + "' failed: " + std::strerror(errno));
}

void MetricsLog::write(const JsonObject& line) {
  if (path_.empty()) return;
  if (!begun_) {
    held_.push_back(line.str());
    return;
  }
  out_ << line.str() << "\n";
  out_.flush();
  if (!out_) throw_runtime("writing metrics file '" + path_ + "' failed: " + std::strerror(errno));
}

}  // namespace devmap
