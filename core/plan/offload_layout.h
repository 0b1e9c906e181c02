// Offloaded parameters (a device's `offload: parameters`): where each
// trained parameter of the device's ops sits in the staging pool, and what
// the device and the host hold. One source for the executor, which
// allocates and places by it, and the memory plan, which charges by it.
//
// An offloaded parameter's value, its gradient and its optimizer state
// live in host memory that the device's memory_limit does not count. The
// device holds one staging pool, allocated before the run, as large as the
// two largest ops' shares together. Before an op runs, its share (each
// offloaded parameter's value, then its gradient, each at a
// cache-line-rounded offset) is copied into the pool while the op before it
// computes: the ops that stage, in the order a pass runs them, take the
// pool's start and its end by turns (staging_offset), so two consecutive
// ones never overlap. Parameters the kernels update themselves
// (ParamSpec::trained false: batch_norm's running statistics) stay on the
// device.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph/graph.h"

namespace devmap {

// One offloaded parameter of an op: its index among Node::params and its
// place in the op's share (bytes from the share's start).
struct StagedParam {
  int param = -1;
  uint64_t value_offset = 0;
  uint64_t grad_offset = 0;  // training only; equal to value_offset otherwise
};

struct OffloadLayout {
  // Per graph node: its offloaded parameters (empty for ops not on the
  // device and ops without trained parameters) and its share's bytes.
  std::vector<std::vector<StagedParam>> by_node;
  std::vector<uint64_t> share_bytes;
  uint64_t staging_bytes = 0;  // the pool: the two largest shares together
  // Host bytes per node: values, gradients and optimizer state, each
  // rounded as an allocation is (charged_bytes).
  std::vector<uint64_t> host_bytes;
  bool empty() const { return staging_bytes == 0; }
  // Where in the pool the k-th op that stages in a pass (0-based) puts
  // `node`'s share: the start for even k, the end for odd k.
  uint64_t staging_offset(int k, int node) const {
    return k % 2 == 0 ? 0 : staging_bytes - share_bytes[static_cast<size_t>(node)];
  }
};

// The layout for the ops `local` marks (per node). training: gradients and
// `optimizer_states` state tensors per parameter exist.
OffloadLayout offload_layout(const Graph& graph, const std::vector<bool>& local, bool training, int optimizer_states);

}  // namespace devmap
