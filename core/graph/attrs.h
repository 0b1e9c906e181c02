// Op attributes: the typed key/values a config gives an op (kernel: 5).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace devmap {

enum class AttrType { kInt, kFloat, kString, kIntList, kBool };

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, bool>;

// What an op accepts: the config loader checks types, ranges and required
// keys against these specs, so kernels can trust what they read.
struct AttrSpec {
  std::string name;
  AttrType type;
  bool required = false;
  AttrValue default_value = int64_t{0};
  int64_t min_int = 0;  // for kInt and each kIntList element
  std::string doc;
};

class Attrs {
 public:
  void set(const std::string& key, AttrValue v) { values_[key] = std::move(v); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  int64_t get_int(const std::string& key) const { return std::get<int64_t>(at(key)); }
  double get_float(const std::string& key) const { return std::get<double>(at(key)); }
  bool get_bool(const std::string& key) const { return std::get<bool>(at(key)); }
  const std::string& get_string(const std::string& key) const { return std::get<std::string>(at(key)); }
  const std::vector<int64_t>& get_ints(const std::string& key) const { return std::get<std::vector<int64_t>>(at(key)); }
  const std::map<std::string, AttrValue>& values() const { return values_; }

 private:
  const AttrValue& at(const std::string& key) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace devmap
