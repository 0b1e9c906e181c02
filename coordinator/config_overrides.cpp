#include "coordinator/config_overrides.h"

#include <algorithm>

#include "coordinator/config_keys.h"
#include "coordinator/config_names.h"
#include "coordinator/yaml_scalar.h"

namespace devmap {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

// map[key] without creating it; an undefined node when absent.
YAML::Node lookup(const YAML::Node& map, const std::string& key) {
  if (map.IsMap())
    if (YAML::Node value = map[key]; value.IsDefined()) return value;  // const []: a missing key gives an invalid node
  return YAML::Node(YAML::NodeType::Undefined);
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// One override being applied; every failure names it.
class Override {
 public:
  Override(const std::string& text, YamlSource& src) : text_(text), src_(src) {}

  void apply(YAML::Node& root) {
    const size_t eq = text_.find('=');
    if (eq == std::string::npos) fail("expected KEY=VALUE, e.g. train.epochs=1");
    const std::string key = text_.substr(0, eq);
    const std::vector<std::string> path = split_path(key);
    for (const std::string& part : path)
      if (part.empty()) fail("the key " + quoted(key) + " has an empty part (keys are joined by single dots)");
    YAML::Node value = parse_value(text_.substr(eq + 1));

    YAML::Node map = root;
    const std::vector<std::string>* valid = &config_keys::kTop;
    std::string scope;  // dotted path of `map`, empty at the top level
    for (size_t i = 0; i < path.size(); ++i) {
      const std::string& part = path[i];
      const bool last = i + 1 == path.size();
      if (scope == "devices") {
        if (!parse_device_name(part)) fail(bad_device_name_message(part));
      } else if (!contains(*valid, part)) {
        fail(unknown_key_message(part, scope.empty() ? "at the top level" : "in " + scope, *valid));
      }
      if (last) return set_entry(map, part, value);
      const std::string child_scope = scope.empty() ? part : scope + "." + part;
      if (child_scope == "model.ops") {
        set_op_key(child_node(map, part, child_scope), path, i + 1, value);
        return;
      }
      valid = children(child_scope);
      if (!valid) fail(child_scope + " is a single value, not a mapping with keys");
      map.reset(child_node(map, part, child_scope));  // rebinds; `map = ...` would overwrite the tree
      scope = child_scope;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw_invalid("--set " + one_line(text_) + ": " + one_line(message, message.size()));
  }

  YAML::Node parse_value(const std::string& text) const {
    try {
      return YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      fail("cannot read the value as YAML: " + e.msg);
    }
  }

  // map[key] = value, with the key and the value attributed to this override.
  void set_entry(YAML::Node& map, const std::string& key, const YAML::Node& value) const {
    map[key] = value;
    for (const auto& kv : map)
      if (kv.first.Scalar() == key) src_.add_override(kv.first, text_);
    src_.add_override(map[key], text_);
  }

  // The keys a mapping at `scope` accepts, or nullptr for a leaf value.
  // "devices" accepts device names, checked by the caller.
  static const std::vector<std::string>* children(const std::string& scope) {
    static const std::vector<std::string> kNone;
    if (scope == "model") return &config_keys::kModel;
    if (scope == "data") return &config_keys::kData;
    if (scope == "train") return &config_keys::kTrain;
    if (scope == "train.optimizer") return &config_keys::kOptimizer;
    if (scope == "devices") return &kNone;
    if (scope.rfind("devices.", 0) == 0 && scope.find('.', 8) == std::string::npos) return &config_keys::kDevice;
    if (scope == "device_map") return &config_keys::kDeviceMap;
    return nullptr;
  }

  // map[key] as a mapping (a list for model.ops), created and attributed to
  // this override when absent or empty.
  YAML::Node child_node(YAML::Node& map, const std::string& key, const std::string& scope) const {
    const bool list = scope == "model.ops";
    const YAML::Node existing = lookup(map, key);
    if (existing.IsDefined() && !existing.IsNull()) {
      if (list ? !existing.IsSequence() : !existing.IsMap())
        fail(scope + " is " + describe_node(existing) + ", not a " + (list ? "list" : "mapping"));
      return map[key];
    }
    if (list) fail("the config has no ops to change");
    set_entry(map, key, YAML::Node(YAML::NodeType::Map));
    return map[key];
  }

  // path[first..] is an op name (which may hold dots) and then one key.
  void set_op_key(YAML::Node ops, const std::vector<std::string>& path, size_t first, const YAML::Node& value) {
    std::vector<std::string> names;
    for (const YAML::Node& item : ops)
      if (auto name = scalar_string(lookup(item, "name")); name && item.IsMap()) names.push_back(*name);
    // The longest run of parts from `first` that names an op.
    std::string name;
    size_t last = path.size();  // index of the name's last part
    for (size_t j = path.size(); j-- > first;) {
      std::string candidate;
      for (size_t i = first; i <= j; ++i) candidate += (i == first ? "" : ".") + path[i];
      if (contains(names, candidate)) {
        name = candidate;
        last = j;
        break;
      }
    }
    if (last == path.size()) {
      std::string given;
      for (size_t i = first; i < std::max(first + 1, path.size() - 1); ++i) given += (i == first ? "" : ".") + path[i];
      fail("model.ops has no op named " + quoted(given) + " (ops: " + join_names(names) + ")");
    }
    if (last + 1 == path.size()) fail("name one of the op's keys: model.ops." + name + ".KEY=VALUE");
    if (last + 2 < path.size())
      fail("model.ops." + name + "." + path[last + 1] + " is a single value, not a mapping with keys");
    const std::string& key = path.back();
    for (YAML::Node item : ops) {
      if (!item.IsMap() || scalar_string(lookup(item, "name")) != name) continue;
      std::vector<std::string> valid = config_keys::kOp;
      std::string who = "op '" + name + "'";
      if (auto op = scalar_string(lookup(item, "op"))) {
        if (const OpSchema* schema = find_op(*op)) {
          for (const AttrSpec& spec : schema->attrs) valid.push_back(spec.name);
          who += " (" + schema->name + ")";
        }
      }
      if (!contains(valid, key)) fail(unknown_key_message(key, "in " + who, valid));
      return set_entry(item, key, value);
    }
  }

  const std::string& text_;
  YamlSource& src_;
};

}  // namespace

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, YamlSource& src) {
  for (const std::string& text : overrides) Override(text, src).apply(root);
}

}  // namespace devmap
