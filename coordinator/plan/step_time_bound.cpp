#include "coordinator/plan/step_time_bound.h"

#include <algorithm>

namespace devmap {

StepTimeBound::StepTimeBound(const Config& config, const Graph& graph, const Partition& partition) {
  for (const std::string& name : partition.devices) {
    const DeviceSpec* d = config.find_device(name);
    Device dev;
    for (const Node& n : graph.nodes()) {
      if (n.device != name) continue;
      dev.forward_flops += n.forward_flops(1);
      dev.backward_flops += n.backward_flops(1);
    }
    dev.rate = d && d->kind == DeviceKind::kGpu ? kAssumedGpuFlops
                                                : kAssumedCpuFlopsPerThread * std::max(1, d ? d->threads : 1);
    devices_.push_back(dev);
  }
}

double StepTimeBound::seconds(int64_t batch, bool training) const {
  double slowest = 0;
  for (const Device& d : devices_) {
    double flops = d.forward_flops + (training ? d.backward_flops : 0);
    slowest = std::max(slowest, flops * static_cast<double>(batch) / d.rate);
  }
  return slowest + kAssumedStepOverheadSeconds;
}

}  // namespace devmap
