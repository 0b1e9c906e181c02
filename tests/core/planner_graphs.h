// Graphs and device tables for the placement planner's tests and bench:
// multilayer perceptrons (chains), random DAGs with residual adds, and
// synthetic devices (CPU-like, GPU-like) with links.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/placement/request.h"

namespace devmap::planner_test {

inline Node op(const std::string& name, const std::string& kind, std::vector<int> inputs, Attrs attrs = {}) {
  Node n;
  n.name = name;
  n.schema = find_op(kind);
  for (const AttrSpec& s : n.schema->attrs) n.attrs.set(s.name, s.default_value);
  for (const auto& [k, v] : attrs.values()) n.attrs.set(k, v);
  n.inputs = std::move(inputs);
  return n;
}

inline Attrs attr(const std::string& k, AttrValue v) {
  Attrs a;
  a.set(k, std::move(v));
  return a;
}

// input [widths[0]] -> dense widths[1] -> relu -> ... -> dense widths.back()
// -> softmax_cross_entropy (no relu after the last dense).
inline Graph mlp(const std::vector<int64_t>& widths) {
  Graph g;
  g.add(op("x", "input", {}, attr("shape", std::vector<int64_t>{widths[0]})));
  const int labels = g.add(op("y", "labels", {}, attr("classes", widths.back())));
  int last = 0;
  for (size_t k = 1; k < widths.size(); ++k) {
    last = g.add(op("fc" + std::to_string(k), "dense", {last}, attr("units", widths[k])));
    if (k + 1 < widths.size()) last = g.add(op("relu" + std::to_string(k), "relu", {last}));
  }
  g.add(op("loss", "softmax_cross_entropy", {last, labels}));
  g.infer();
  return g;
}

// A random DAG of `ops` computed ops of width `width` (dense, relu, and add
// of two earlier ones), then a dense of 10 units and the loss.
inline Graph random_dag(std::mt19937& rng, int ops, int64_t width) {
  Graph g;
  g.add(op("x", "input", {}, attr("shape", std::vector<int64_t>{width})));
  const int labels = g.add(op("y", "labels", {}, attr("classes", int64_t{10})));
  std::vector<int> made = {0};
  auto recent = [&] {  // biased towards the newest, so most ops are needed
    const int n = static_cast<int>(made.size());
    const int back = std::min(n - 1, static_cast<int>(rng() % 3));
    return made[static_cast<size_t>(n - 1 - back)];
  };
  for (int k = 0; k < ops; ++k) {
    const std::string name = "op" + std::to_string(k);
    const int kind = static_cast<int>(rng() % 3);
    if (kind == 2 && made.size() >= 3) {
      const int a = recent();
      int b = made[1 + rng() % (made.size() - 1)];
      if (b == a) b = made[1];
      if (b == a) b = made.back() == a ? made[made.size() - 2] : made.back();
      made.push_back(g.add(op(name, "add", {a, b})));
    } else if (kind == 1 && made.size() >= 2) {
      made.push_back(g.add(op(name, "relu", {recent()})));
    } else {
      made.push_back(g.add(op(name, "dense", {recent()}, attr("units", width))));
    }
  }
  const int head = g.add(op("head", "dense", {made.back()}, attr("units", int64_t{10})));
  g.add(op("loss", "softmax_cross_entropy", {head, labels}));
  g.infer();
  return g;
}

inline PlannerDevice cpu_like(const std::string& name, uint64_t limit) {
  PlannerDevice d;
  d.name = name;
  d.memory_limit = limit;
  d.rates = DeviceRates{2e10, 1e10, 20e-6};
  return d;
}

inline PlannerDevice gpu_like(const std::string& name, uint64_t limit) {
  PlannerDevice d;
  d.name = name;
  d.host_memory = false;
  d.memory_limit = limit;
  d.rates = DeviceRates{2e12, 1e12, 10e-6};
  return d;
}

// Shared memory between CPU processes; PCIe (about 12 GB/s, 10 us) to and
// from a GPU.
inline std::vector<std::vector<LinkCost>> links_for(const std::vector<PlannerDevice>& devices) {
  std::vector<std::vector<LinkCost>> links(devices.size(), std::vector<LinkCost>(devices.size()));
  for (size_t a = 0; a < devices.size(); ++a)
    for (size_t b = 0; b < devices.size(); ++b) {
      if (a == b) continue;
      const bool pcie = !devices[a].host_memory || !devices[b].host_memory;
      links[a][b] = pcie ? LinkCost{10e-6, 12e9} : LinkCost{30e-6, 8e9};
    }
  return links;
}

}  // namespace devmap::planner_test
