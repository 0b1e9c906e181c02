#include "core/plan/memory_plan.h"

#include <algorithm>
#include <cassert>

#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "core/plan/device_budget.h"
#include "core/plan/offload_layout.h"
#include "core/plan/slot_ring.h"
#include "core/plan/tensor_allocations.h"

namespace devmap {

const OpMemory* DeviceMemoryPlan::largest_op() const {
  const OpMemory* best = nullptr;
  for (const OpMemory& o : ops)
    if (!best || o.total() + o.workspace > best->total() + best->workspace) best = &o;
  return best;
}

const DeviceMemoryPlan* MemoryPlan::find(const std::string& device) const {
  for (const DeviceMemoryPlan& d : devices)
    if (d.device == device) return &d;
  return nullptr;
}

bool MemoryPlan::fits() const {
  return std::all_of(devices.begin(), devices.end(), [](const DeviceMemoryPlan& d) { return d.fits(); });
}

namespace {

const PlanDevice& device_named(const PlanInputs& in, const std::string& name) {
  for (const PlanDevice& d : in.devices)
    if (d.name == name) return d;
  throw_invalid("the memory plan has no description of device '" + name + "'");
}

uint64_t float_bytes(int64_t count) {
  return charged_bytes(static_cast<uint64_t>(count) * sizeof(float));
}

}  // namespace

MemoryPlan plan_memory(const PlanInputs& in, int64_t batch) {
  assert(in.graph && in.program && in.partition && batch >= 1);
  const Graph& g = *in.graph;
  const Program& p = *in.program;
  const Partition& part = *in.partition;
  MemoryPlan plan;
  plan.batch = batch;
  plan.training = p.loss_node >= 0;

  std::vector<int> edge_of(static_cast<size_t>(p.tensor_count()), -1);
  for (const Edge& e : part.edges) {
    edge_of[static_cast<size_t>(e.tensor)] = e.id;
    EdgeMemory em;
    em.id = e.id;
    em.tensor = e.name;
    em.backward = e.backward;
    em.producer = e.producer;
    em.consumers = e.consumers;
    em.shape = e.per_sample.with_batch(batch);
    em.bytes = static_cast<uint64_t>(e.bytes(batch));
    const uint64_t slots =
        in.ring_slots.empty() ? in.edge_slots : static_cast<uint64_t>(in.ring_slots.at(static_cast<size_t>(e.id)));
    em.ring_bytes = slot_ring_bytes(edge_slot_bytes(em.bytes), slots);
    plan.edges.push_back(std::move(em));
  }
  std::vector<bool> external(static_cast<size_t>(g.size()), false);
  for (int n : in.external) external[static_cast<size_t>(n)] = true;

  for (const DeviceProgram& dp : part.programs) {
    const PlanDevice& dev = device_named(in, dp.device);
    DeviceMemoryPlan d;
    d.device = dp.device;
    d.limit = dev.limit;
    std::vector<int> op_index(static_cast<size_t>(g.size()), -1);
    auto op = [&](int node) -> OpMemory& {
      int& k = op_index[static_cast<size_t>(node)];
      if (k < 0) {
        k = static_cast<int>(d.ops.size());
        d.ops.push_back(OpMemory{node, g.node(node).name});
      }
      return d.ops[static_cast<size_t>(k)];
    };
    // Parameters, gradients and optimizer state of the ops that live here:
    // on the device, or offloaded to the host behind the staging pool.
    const OffloadLayout offload =
        dev.offload ? offload_layout(g, dp.local_nodes, plan.training, in.optimizer_states) : OffloadLayout{};
    d.offload_staging = offload.staging_bytes;
    for (int i = 0; i < g.size(); ++i) {
      if (!dp.local_nodes[static_cast<size_t>(i)]) continue;
      if (const uint64_t host = dev.offload ? offload.host_bytes[static_cast<size_t>(i)] : 0) op(i).offloaded = host;
      for (const ParamSpec& spec : g.node(i).params) {
        if (dev.offload && spec.trained) continue;  // counted in `offloaded`
        uint64_t b = float_bytes(spec.shape.numel());
        op(i).params += b;
        if (plan.training && spec.trained) {
          op(i).grads += b;
          op(i).optimizer_state += b * static_cast<uint64_t>(in.optimizer_states);
        }
      }
    }
    // The tensor arena Executor::reserve() allocates, from the same list,
    // once per buffer set.
    const std::vector<FusedRelu> fused =
        fused_relus(FusedReluInputs{&g, &dp.forward, &edge_of, &external, dev.host_memory});
    const std::vector<FusedReluGradient> fused_gradients =
        fused_relu_gradients(FusedReluGradientInputs{&g, &dp.backward, &edge_of, dev.host_memory});
    const TensorArena arena =
        tensor_arena(TensorAllocationInputs{&g, &p, &dp.uses_tensor, &edge_of, &external, dev.host_memory, &fused,
                                            &dp.forward, &dp.backward, &fused_gradients},
                     batch);
    const auto sets = static_cast<uint64_t>(dev.sets);
    d.arena = arena.bytes * sets;
    d.arena_lower_bound = arena.lower_bound * sets;
    d.kept_activations = arena.kept * sets;
    d.kept_buffers = arena.kept_buffers * dev.sets;
    for (const TensorAllocation& a : arena.allocations) {
      const uint64_t b = a.bytes * sets;
      OpMemory& o = op(a.node);
      switch (a.kind) {
        case TensorAllocation::Kind::kStaging: o.staging += b; break;
        case TensorAllocation::Kind::kActivation: o.activations += b; break;
        case TensorAllocation::Kind::kActivationGrad: o.activation_grads += b; break;
      }
    }
    // One workspace, as large as the largest kernel's.
    uint64_t workspace = 0;
    for (const Instr& ins : dp.forward) {
      if (ins.kind != InstrKind::kForward) continue;
      const Node& n = g.node(ins.node);
      uint64_t w = dev.workspace_bytes ? dev.workspace_bytes(n, batch) : n.workspace_bytes(batch);
      op(ins.node).workspace = w;
      workspace = std::max(workspace, w);
    }
    d.workspace = float_bytes(static_cast<int64_t>((workspace + sizeof(float) - 1) / sizeof(float)));
    // The math libraries' fixed workspace, taken when the device starts.
    d.library = charged_bytes(library_workspace_bytes(dev.host_memory));
    // The slot rings this device writes, when its memory is host memory.
    if (dev.host_memory)
      for (const EdgeMemory& e : plan.edges)
        if (e.producer == dp.device) d.transport += e.ring_bytes;
    std::sort(d.ops.begin(), d.ops.end(), [](const OpMemory& a, const OpMemory& b) { return a.node < b.node; });
    for (const OpMemory& o : d.ops) {
      d.params += o.params;
      d.grads += o.grads;
      d.optimizer_state += o.optimizer_state;
      d.activations += o.activations;
      d.activation_grads += o.activation_grads;
      d.staging += o.staging;
      d.offloaded += o.offloaded;
    }
    plan.devices.push_back(std::move(d));
  }
  return plan;
}

namespace {

// "cpu:1 needs 96.00 MiB at a batch of 1, most of it for dense1 (...), but its
// memory_limit is 64.00 MiB: move dense1 to another device or raise ...".
[[noreturn]] void impossible(const DeviceMemoryPlan& d) {
  const OpMemory* big = d.largest_op();
  std::string msg = d.device + " needs " + format_bytes(d.total()) + " at a batch of 1";
  if (big) {
    msg += ", most of it for " + big->op + " (" +
           format_byte_parts({{"parameters", big->params},
                              {"gradients", big->grads},
                              {"optimizer state", big->optimizer_state},
                              {"activations", big->activations},
                              {"activation gradients", big->activation_grads},
                              {"staging", big->staging},
                              {"workspace", big->workspace}}) +
           ")";
  }
  if (d.transport) msg += ", plus " + format_bytes(d.transport) + " of transport slots";
  if (d.library) msg += ", plus " + format_bytes(d.library) + " of cuBLAS workspace";
  if (d.offload_staging) msg += ", plus " + format_bytes(d.offload_staging) + " of offload staging pool";
  msg += ", but its memory_limit is " + format_bytes(d.limit) + ": move " + (big ? big->op : "some ops") +
         " to another device or raise " + d.device + "'s memory_limit to at least " + format_bytes(d.total());
  throw_invalid(msg);
}

}  // namespace

int64_t largest_fitting_batch(const PlanInputs& in, int64_t upto) {
  assert(upto >= 1);
  MemoryPlan one = plan_memory(in, 1);
  for (const DeviceMemoryPlan& d : one.devices)
    if (!d.fits()) impossible(d);
  // Memory grows with the batch: bisection.
  int64_t lo = 1, hi = upto;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (plan_memory(in, mid).fits())
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

BatchSplit split_batch(const PlanInputs& in, int64_t requested) {
  assert(requested >= 1);
  BatchSplit s;
  s.requested = requested;
  MemoryPlan full = plan_memory(in, requested);
  if (full.fits()) {
    s.micro = requested;
    s.plan = std::move(full);
    return s;
  }
  const int64_t lo = largest_fitting_batch(in, std::max<int64_t>(requested - 1, 1));
  s.count = (requested + lo - 1) / lo;
  s.micro = (requested + s.count - 1) / s.count;  // as even as the count allows
  assert((requested + s.micro - 1) / s.micro == s.count);
  s.plan = plan_memory(in, s.micro);
  // The decision names the device over its limit by the largest factor.
  auto over = [](const DeviceMemoryPlan& d) { return static_cast<double>(d.total()) / static_cast<double>(d.limit); };
  const DeviceMemoryPlan* worst = nullptr;
  for (const DeviceMemoryPlan& d : full.devices)
    if (!d.fits() && (!worst || over(d) > over(*worst))) worst = &d;
  s.decision = worst->device + ": batch " + std::to_string(requested) + " needs " + format_bytes(worst->total()) +
               " > " + format_bytes(worst->limit) + " limit; running " + split_phrase(requested, s.micro);
  return s;
}

std::vector<int64_t> micro_batch_sizes(int64_t batch, int64_t micro) {
  assert(batch >= 0 && micro >= 1);
  return split_evenly(batch, (batch + micro - 1) / micro);
}

std::vector<int64_t> split_evenly(int64_t batch, int64_t count) {
  assert(batch >= 0 && count >= 0);
  std::vector<int64_t> sizes;
  sizes.reserve(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) sizes.push_back(batch / count + (j < batch % count ? 1 : 0));
  return sizes;
}

std::string split_phrase(int64_t batch, int64_t micro) {
  const int64_t count = (batch + micro - 1) / micro;
  if (batch % count == 0) return std::to_string(count) + " micro-batches of " + std::to_string(batch / count);
  return std::to_string(count) + " micro-batches: " + describe_micro_batches(batch, micro);
}

std::string describe_micro_batches(int64_t batch, int64_t micro) {
  const std::vector<int64_t> sizes = micro_batch_sizes(batch, micro);
  if (sizes.empty()) return "none";
  const int64_t larger = batch % static_cast<int64_t>(sizes.size());
  const int64_t count = static_cast<int64_t>(sizes.size());
  if (larger == 0) return std::to_string(count) + " of " + std::to_string(sizes[0]);
  return std::to_string(larger) + " of " + std::to_string(sizes[0]) + " and " + std::to_string(count - larger) +
         " of " + std::to_string(sizes.back());
}

}  // namespace devmap
