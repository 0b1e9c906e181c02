#include "core/plan/partition.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <set>

#include "core/base/error.h"

namespace devmap {
namespace {

// The device an instruction runs on.
const std::string& device_of(const Graph& g, const Instr& ins) {
  return g.node(ins.node).device;
}

// Tensors an instruction reads, in a fixed order.
std::vector<int> reads(const Graph& g, const Instr& ins) {
  if (ins.kind != InstrKind::kBackward) return ins.in;
  const Node& n = g.node(ins.node);
  std::vector<int> r = ins.in;  // the gradient of the output
  if (n.schema->backward_needs_inputs) r.insert(r.end(), n.inputs.begin(), n.inputs.end());
  if (n.schema->backward_needs_output) r.push_back(ins.node);
  return r;
}

}  // namespace

const DeviceProgram& Partition::program_for(const std::string& device) const {
  for (const DeviceProgram& p : programs)
    if (p.device == device) return p;
  throw_invalid("device '" + device + "' runs no op of this model");
}

Partition partition_program(const Graph& g, const Program& p) {
  Partition part;
  std::set<std::string> devices;
  for (int i = 0; i < g.size(); ++i) {
    if (!p.needed[static_cast<size_t>(i)] || g.node(i).schema->fed_by_coordinator()) continue;
    if (g.node(i).device.empty()) throw_invalid("op '" + g.node(i).name + "' has no device");
    devices.insert(g.node(i).device);
  }
  part.devices.assign(devices.begin(), devices.end());

  // Who writes and who reads each tensor. Fed tensors have no producer.
  const size_t nt = static_cast<size_t>(p.tensor_count());
  std::vector<std::string> producer(nt);
  std::vector<std::set<std::string>> readers(nt);
  for (const auto* list : {&p.forward, &p.backward})
    for (const Instr& ins : *list) {
      for (int t : ins.out)
        if (t >= 0) producer[static_cast<size_t>(t)] = device_of(g, ins);
      for (int t : reads(g, ins)) readers[static_cast<size_t>(t)].insert(device_of(g, ins));
    }

  std::vector<int> edge_of(nt, -1);
  for (size_t t = 0; t < nt; ++t) {
    if (producer[t].empty()) continue;
    std::vector<std::string> remote;
    for (const std::string& d : readers[t])
      if (d != producer[t]) remote.push_back(d);
    if (remote.empty()) continue;
    const TensorInfo& info = p.tensors[t];
    const Node& n = g.node(info.node);
    assert(!n.schema->batch_reduced() && "a per-batch scalar never crosses devices");
    Edge e;
    e.id = static_cast<int>(part.edges.size());
    e.tensor = static_cast<int>(t);
    e.name = info.name;
    e.backward = info.kind != TensorInfo::Kind::kActivation;
    e.producer = producer[t];
    e.consumers = remote;
    e.per_sample = n.out_shape;
    edge_of[t] = e.id;
    part.edges.push_back(std::move(e));
  }

  for (const std::string& dev : part.devices) {
    DeviceProgram dp;
    dp.device = dev;
    dp.local_nodes.assign(static_cast<size_t>(g.size()), false);
    dp.uses_tensor.assign(nt, false);
    for (int i = 0; i < g.size(); ++i)
      dp.local_nodes[static_cast<size_t>(i)] = p.needed[static_cast<size_t>(i)] && g.node(i).device == dev;
    dp.owns_loss = p.loss_node >= 0 && g.node(p.loss_node).device == dev;
    std::set<int> received;
    auto emit = [&](const std::vector<Instr>& src, std::vector<Instr>& dst) {
      for (const Instr& ins : src) {
        if (device_of(g, ins) != dev) continue;
        for (int t : reads(g, ins)) {
          dp.uses_tensor[static_cast<size_t>(t)] = true;
          int e = edge_of[static_cast<size_t>(t)];
          if (e >= 0 && producer[static_cast<size_t>(t)] != dev && received.insert(e).second) {
            dst.push_back({InstrKind::kRecv, e, {}, {t}});
            dp.recvs.push_back(e);
          }
        }
        dst.push_back(ins);
        for (int t : ins.out) {
          if (t < 0) continue;
          dp.uses_tensor[static_cast<size_t>(t)] = true;
          int e = edge_of[static_cast<size_t>(t)];
          if (e >= 0) {
            dst.push_back({InstrKind::kSend, e, {t}, {}});
            dp.sends.push_back(e);
          }
        }
      }
    };
    emit(p.forward, dp.forward);
    emit(p.backward, dp.backward);
    if (dp.owns_loss) dp.uses_tensor[static_cast<size_t>(p.loss_grad)] = true;
    part.programs.push_back(std::move(dp));
  }
  return part;
}

}  // namespace devmap
