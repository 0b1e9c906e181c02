// MapReader: reads one YAML mapping of the config whose keys come from a
// fixed list, with typed getters that report mistakes as
// "file:line:col: train.batch_size must be an integer, got 'sixty-four'".
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/config/yaml/source.h"

namespace devmap {

// How a mapping and its keys are named in messages.
struct MapScope {
  std::string what;        // the mapping itself: "train", "op 'conv1' (conv2d)"
  std::string where;       // after "unknown key 'x' ": "in train", "at the top level"
  std::string key_prefix;  // a key's label is key_prefix + key + key_suffix:
  std::string key_suffix;  // "train." -> "train.epochs"
};

// An allowed range of a number: lo < x or lo <= x, x < hi or x <= hi.
struct NumberRange {
  double lo = -std::numeric_limits<double>::infinity();
  bool lo_inclusive = true;
  double hi = std::numeric_limits<double>::infinity();
  bool hi_inclusive = true;

  bool contains(double x) const;
  std::string describe() const;  // "> 0", ">= 0", "in [0, 1)"
};

class MapReader {
 public:
  // Fails unless `node` is a mapping (a Null node reads as an empty one)
  // whose keys are all in `valid`.
  MapReader(const YamlSource& src, const YAML::Node& node, MapScope scope, const std::vector<std::string>& valid);

  bool has(const std::string& key) const { return entries_.count(key) != 0; }
  // The value and key nodes of a present key.
  const YAML::Node& value(const std::string& key) const { return entries_.at(key).second; }
  const YAML::Node& key_node(const std::string& key) const { return entries_.at(key).first; }
  // Present keys in file order.
  const std::vector<std::string>& keys() const { return order_; }
  const YAML::Node& node() const { return node_; }
  std::string label(const std::string& key) const { return scope_.key_prefix + key + scope_.key_suffix; }

  // Where a message about `key`'s value points: the value, or the key when
  // the value is empty (an empty value has no position of its own).
  const YAML::Node& anchor(const std::string& key) const;
  // Throws "<prefix> <label(key)> <message>" at anchor(key).
  [[noreturn]] void fail_value(const std::string& key, const std::string& message) const;
  // Throws "missing required key 'k' in <what>" at the mapping, or at 1:1
  // with no "in ..." for the top level (an empty `what`).
  [[noreturn]] void fail_missing(const std::string& key) const;

  // Typed getters: the default when the key is absent; otherwise the value
  // must have the type and lie in the range.
  int64_t get_int(const std::string& key, int64_t def, int64_t lo = std::numeric_limits<int64_t>::min(),
                  int64_t hi = std::numeric_limits<int64_t>::max()) const;
  uint64_t get_uint(const std::string& key, uint64_t def) const;
  double get_number(const std::string& key, double def, NumberRange range = {}) const;
  bool get_bool(const std::string& key, bool def) const;
  std::string get_string(const std::string& key, std::string def) const;
  // One of `choices`: "job must be one of train, predict, got 'fit'".
  std::string get_choice(const std::string& key, std::string def, const std::vector<std::string>& choices) const;

 private:
  const YamlSource& src_;
  YAML::Node node_;
  MapScope scope_;
  std::map<std::string, std::pair<YAML::Node, YAML::Node>> entries_;
  std::vector<std::string> order_;
};

}  // namespace devmap
