// GradientOutlet: a data-parallel worker's gradients in its host's gradient
// segment (PARAMS_IO kMapGradients). During a step with wire::kSendGradients
// each gradient is copied there, and reported (GRADIENT_READY), as soon as
// the backward of its op has made it, so the coordinator can start summing
// it across the hosts while the backward pass goes on; before the update
// (wire::kUpdateOnly) the sums are copied back. On a device whose memory the
// host addresses (the CPU) nothing is copied: the parameters' gradients live
// in the segment itself, so the backward writes them there, the coordinator
// sums them in place and the update reads the sums.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/exec/device_memory.h"
#include "core/exec/executor.h"
#include "transport/params_io.h"
#include "transport/shm_segment.h"

namespace devmap {

class GradientOutlet {
 public:
  using Send = std::function<void(const std::string& frame)>;

  // Maps the segment io.path names and places each entry ("op.param.grad")
  // on its parameter; throws devmap::Error (kRuntime) for a name this worker
  // does not hold, an untrained parameter, a size that disagrees or a range
  // outside the segment. On host-addressable memory it moves each entry's
  // gradient into the segment (Parameter::grad then borrows it), so the
  // segment must outlive the parameters' use, as this outlet does.
  // On memory the host cannot address (a GPU), the segment is pinned
  // (DeviceMemory::register_host) until the outlet is destroyed.
  GradientOutlet(const ParamsIo& io, std::vector<Parameter>& params, DeviceMemory& memory);
  ~GradientOutlet();
  GradientOutlet(const GradientOutlet&) = delete;
  GradientOutlet& operator=(const GradientOutlet&) = delete;

  // A step that sends its gradients begins / ends: end() sends those no
  // backward instruction here has made (their gradients are final anyway).
  void begin(int64_t step, Send send);
  void end();
  // After an instruction of the step: an op's backward makes its
  // parameters' gradients final.
  void after(const Instr& ins);

  // The segment's gradients (the sums) back into the parameters.
  void read_back();

 private:
  struct Out {
    Parameter* param;
    uint64_t offset;  // bytes into the segment
    uint32_t entry;   // index in the kMapGradients entries
  };
  void write(const Out& out);

  ShmSegment segment_;
  DeviceMemory& memory_;
  std::vector<Out> outs_;
  std::vector<std::vector<size_t>> by_node_;  // op -> its indices in outs_
  std::vector<bool> sent_;
  bool in_place_ = false;  // the gradients live in the segment
  bool pinned_ = false;    // registered with memory_
  int64_t step_ = -1;
  Send send_;
};

}  // namespace devmap
