// The planner's cost model: how long each op's forward and backward take on
// each device at a given batch, and how long a tensor takes to cross from
// one device to another. Measured times (a calibration, behind the OpTimes
// interface) are used where they exist; elsewhere an analytical estimate
// from the op's FLOPs and bytes against the device's GEMM rate and memory
// bandwidth, and the model records which ops needed it. Pure functions and
// plain data: no process, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/graph/graph.h"

namespace devmap {

// What the analytical estimate knows of a device (with its thread count).
struct DeviceRates {
  double flops_per_s = 1e9;   // sustained GEMM rate
  double bytes_per_s = 1e10;  // memory bandwidth
  double op_overhead_s = 0;   // fixed cost of launching one kernel
};

// A transfer of `bytes` from one device to another takes
// latency_s + bytes / bytes_per_s seconds (bytes_per_s 0: no bandwidth term).
struct LinkCost {
  double latency_s = 0;
  double bytes_per_s = 0;
  double seconds(uint64_t bytes) const {
    return latency_s + (bytes_per_s > 0 ? static_cast<double>(bytes) / bytes_per_s : 0.0);
  }
};

// Measured op times. seconds() answers for one op of the graph on one
// device at `batch` samples, forward or backward, or nullopt when it has no
// measurement (the planner then uses the analytical estimate). An adapter
// over a calibration cache maps the node to its op signature.
class OpTimes {
 public:
  virtual ~OpTimes() = default;
  virtual std::optional<double> seconds(const Node& node, const std::string& device, int64_t batch,
                                        bool backward) const = 0;
};

// OpTimes from a table keyed by op name, device, batch and pass. A batch
// between two measured ones is interpolated linearly; outside the measured
// range there is no answer.
class MeasuredOpTimes : public OpTimes {
 public:
  void add(const std::string& op, const std::string& device, int64_t batch, bool backward, double seconds);
  std::optional<double> seconds(const Node& node, const std::string& device, int64_t batch,
                                bool backward) const override;

 private:
  // (op, device, backward) -> batch -> seconds
  std::map<std::tuple<std::string, std::string, bool>, std::map<int64_t, double>> table_;
};

// The analytical estimate of one op: overhead + max(FLOPs / flops_per_s,
// bytes / bytes_per_s), bytes being the op's inputs, output and parameters
// (float32) read or written once; the backward pass counts the op's
// backward FLOPs and twice those bytes. 0 for a backward the op does not
// have.
double analytical_seconds(const Node& node, const DeviceRates& rates, int64_t batch, bool backward);

// How `a` tensor floats are added (kSumGrads): read twice, written once.
double analytical_sum_seconds(int64_t floats, const DeviceRates& rates);

// The copies an op's pass makes on a device with `offload: parameters`
// (core/exec/executor.cpp), per micro-batch: the forward fetches its trained
// parameters; the backward fetches them with their gradients and writes the
// gradients back (3 times their bytes). At `bytes_per_s` (a CPU's memory
// bandwidth, a GPU's host link) and counted as not overlapped: the copies
// are hidden behind the previous op's compute, but on a CPU the copy
// thread takes a core from it.
double analytical_offload_seconds(int64_t trained_param_bytes, bool backward, double bytes_per_s);

}  // namespace devmap
