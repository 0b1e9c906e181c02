#include "coordinator/plan/calibration_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "coordinator/util/atomic_file.h"
#include "core/base/error.h"

namespace devmap {
namespace {

// The value under `key`, or nullopt.
template <typename Map>
std::optional<typename Map::mapped_type> value_at(const Map& map, const typename Map::key_type& key) {
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

constexpr const char* kHeader = "# devmap calibration v1";

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) fields.push_back(field);
  return fields;
}

// The values an entry may hold: finite, within what a machine can measure.
struct Range {
  const char* what;  // "a time in seconds"
  double low, high;
};
constexpr Range kSeconds{"a time in seconds", 0, 3600};
constexpr Range kSecondsPerParameter{"a time per parameter in seconds", 0, 1e-3};
constexpr Range kLatency{"a latency in seconds", 0, 60};
constexpr Range kBytesPerSecond{"a rate in bytes per second", 0, 1e13};  // 0: too fast to measure
constexpr Range kFlopsPerSecond{"a rate in FLOP/s", 1, 1e17};
constexpr Range kContention{"a contention factor", 0, 100};
constexpr Range kBatch{"a batch size", 1, 1e9};

double number(const std::string& text, const std::string& where, const Range& range) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool whole = &range != &kBatch || v == std::floor(v);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < range.low || v > range.high || !whole) {
    char bounds[64];
    std::snprintf(bounds, sizeof bounds, "%g to %g", range.low, range.high);
    throw_invalid(where + ": '" + text + "' is not " + range.what + " (" + bounds +
                  "): delete the file to calibrate again");
  }
  return v;
}

std::string attr_text(const AttrValue& v) {
  struct Visitor {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", d);
      return buf;
    }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<int64_t>& list) const {
      std::string out = "[";
      for (size_t i = 0; i < list.size(); ++i) out += (i ? "," : "") + std::to_string(list[i]);
      return out + "]";
    }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
  };
  return std::visit(Visitor{}, v);
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", s);
  return buf;
}

}  // namespace

std::string default_calibration_path() {
  if (const char* p = std::getenv("DEVMAP_CALIBRATION_CACHE"); p && *p) return p;
  // A relative XDG_CACHE_HOME is ignored, as the XDG spec says (and as the
  // FMA peak's cache does).
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return std::string(x) + "/devmap/calibration.tsv";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/devmap/calibration.tsv";
}

std::string key_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string op_signature(const Graph& graph, int node) {
  const Node& n = graph.node(node);
  std::string s = n.op() + "(";
  bool first = true;
  for (const auto& [key, value] : n.attrs.values()) {
    s += (first ? "" : ";") + key + "=" + attr_text(value);
    first = false;
  }
  s += ")";
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Node& in = graph.node(n.inputs[i]);
    const bool data = in.schema->fed_by_coordinator();
    s += (i ? " " : " in ") + n.input_shapes[i].to_string() + (data ? "d" : "");
  }
  return s + " out " + n.out_shape.to_string();
}

CalibrationCache CalibrationCache::load(const std::string& path) {
  CalibrationCache cache;
  std::error_code ec;
  const auto type = std::filesystem::status(path, ec).type();
  if (type == std::filesystem::file_type::directory)
    throw_invalid("the calibration cache '" + path + "' is a folder: name the file in it, e.g. " + path +
                  "/calibration.tsv");
  if (type != std::filesystem::file_type::regular && type != std::filesystem::file_type::not_found)
    throw_invalid("the calibration cache '" + path + "' is not a regular file: name a file");
  if (const uintmax_t bytes = type == std::filesystem::file_type::regular ? std::filesystem::file_size(path, ec) : 0;
      !ec && bytes > kMaxFileBytes)
    throw_invalid("the calibration cache '" + path + "' holds " + std::to_string(bytes >> 20) +
                  " MiB, more than devmap writes (at most " + std::to_string(kMaxFileBytes >> 20) +
                  " MiB): delete it to calibrate again");
  std::ifstream in(path);
  if (!in) return cache;
  std::string line;
  int number_of_line = 0;
  while (std::getline(in, line)) {
    ++number_of_line;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows
    if (line.empty() || line[0] == '#') continue;
    const std::string where = path + ":" + std::to_string(number_of_line);
    const std::vector<std::string> f = split_tabs(line);
    if (f[0] == "op" && f.size() == 6) {
      const double batch = number(f[3], where, kBatch);
      cache.ops_[{f[1], f[2], static_cast<int64_t>(batch)}] =
          OpSeconds{number(f[4], where, kSeconds), number(f[5], where, kSeconds)};
    } else if (f[0] == "optimizer" && f.size() == 4) {
      cache.optimizers_[{f[1], f[2]}] = number(f[3], where, kSecondsPerParameter);
    } else if (f[0] == "rate" && f.size() == 3) {
      cache.rates_[f[1]] = number(f[2], where, kFlopsPerSecond);
    } else if (f[0] == "step" && f.size() == 3) {
      cache.step_overhead_[f[1]] = number(f[2], where, kSeconds);
    } else if (f[0] == "contention" && f.size() == 3) {
      cache.contention_[f[1]] = number(f[2], where, kContention);
    } else if (f[0] == "link" && f.size() == 5) {
      cache.links_[{f[1], f[2]}] = LinkCost{number(f[3], where, kLatency), number(f[4], where, kBytesPerSecond)};
    } else {
      throw_invalid(where + ": not a calibration entry (delete the file to calibrate again)");
    }
  }
  return cache;
}

void CalibrationCache::merge_into(CalibrationCache& older) const {
  for (const auto& [k, v] : ops_) older.ops_.insert_or_assign(k, v);
  for (const auto& [k, v] : optimizers_) older.optimizers_.insert_or_assign(k, v);
  for (const auto& [k, v] : links_) older.links_.insert_or_assign(k, v);
  for (const auto& [k, v] : rates_) older.rates_.insert_or_assign(k, v);
  for (const auto& [k, v] : step_overhead_) older.step_overhead_.insert_or_assign(k, v);
  for (const auto& [k, v] : contention_) older.contention_.insert_or_assign(k, v);
}

void CalibrationCache::keep_only(const std::set<std::string>& keys) {
  const auto erase_others = [&](auto& entries, const auto& key_of) {
    std::erase_if(entries, [&](const auto& e) { return !keys.contains(key_of(e.first)); });
  };
  erase_others(ops_, [](const auto& k) { return std::get<0>(k); });
  erase_others(optimizers_, [](const auto& k) { return k.first; });
  erase_others(links_, [](const auto& k) { return k.first; });
  erase_others(rates_, [](const auto& k) { return k; });
  erase_others(step_overhead_, [](const auto& k) { return k; });
  erase_others(contention_, [](const auto& k) { return k; });
}

void CalibrationCache::save(const std::string& path) const {
  // Under a lock on the file's folder (no file of its own is left), what
  // another process saved since this cache was loaded is kept: its
  // entries, with this cache's over them.
  const std::filesystem::path p(path);
  const std::filesystem::path folder = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  const int lock = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  CalibrationCache merged;
  try {
    merged = load(path);
  } catch (const Error&) {
    // a damaged file: this cache replaces it
  }
  merge_into(merged);
  if (merged.size() > kMaxEntries && !measured_keys_.empty()) merged.keep_only(measured_keys_);
  try {
    merged.write(path);
  } catch (...) {
    if (lock >= 0) ::close(lock);
    throw;
  }
  if (lock >= 0) ::close(lock);
}

void CalibrationCache::write(const std::string& path) const {
  std::ostringstream out;
  out << kHeader << "\n";
  for (const auto& [key, s] : ops_)
    out << "op\t" << std::get<0>(key) << "\t" << std::get<1>(key) << "\t" << std::get<2>(key) << "\t"
        << format_seconds(s.forward) << "\t" << format_seconds(s.backward) << "\n";
  for (const auto& [key, s] : optimizers_)
    out << "optimizer\t" << key.first << "\t" << key.second << "\t" << format_seconds(s) << "\n";
  for (const auto& [key, r] : rates_) out << "rate\t" << key << "\t" << format_seconds(r) << "\n";
  for (const auto& [key, o] : step_overhead_) out << "step\t" << key << "\t" << format_seconds(o) << "\n";
  for (const auto& [key, c] : contention_) out << "contention\t" << key << "\t" << format_seconds(c) << "\n";
  for (const auto& [key, c] : links_)
    out << "link\t" << key.first << "\t" << key.second << "\t" << format_seconds(c.latency_s) << "\t"
        << format_seconds(c.bytes_per_s) << "\n";
  write_file_atomically(path, out.str(), "calibration cache");
}

std::optional<OpSeconds> CalibrationCache::op(const std::string& device_key, const std::string& signature,
                                              int64_t batch) const {
  return value_at(ops_, {device_key, key_hash(signature), batch});
}

std::map<int64_t, OpSeconds> CalibrationCache::op_sizes(const std::string& device_key,
                                                        const std::string& signature) const {
  std::map<int64_t, OpSeconds> out;
  const std::string hash = key_hash(signature);
  for (auto it = ops_.lower_bound({device_key, hash, 0}); it != ops_.end(); ++it) {
    if (std::get<0>(it->first) != device_key || std::get<1>(it->first) != hash) break;
    out[std::get<2>(it->first)] = it->second;
  }
  return out;
}

void CalibrationCache::put_op(const std::string& device_key, const std::string& signature, int64_t batch, OpSeconds s) {
  measured_keys_.insert(device_key);
  ops_[{device_key, key_hash(signature), batch}] = s;
}

std::optional<double> CalibrationCache::optimizer(const std::string& device_key, const std::string& optimizer) const {
  return value_at(optimizers_, {device_key, optimizer});
}

void CalibrationCache::put_optimizer(const std::string& device_key, const std::string& optimizer,
                                     double seconds_per_param) {
  measured_keys_.insert(device_key);
  optimizers_[{device_key, optimizer}] = seconds_per_param;
}

std::optional<double> CalibrationCache::rate(const std::string& device_key) const {
  return value_at(rates_, device_key);
}

void CalibrationCache::put_rate(const std::string& device_key, double flops_per_s) {
  measured_keys_.insert(device_key);
  rates_[device_key] = flops_per_s;
}

std::optional<double> CalibrationCache::step_overhead(const std::string& device_key) const {
  return value_at(step_overhead_, device_key);
}

void CalibrationCache::put_step_overhead(const std::string& device_key, double seconds) {
  measured_keys_.insert(device_key);
  step_overhead_[device_key] = seconds;
}

std::optional<double> CalibrationCache::contention(const std::string& devices_key) const {
  return value_at(contention_, devices_key);
}

void CalibrationCache::put_contention(const std::string& devices_key, double contention) {
  measured_keys_.insert(devices_key);
  contention_[devices_key] = contention;
}

std::optional<LinkCost> CalibrationCache::link(const std::string& machine_key, const std::string& from_kind,
                                               const std::string& to_kind) const {
  return value_at(links_, {machine_key, from_kind + "->" + to_kind});
}

void CalibrationCache::put_link(const std::string& machine_key, const std::string& from_kind,
                                const std::string& to_kind, LinkCost cost) {
  measured_keys_.insert(machine_key);
  links_[{machine_key, from_kind + "->" + to_kind}] = cost;
}

}  // namespace devmap
