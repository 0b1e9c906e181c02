// Builds a config's graph from its `model` section.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "coordinator/config/config.h"
#include "coordinator/config/placement.h"
#include "coordinator/config/yaml/source.h"
#include "core/graph/split_op.h"

namespace devmap {

struct ModelGraph {
  Graph graph;                          // shapes inferred; node.device still empty (see place_ops)
  std::vector<DeviceRequest> requests;  // parallel to graph's nodes: the devices the model section asks for
  std::vector<std::string> groups;      // the names of model.ops' groups, in document order
  // Parallel to graph's nodes: each op's `split` (empty: none), to apply
  // with split_ops() once the ops are placed.
  std::vector<std::vector<SplitShare>> splits;
};

// Reads model.ops, its groups flattened away (config_groups.h), in document
// order: checks names (valid, unique), ops (known), attributes (against the
// op's AttrSpecs; absent optional ones are set to their defaults so kernels
// can read every attribute), inputs (defined earlier, as many as the op
// takes) and devices (declared). Then infers shapes, checks that every loss
// and metric op that reads labels (OpSchema::second_input_is_labels) reads
// a labels op with as many classes as its logits, and
// checks the roles `job` needs: one input op, and for "train" one labels op
// and one loss op. Throws devmap::Error (kInvalidInput) located at the
// offending node.
ModelGraph build_model_graph(const YAML::Node& model, const YamlSource& src, Job job,
                             const std::vector<DeviceSpec>& devices);

// The op whose output is the predicted class: an argmax op of the model, or
// one added to `g` on the loss's logits (placed with them).
int prediction_node(Graph& g, const std::string& config_path);

}  // namespace devmap
