// Partitioning: (graph, program, placement) -> one program per device with
// explicit send/recv of every tensor that crosses devices, for the forward
// and the backward pass. A pure function: the coordinator uses it to plan
// and log, each worker to build its own part, and the tests need no process.
//
// Placement is each op's Node::device. Input ops (input, labels) belong to
// no device: the coordinator writes them into a shared input segment that
// every device consuming them reads in place, so they never form an edge.
#pragma once

#include <string>
#include <vector>

#include "core/plan/program.h"

namespace devmap {

// One tensor that crosses devices: produced on `producer`, read in place by
// each of `consumers` (sorted, never the producer). The bytes are written
// once, into a slot of the edge's ring, and go to each consumer once.
struct Edge {
  int id = 0;
  int tensor = -1;        // program tensor id
  std::string name;       // the tensor's name, "conv2" or "fc1@grad"
  bool backward = false;  // a gradient (else a forward activation)
  std::string producer;
  std::vector<std::string> consumers;
  Shape per_sample;  // [C, H, W]: bytes per step scale with the batch

  int64_t bytes(int64_t batch) const { return per_sample.with_batch(batch).numel() * 4; }
};

struct DeviceProgram {
  std::string device;
  std::vector<Instr> forward, backward;  // local instructions plus kSend/kRecv (node = edge id)
  std::vector<bool> local_nodes;         // ops (and their parameters) that live here
  std::vector<bool> uses_tensor;         // tensors this device reads or writes
  std::vector<int> sends, recvs;         // edge ids, in first-use order
  bool owns_loss = false;
};

struct Partition {
  std::vector<std::string> devices;  // sorted
  std::vector<Edge> edges;
  std::vector<DeviceProgram> programs;  // one per device, same order
  const DeviceProgram& program_for(const std::string& device) const;
};

// Every non-input op of `graph` must have a device. Throws devmap::Error
// (bug-level misuse is asserted) when an op has none.
Partition partition_program(const Graph& graph, const Program& program);

}  // namespace devmap
