// Small builders for graphs in core tests (no config loader needed).
#pragma once

#include <gtest/gtest.h>

#include "core/graph/graph.h"
#include "core/plan/memory_plan.h"
#include "core/plan/partition.h"
#include "core/plan/program.h"

namespace devmap {

// Builds a node with every attribute at its schema default, then `attrs`.
inline Node make(const std::string& name, const std::string& op, std::vector<int> inputs, Attrs attrs = {}) {
  Node n;
  n.name = name;
  n.schema = find_op(op);
  EXPECT_NE(n.schema, nullptr) << op;
  for (const AttrSpec& s : n.schema->attrs) n.attrs.set(s.name, s.default_value);
  for (const auto& [k, v] : attrs.values()) n.attrs.set(k, v);
  n.inputs = std::move(inputs);
  n.device = "cpu:0";
  return n;
}

inline Attrs with(const std::string& k, AttrValue v) {
  Attrs a;
  a.set(k, std::move(v));
  return a;
}

// The reference CNN of configs/fashion_mnist_cnn.yaml.
inline Graph reference_cnn() {
  Graph g;
  auto conv = [](int64_t filters) {
    Attrs a;
    a.set("filters", filters);
    a.set("kernel", int64_t{5});
    a.set("padding", int64_t{2});
    return a;
  };
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{1, 28, 28})));
  g.add(make("label", "labels", {}, with("classes", int64_t{10})));
  g.add(make("conv1", "conv2d", {0}, conv(32)));
  g.add(make("relu1", "relu", {2}));
  g.add(make("pool1", "max_pool2d", {3}));
  g.add(make("conv2", "conv2d", {4}, conv(64)));
  g.add(make("relu2", "relu", {5}));
  g.add(make("pool2", "max_pool2d", {6}));
  g.add(make("flat", "flatten", {7}));
  g.add(make("fc1", "dense", {8}, with("units", int64_t{1024})));
  g.add(make("relu3", "relu", {9}));
  g.add(make("logits", "dense", {10}, with("units", int64_t{10})));
  g.add(make("loss", "softmax_cross_entropy", {11, 1}));
  g.infer();
  return g;
}

// Two residual blocks with batch_norm and relu, then dropout, on [1, 8, 8]
// images, on cpu:0.
inline Graph residual_blocks() {
  Graph g;
  Attrs conv;
  conv.set("filters", int64_t{4});
  conv.set("kernel", int64_t{3});
  conv.set("padding", int64_t{1});
  g.add(make("image", "input", {}, with("shape", std::vector<int64_t>{1, 8, 8})));
  g.add(make("label", "labels", {}, with("classes", int64_t{10})));
  g.add(make("conv1", "conv2d", {0}, conv));
  g.add(make("bn1", "batch_norm", {2}));
  g.add(make("relu1", "relu", {3}));
  g.add(make("conv2", "conv2d", {4}, conv));
  g.add(make("bn2", "batch_norm", {5}));
  g.add(make("add", "add", {6, 4}));
  g.add(make("relu2", "relu", {7}));
  g.add(make("conv3", "conv2d", {8}, conv));
  g.add(make("bn3", "batch_norm", {9}));
  g.add(make("relu3", "relu", {10}));
  g.add(make("conv4", "conv2d", {11}, conv));
  g.add(make("bn4", "batch_norm", {12}));
  g.add(make("add2", "add", {13, 8}));
  g.add(make("relu4", "relu", {14}));
  g.add(make("drop", "dropout", {15}, with("rate", 0.3)));
  g.add(make("flat", "flatten", {16}));
  g.add(make("fc", "dense", {17}, with("units", int64_t{10})));
  g.add(make("loss", "softmax_cross_entropy", {18, 1}));
  g.infer();
  return g;
}

// The memory plan of `g`'s training program at `batch`, every device at
// `limit` (0: none) with `optimizer_states` state tensors a parameter (and
// its parameters offloaded when `offload`), the graph's image and label fed
// by the coordinator.
inline MemoryPlan training_memory_plan(const Graph& g, int64_t batch, uint64_t limit, int optimizer_states,
                                       bool offload = false) {
  const Program p = build_training_program(g);
  const Partition part = partition_program(g, p);
  PlanInputs in;
  in.graph = &g;
  in.program = &p;
  in.partition = &part;
  for (const std::string& d : part.devices) {
    in.devices.push_back(PlanDevice{d, limit, true, nullptr});
    in.devices.back().offload = offload;
  }
  in.optimizer_states = optimizer_states;
  in.external = {g.find("image"), g.find("label")};
  return plan_memory(in, batch);
}

}  // namespace devmap
