// Reading the coordinator's JSON-lines metrics in tests: flat fields only.
#pragma once

#include <sys/types.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace devmap::testing {

// The value of "key": in one JSON line, as text ("" when absent); the first
// occurrence, so nested objects' keys are found too.
inline std::string json_field(const std::string& line, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":(\"[^\"]*\"|[^,}\\]]+)");
  if (!std::regex_search(line, m, re)) return "";
  std::string v = m[1];
  return v.size() >= 2 && v.front() == '"' ? v.substr(1, v.size() - 2) : v;
}

// The lines of `text` whose "event" is `event`. Only whole lines count: a
// last line without its newline is one the coordinator is still writing
// (tests read metrics files while runs go on).
inline std::vector<std::string> lines_with(const std::string& text, const std::string& event) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && !in.eof();)
    if (json_field(line, "event") == event) out.push_back(line);
  return out;
}

// The "loss" of every "step" line of the metrics `text`, as written.
inline std::vector<std::string> step_losses_in(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& line : lines_with(text, "step")) out.push_back(json_field(line, "loss"));
  return out;
}

// device -> pid of the workers of the newest attempt (its "start" line) in
// the metrics `text`.
inline std::map<std::string, pid_t> worker_pids_in(const std::string& text) {
  std::map<std::string, pid_t> out;
  auto starts = lines_with(text, "start");
  if (starts.empty()) return out;
  std::regex re("\"device\":\"([^\"]+)\",\"pid\":([0-9]+)");
  const std::string& line = starts.back();
  for (auto it = std::sregex_iterator(line.begin(), line.end(), re); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = static_cast<pid_t>(std::stol((*it)[2]));
  return out;
}

}  // namespace devmap::testing
