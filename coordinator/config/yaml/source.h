// YamlSource: where each node of a config's YAML tree came from, so that
// every message can start with "file:line:col: " (1-based) or, for a value
// given on the command line, "--set KEY=VALUE: ".
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"

namespace devmap {

class YamlSource {
 public:
  explicit YamlSource(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // Records that `node` and everything under it came from `--set text`.
  // Later registrations win over earlier ones.
  void add_override(const YAML::Node& node, std::string text);

  // True when `node` came from an override.
  bool from_override(const YAML::Node& node) const { return override_of(node) != nullptr; }

  // The message prefix for a problem at `node`: "--set KEY=VALUE: " when the
  // node came from an override, else "file:line:col: " (1:1 when the node
  // has no position, e.g. one the loader created).
  std::string prefix(const YAML::Node& node) const;
  // "file:1:1: ": for problems of the file as a whole.
  std::string start_prefix() const { return file_ + ":1:1: "; }
  // A SourceLoc for graph nodes; for a node from an override, the file is
  // "--set KEY=VALUE" and the position is inside VALUE.
  SourceLoc loc(const YAML::Node& node) const;

  // Throws devmap::Error (kInvalidInput) with prefix(node) + message.
  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const;

 private:
  const std::string* override_of(const YAML::Node& node) const;

  std::string file_;
  std::vector<std::pair<YAML::Node, std::string>> overrides_;
};

}  // namespace devmap
