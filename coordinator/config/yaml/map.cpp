#include "coordinator/config/yaml/map.h"

#include <algorithm>

#include "coordinator/config/yaml/messages.h"
#include "coordinator/config/yaml/scalar.h"
#include "core/base/format_number.h"

namespace devmap {

bool NumberRange::contains(double x) const {
  bool above = lo_inclusive ? x >= lo : x > lo;
  bool below = hi_inclusive ? x <= hi : x < hi;
  return above && below;
}

std::string NumberRange::describe() const {
  const bool has_lo = lo != -std::numeric_limits<double>::infinity();
  const bool has_hi = hi != std::numeric_limits<double>::infinity();
  if (has_lo && has_hi)
    return std::string("in ") + (lo_inclusive ? "[" : "(") + format_number(lo) + ", " + format_number(hi) +
           (hi_inclusive ? "]" : ")");
  if (has_lo) return std::string(lo_inclusive ? ">= " : "> ") + format_number(lo);
  if (has_hi) return std::string(hi_inclusive ? "<= " : "< ") + format_number(hi);
  return "a number";
}

MapReader::MapReader(const YamlSource& src, const YAML::Node& node, MapScope scope,
                     const std::vector<std::string>& valid)
    : src_(src), node_(node), scope_(std::move(scope)) {
  if (node.IsNull()) return;
  if (!node.IsMap()) src.fail(node, scope_.what + " must be a mapping, got " + describe_node(node));
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) src.fail(kv.first, "a key must be a name, got " + describe_node(kv.first));
    const std::string& key = kv.first.Scalar();
    if (std::find(valid.begin(), valid.end(), key) == valid.end())
      src.fail(kv.first, unknown_key_message(key, scope_.where, valid));
    if (!entries_.emplace(key, std::make_pair(kv.first, kv.second)).second)
      src.fail(kv.first, "duplicate key '" + key + "' " + scope_.where);
    order_.push_back(key);
  }
}

const YAML::Node& MapReader::anchor(const std::string& key) const {
  const auto& [k, v] = entries_.at(key);
  return (v.IsNull() && !src_.from_override(v)) ? k : v;
}

void MapReader::fail_value(const std::string& key, const std::string& message) const {
  src_.fail(anchor(key), label(key) + " " + message);
}

void MapReader::fail_missing(const std::string& key) const {
  if (scope_.what.empty()) throw_invalid(src_.start_prefix() + "missing required key '" + key + "'");
  src_.fail(node_, "missing required key '" + key + "' in " + scope_.what);
}

int64_t MapReader::get_int(const std::string& key, int64_t def, int64_t lo, int64_t hi) const {
  if (!has(key)) return def;
  auto v = scalar_int(value(key));
  if (!v) fail_value(key, "must be an integer, got " + describe_node(value(key)));
  if (*v < lo || *v > hi) {
    std::string range = hi == std::numeric_limits<int64_t>::max()
                            ? ">= " + std::to_string(lo)
                            : "between " + std::to_string(lo) + " and " + std::to_string(hi);
    fail_value(key, "must be " + range + ", got " + std::to_string(*v));
  }
  return *v;
}

uint64_t MapReader::get_uint(const std::string& key, uint64_t def) const {
  if (!has(key)) return def;
  if (auto v = scalar_uint(value(key))) return *v;
  if (auto negative = scalar_int(value(key))) fail_value(key, "must be >= 0, got " + std::to_string(*negative));
  fail_value(key, "must be a non-negative integer, got " + describe_node(value(key)));
}

double MapReader::get_number(const std::string& key, double def, NumberRange range) const {
  if (!has(key)) return def;
  auto v = scalar_number(value(key));
  if (!v) fail_value(key, "must be a number, got " + describe_node(value(key)));
  if (!range.contains(*v)) fail_value(key, "must be " + range.describe() + ", got " + value(key).Scalar());
  return *v;
}

bool MapReader::get_bool(const std::string& key, bool def) const {
  if (!has(key)) return def;
  auto v = scalar_bool(value(key));
  if (!v) fail_value(key, "must be true or false, got " + describe_node(value(key)));
  return *v;
}

std::string MapReader::get_string(const std::string& key, std::string def) const {
  if (!has(key)) return def;
  auto v = scalar_string(value(key));
  if (!v) fail_value(key, "must be a string, got " + describe_node(value(key)));
  return *v;
}

std::string MapReader::get_choice(const std::string& key, std::string def,
                                  const std::vector<std::string>& choices) const {
  std::string v = get_string(key, std::move(def));
  if (std::find(choices.begin(), choices.end(), v) == choices.end())
    fail_value(key, "must be one of " + join_names(choices) + ", got " + quoted(v));
  return v;
}

}  // namespace devmap
