#include "coordinator/config/overrides.h"

#include <algorithm>

#include "coordinator/config/hosts.h"
#include "coordinator/config/keys.h"
#include "coordinator/config/names.h"
#include "coordinator/config/yaml/scalar.h"
#include "core/graph/op_schema.h"

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
        if (!is_device_name_syntax(part)) fail(bad_device_name_message(part));
      } else if (!contains(*valid, part)) {
        if (scope == "train.optimizer") {
          // Name the keys of the optimizer the config has, not of every type.
          const std::string type = scalar_string(lookup(map, "type")).value_or("sgd");
          fail(unknown_key_message(part, "in train.optimizer (type " + type + ")", config_keys::optimizer_keys(type)));
        }
        fail(unknown_key_message(part, scope.empty() ? "at the top level" : "in " + scope, *valid));
      }
      if (last) {
        if (scope == "train.optimizer" && part == "type") drop_keys_of_other_types(map, value);
        return set_entry(map, part, value);
      }
      const std::string child_scope = scope.empty() ? part : scope + "." + part;
      if (child_scope == "model.ops") {
        set_op_key(child_node(map, part, child_scope), path, i + 1, value);
        return;
      }
      if (child_scope == "device_map.place") {
        // The rest of the path is one pattern, which may hold dots. A new
        // pattern is appended: it comes last in the matching order.
        std::string pattern;
        for (size_t j = i + 1; j < path.size(); ++j) pattern += (j == i + 1 ? "" : ".") + path[j];
        YAML::Node place = child_node(map, part, child_scope);
        return set_entry(place, pattern, value);
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

  // A new optimizer type takes the file's settings that it reads (learning
  // rate, weight decay) and drops those only another type reads (momentum
  // for adam), so --set train.optimizer.type=T works on any config.
  static void drop_keys_of_other_types(YAML::Node& optimizer, const YAML::Node& type) {
    const std::optional<std::string> name = scalar_string(type);
    if (!name || !optimizer.IsMap()) return;
    const std::vector<std::string> keep = config_keys::optimizer_keys(*name);
    std::vector<std::string> drop;
    for (const auto& kv : optimizer)
      if (auto key = scalar_string(kv.first); key && !contains(keep, *key)) drop.push_back(*key);
    for (const std::string& key : drop) optimizer.remove(key);
  }

  // The keys a mapping at `scope` accepts, or nullptr for a leaf value.
  // "devices" accepts device names, checked by the caller.
  static const std::vector<std::string>* children(const std::string& scope) {
    static const std::vector<std::string> kNone;
    if (scope == "model") return &config_keys::kModel;
    if (scope == "data") return &config_keys::kData;
    if (scope == "train") return &config_keys::kTrain;
    if (scope == "train.optimizer") return &config_keys::kOptimizer;
    if (scope == "train.optimizer.schedule") return &config_keys::kSchedule;
    if (scope == "train.pipeline") return &config_keys::kPipeline;
    if (scope == "predict") return &config_keys::kPredict;
    if (scope == "faults") return &config_keys::kFaults;
    if (scope == "coordinator") return &config_keys::kCoordinator;
    if (scope == "data_parallel") return &config_keys::kDataParallel;
    if (scope == "devices") return &kNone;
    if (scope.rfind("devices.", 0) == 0 && scope.find('.', 8) == std::string::npos) return &config_keys::kDevice;
    if (scope == "device_map") return &config_keys::kDeviceMap;
    return nullptr;  // device_map.place and model.ops are handled by apply()
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

  // path[first..] is the name of an op or a group (which may hold dots) and
  // then one key. Ops and groups are found at any depth of groups.
  void set_op_key(const YAML::Node& ops, const std::vector<std::string>& path, size_t first, const YAML::Node& value) {
    std::vector<Named> ops_found, groups_found;
    collect(ops, ops_found, groups_found, 0);
    auto find = [&](const std::string& name) -> const Named* {
      for (const std::vector<Named>* list : {&ops_found, &groups_found})
        for (const Named& n : *list)
          if (n.name == name) return &n;
      return nullptr;
    };
    // The longest run of parts from `first` that names an op or a group.
    const Named* target = nullptr;
    size_t last = path.size();  // index of the name's last part
    for (size_t j = path.size(); j-- > first && !target;) {
      std::string candidate;
      for (size_t i = first; i <= j; ++i) candidate += (i == first ? "" : ".") + path[i];
      if ((target = find(candidate))) last = j;
    }
    if (!target) {
      std::string given;
      for (size_t i = first; i < std::max(first + 1, path.size() - 1); ++i) given += (i == first ? "" : ".") + path[i];
      if (groups_found.empty())
        fail("model.ops has no op named " + quoted(given) + " (ops: " + join_names(names_of(ops_found)) + ")");
      fail("model.ops has no op or group named " + quoted(given) + " (ops: " + join_names(names_of(ops_found)) +
           "; groups: " + join_names(names_of(groups_found)) + ")");
    }
    const std::string& name = target->name;
    if (last + 1 == path.size()) fail("name one of the op's keys: model.ops." + name + ".KEY=VALUE");
    if (last + 2 < path.size())
      fail("model.ops." + name + "." + path[last + 1] + " is a single value, not a mapping with keys");
    const std::string& key = path.back();
    YAML::Node item = target->item;
    std::vector<std::string> valid = config_keys::kGroup;
    std::string who = "group '" + name + "'";
    if (!is_group(item)) {
      valid = config_keys::kOp;
      who = "op '" + name + "'";
      if (auto op = scalar_string(lookup(item, "op"))) {
        if (const OpSchema* schema = find_op(*op)) {
          for (const AttrSpec& spec : schema->attrs) valid.push_back(spec.name);
          who += " (" + schema->name + ")";
        }
      }
    }
    if (!contains(valid, key)) fail(unknown_key_message(key, "in " + who, valid));
    set_entry(item, key, value);
  }

  // An op or a group of model.ops, by name.
  struct Named {
    std::string name;
    YAML::Node item;
  };

  static bool is_group(const YAML::Node& item) { return item.IsMap() && lookup(item, "group").IsDefined(); }

  static std::vector<std::string> names_of(const std::vector<Named>& named) {
    std::vector<std::string> names;
    for (const Named& n : named) names.push_back(n.name);
    return names;
  }

  // Every op and group of `list` and of its groups, in document order.
  // `depth` only guards the recursion; check_yaml_tree has bounded nesting.
  static void collect(const YAML::Node& list, std::vector<Named>& ops, std::vector<Named>& groups, int depth) {
    if (!list.IsSequence() || depth > 64) return;
    for (const YAML::Node& item : list) {
      if (!item.IsMap()) continue;
      if (is_group(item)) {
        if (auto name = scalar_string(lookup(item, "group"))) groups.push_back({*name, item});
        collect(lookup(item, "ops"), ops, groups, depth + 1);
      } else if (auto name = scalar_string(lookup(item, "name"))) {
        ops.push_back({*name, item});
      }
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
