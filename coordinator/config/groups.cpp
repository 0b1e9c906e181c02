#include "coordinator/config/groups.h"

#include <map>

#include "coordinator/config/devices.h"
#include "coordinator/config/keys.h"
#include "coordinator/config/names.h"
#include "coordinator/config/yaml/map.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {
namespace {

constexpr size_t kMaxGroupNameLength = 100;  // as for op names

// The device ops inherit from their enclosing groups.
struct Inherited {
  std::string group;   // the group that named it; "" at the top level
  std::string device;  // "" when no enclosing group names one
};

class Flattener {
 public:
  Flattener(const YamlSource& src, const std::vector<DeviceSpec>& devices) : src_(src), devices_(devices) {}

  // `prefix` + "entry N" names the N-th entry of `list` in messages.
  void visit(const YAML::Node& list, const std::string& prefix, const Inherited& inherited) {
    size_t index = 0;
    for (const YAML::Node& item : list) {
      const std::string label = prefix + "entry " + std::to_string(++index);
      if (item.IsMap() && item["group"].IsDefined()) {
        visit_group(item, label, inherited);
      } else {
        out_.ops.push_back({item, label, inherited.group, inherited.device});
      }
    }
  }

  // Checks that no group shares its name with an op; call once all is visited.
  FlatModel finish() {
    std::map<std::string, int> op_lines;  // name -> line of its first definition
    for (const OpEntry& op : out_.ops) {
      if (!op.item.IsMap()) continue;
      const YAML::Node name = op.item["name"];  // const []: a missing key gives an invalid node
      if (name.IsDefined() && name.IsScalar()) op_lines.emplace(name.Scalar(), src_.loc(op.item).line);
    }
    for (const auto& [name, node] : group_names_)
      if (auto op = op_lines.find(name); op != op_lines.end())
        src_.fail(node, "group name '" + name + "' is also the name of an op (line " + std::to_string(op->second) +
                            "): groups and ops need different names");
    return std::move(out_);
  }

 private:
  void visit_group(const YAML::Node& item, const std::string& label, const Inherited& inherited) {
    const std::string name = read_group_name(item["group"], label);
    const std::string who = "group '" + name + "'";
    MapReader map(src_, item, {who, "in " + who, who + " ", ""}, config_keys::kGroup);
    Inherited inner = inherited;
    if (map.has("device")) {
      inner.group = name;
      inner.device = read_declared_device(src_, map.value("device"), map.anchor("device"),
                                          {who + " device", who, "is placed on"}, devices_);
    }
    if (!map.has("ops")) map.fail_missing("ops");
    const YAML::Node& ops = map.value("ops");
    if (!ops.IsSequence()) map.fail_value("ops", "must be a list of ops and groups, got " + describe_node(ops));
    if (ops.size() == 0) map.fail_value("ops", "must not be empty: list the group's ops");
    visit(ops, who + " ops ", inner);
  }

  std::string read_group_name(const YAML::Node& value, const std::string& label) {
    auto name = scalar_string(value);
    if (!name) src_.fail(value, label + " group must be a name, got " + describe_node(value));
    if (!is_valid_op_name(*name))
      src_.fail(value, "group name " + quoted(*name) +
                           " is not valid: use letters, digits, '_', '.' and '-', starting with a letter or '_'");
    if (name->size() > kMaxGroupNameLength)
      src_.fail(value, "group name " + quoted(*name) + " is longer than " + std::to_string(kMaxGroupNameLength) +
                           " characters");
    for (const auto& [other, node] : group_names_)
      if (other == *name)
        src_.fail(value, "duplicate group name '" + *name + "' (first defined at line " +
                             std::to_string(src_.loc(node).line) + ")");
    group_names_.emplace_back(*name, value);
    out_.groups.push_back(*name);
    return *name;
  }

  const YamlSource& src_;
  const std::vector<DeviceSpec>& devices_;
  FlatModel out_;
  std::vector<std::pair<std::string, YAML::Node>> group_names_;  // name and where it was written
};

}  // namespace

FlatModel flatten_model_ops(const YAML::Node& ops, const YamlSource& src, const std::vector<DeviceSpec>& devices) {
  Flattener flattener(src, devices);
  flattener.visit(ops, "model.ops ", {});
  return flattener.finish();
}

}  // namespace devmap
