#include "coordinator/config/model.h"

#include <map>

#include "coordinator/config/devices.h"
#include "coordinator/config/groups.h"
#include "coordinator/config/keys.h"
#include "coordinator/config/names.h"
#include "coordinator/config/split.h"
#include "coordinator/config/yaml/map.h"
#include "coordinator/config/yaml/messages.h"
#include "coordinator/config/yaml/scalar.h"

namespace devmap {
namespace {

constexpr size_t kMaxOpNameLength = 100;

// Reads one op entry of model.ops; `all_names` maps every op name in the
// model to its line, for "defined after it" messages.
class OpBuilder {
 public:
  OpBuilder(const YamlSource& src, const Graph& graph, const std::map<std::string, int>& all_names,
            const std::vector<DeviceSpec>& devices)
      : src_(src), graph_(graph), all_names_(all_names), devices_(devices) {}

  // The op, the device it names itself ("" when none) in `own_device` and
  // the parts of its `split` (none when absent) in `split`.
  Node build(const OpEntry& op, std::string& own_device, std::vector<SplitShare>& split) {
    const YAML::Node& item = op.item;
    const std::string& entry = op.label;
    if (!item.IsMap())
      src_.fail(item, entry + " must be a mapping such as {name: relu1, op: relu, inputs: [conv1]}, got " +
                          describe_node(item));
    Node node;
    node.loc = src_.loc(item);
    node.name = read_name(item, entry);
    node.schema = read_schema(item, node.name);
    const std::string who = "op '" + node.name + "' (" + node.schema->name + ")";

    std::vector<std::string> valid = config_keys::kOp;
    for (const AttrSpec& spec : node.schema->attrs) valid.push_back(spec.name);
    MapReader map(src_, item, {who, "in " + who, who + " attribute '", "'"}, valid);
    for (const AttrSpec& spec : node.schema->attrs) node.attrs.set(spec.name, read_attr(map, item, spec, who));
    node.inputs = read_inputs(map, item, node, who);
    const std::string recompute = map.get_choice("recompute", "auto", config_keys::kRecompute);
    node.recompute = recompute == "always"  ? Node::Recompute::kAlways
                     : recompute == "never" ? Node::Recompute::kNever
                                            : Node::Recompute::kAuto;
    own_device = map.has("device")
                     ? read_declared_device(src_, map.value("device"), map.anchor("device"),
                                            {"op '" + node.name + "' device", "op '" + node.name + "'", "is placed on"},
                                            devices_)
                     : "";
    if (map.has("split")) {
      if (map.has("device"))
        src_.fail(map.key_node("device"), "op '" + node.name +
                                              "' has both a device and a split: the split names the devices of its "
                                              "parts; remove one of the two");
      split = read_split(src_, map.key_node("split"), map.value("split"), node, devices_);
    }
    return node;
  }

 private:
  std::string read_name(const YAML::Node& item, const std::string& entry) const {
    const YAML::Node value = item["name"];
    if (!value.IsDefined()) src_.fail(item, entry + " is missing required key 'name'");
    auto name = scalar_string(value);
    if (!name) src_.fail(value, entry + " name must be a string, got " + describe_node(value));
    if (!is_valid_op_name(*name))
      src_.fail(value, "op name " + quoted(*name) +
                           " is not valid: use letters, digits, '_', '.' and '-', starting with a letter or '_'");
    if (name->size() > kMaxOpNameLength)
      src_.fail(value,
                "op name " + quoted(*name) + " is longer than " + std::to_string(kMaxOpNameLength) + " characters");
    if (int previous = graph_.find(*name); previous >= 0)
      src_.fail(value, "duplicate op name '" + *name + "' (first defined at line " +
                           std::to_string(graph_.node(previous).loc.line) + ")");
    return *name;
  }

  const OpSchema* read_schema(const YAML::Node& item, const std::string& name) const {
    const YAML::Node value = item["op"];
    if (!value.IsDefined())
      src_.fail(item, "op '" + name + "' is missing required key 'op' (known: " + join_names(known_op_names()) + ")");
    auto op = scalar_string(value);
    if (!op) src_.fail(value, "op '" + name + "': op must be a string, got " + describe_node(value));
    const OpSchema* schema = find_op(*op);
    if (!schema) {
      const std::vector<std::string> known = known_op_names();
      const auto near = nearest_name(*op, known);
      src_.fail(value, "unknown op " + quoted(*op) + " (" + (near ? "did you mean '" + *near + "'? " : std::string()) +
                           "known: " + join_names(known) + ")");
    }
    return schema;
  }

  AttrValue read_attr(const MapReader& map, const YAML::Node& item, const AttrSpec& spec,
                      const std::string& who) const {
    if (!map.has(spec.name)) {
      if (spec.required) src_.fail(item, who + " is missing required attribute '" + spec.name + "'");
      return spec.default_value;
    }
    switch (spec.type) {
      case AttrType::kInt: return map.get_int(spec.name, 0, spec.min_int);
      case AttrType::kFloat: return map.get_number(spec.name, 0.0);
      case AttrType::kString: return map.get_string(spec.name, "");
      case AttrType::kBool: return map.get_bool(spec.name, false);
      case AttrType::kIntList: return read_int_list(map, spec);
    }
    return spec.default_value;
  }

  std::vector<int64_t> read_int_list(const MapReader& map, const AttrSpec& spec) const {
    const YAML::Node& list = map.value(spec.name);
    if (!list.IsSequence()) map.fail_value(spec.name, "must be a list of integers, got " + describe_node(list));
    if (list.size() == 0) map.fail_value(spec.name, "must not be empty");
    std::vector<int64_t> out;
    for (const YAML::Node& element : list) {
      auto v = scalar_int(element);
      if (!v) src_.fail(element, map.label(spec.name) + " must be a list of integers, got " + describe_node(element));
      if (*v < spec.min_int)
        src_.fail(element, map.label(spec.name) + " must hold integers >= " + std::to_string(spec.min_int) + ", got " +
                               std::to_string(*v));
      out.push_back(*v);
    }
    return out;
  }

  std::vector<int> read_inputs(const MapReader& map, const YAML::Node& item, const Node& node,
                               const std::string& who) const {
    std::vector<int> inputs;
    if (map.has("inputs")) {
      const YAML::Node& list = map.value("inputs");
      if (!list.IsSequence())
        src_.fail(map.anchor("inputs"),
                  who + " inputs must be a list of op names such as [conv1], got " + describe_node(list));
      for (const YAML::Node& element : list) inputs.push_back(resolve_input(element, node.name));
    }
    const int got = static_cast<int>(inputs.size());
    if (!node.schema->accepts_inputs(got)) {
      const YAML::Node& at = map.has("inputs") ? map.anchor("inputs") : item;
      src_.fail(at, who + " takes " + node.schema->inputs_wanted() + ", got " + std::to_string(got));
    }
    return inputs;
  }

  int resolve_input(const YAML::Node& element, const std::string& op_name) const {
    auto name = scalar_string(element);
    if (!name) src_.fail(element, "op '" + op_name + "' inputs must be op names, got " + describe_node(element));
    if (int index = graph_.find(*name); index >= 0) return index;
    const std::string head = "op '" + op_name + "' input " + quoted(*name);
    if (*name == op_name) src_.fail(element, head + " names the op itself");
    if (auto later = all_names_.find(*name); later != all_names_.end())
      src_.fail(element, head + " names an op defined after it (line " + std::to_string(later->second) +
                             "): an op's inputs must be defined before it");
    std::vector<std::string> before;
    for (const Node& n : graph_.nodes()) before.push_back(n.name);
    src_.fail(element, head + " names no op (" +
                           (before.empty() ? std::string("no ops are defined before it")
                                           : "ops defined before it: " + join_names(before)) +
                           ")");
  }

  const YamlSource& src_;
  const Graph& graph_;
  const std::map<std::string, int>& all_names_;
  const std::vector<DeviceSpec>& devices_;
};

void require_role(const Graph& graph, OpRole role, const YamlSource& src, const YAML::Node& ops,
                  const std::string& missing_message) {
  if (graph.find_role(role) < 0) src.fail(ops, missing_message);
}

// Every op that reads labels (second_input_is_labels) reads logits [K] and
// a labels op with K classes.
void check_label_classes(const Graph& graph) {
  for (OpRole role : {OpRole::kLoss, OpRole::kMetric}) {
    for (int i : graph.find_all_role(role)) {
      const Node& op = graph.node(i);
      if (!op.schema->second_input_is_labels) continue;
      const Node& labels = graph.node(op.inputs[1]);
      if (labels.schema->role != OpRole::kLabelInput)
        throw_invalid(op.loc.prefix() + "op '" + op.name + "': its second input must be the labels op, got '" +
                      labels.name + "' (" + labels.op() + ")");
      const int64_t logits = op.input_shapes[0].numel();
      const int64_t classes = labels.attrs.get_int("classes");
      if (logits != classes)
        throw_invalid(op.loc.prefix() + "op '" + op.name + "': logits have " + std::to_string(logits) +
                      " classes but labels '" + labels.name + "' has " + std::to_string(classes));
    }
  }
}

}  // namespace

ModelGraph build_model_graph(const YAML::Node& model_node, const YamlSource& src, Job job,
                             const std::vector<DeviceSpec>& devices) {
  MapReader model(src, model_node, {"model", "in model", "model.", ""}, config_keys::kModel);
  if (!model.has("ops")) model.fail_missing("ops");
  const YAML::Node& ops = model.value("ops");
  if (!ops.IsSequence()) model.fail_value("ops", "must be a list of ops, got " + describe_node(ops));
  if (ops.size() == 0) model.fail_value("ops", "must not be empty: list the model's ops, starting with an input op");

  const FlatModel flat = flatten_model_ops(ops, src, devices);
  std::map<std::string, int> all_names;  // name -> line, first definition wins
  for (const OpEntry& op : flat.ops) {
    if (!op.item.IsMap()) continue;
    const YAML::Node name = op.item["name"];
    if (name.IsDefined() && name.IsScalar()) all_names.emplace(name.Scalar(), src.loc(name).line);
  }

  ModelGraph out;
  out.groups = flat.groups;
  Graph& graph = out.graph;
  OpBuilder builder(src, graph, all_names, devices);
  for (const OpEntry& op : flat.ops) {
    DeviceRequest request{"", op.group, op.group_device};
    std::vector<SplitShare> split;
    graph.add(builder.build(op, request.own, split));
    out.requests.push_back(std::move(request));
    out.splits.push_back(std::move(split));
  }
  graph.infer();
  check_label_classes(graph);

  require_role(graph, OpRole::kImageInput, src, ops,
               "the model has no input op: add one first, e.g. {name: image, op: input, shape: [1, 28, 28]}");
  graph.find_role(OpRole::kLabelInput);  // at most one
  graph.find_role(OpRole::kLoss);        // at most one
  if (job == Job::kTrain) {
    require_role(graph, OpRole::kLabelInput, src, ops,
                 "job is train, but the model has no labels op: add e.g. {name: label, op: labels, classes: 10}");
    require_role(graph, OpRole::kLoss, src, ops,
                 "job is train, but the model has no loss op: add e.g. "
                 "{name: loss, op: softmax_cross_entropy, inputs: [logits, label]}");
  }
  return out;
}

int prediction_node(Graph& g, const std::string& config_path) {
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op() == "argmax") return i;
  int loss = g.find_role(OpRole::kLoss);
  if (loss < 0)
    throw_invalid(config_path + ": predict needs an argmax op, or a softmax_cross_entropy op whose logits to use");
  const Node& logits = g.node(g.node(loss).inputs[0]);
  Node n;
  n.name = "prediction";
  while (g.find(n.name) >= 0) n.name += "_";
  n.schema = find_op("argmax");
  n.inputs = {g.node(loss).inputs[0]};
  n.device = logits.device;
  int id = g.add(std::move(n));
  g.infer();
  return id;
}

}  // namespace devmap
