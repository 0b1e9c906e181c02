#include "core/plan/cost_model.h"

#include <algorithm>

namespace devmap {

void MeasuredOpTimes::add(const std::string& op, const std::string& device, int64_t batch, bool backward,
                          double seconds) {
  table_[{op, device, backward}][batch] = seconds;
}

std::optional<double> MeasuredOpTimes::seconds(const Node& node, const std::string& device, int64_t batch,
                                               bool backward) const {
  auto it = table_.find({node.name, device, backward});
  if (it == table_.end() || it->second.empty()) return std::nullopt;
  const std::map<int64_t, double>& by_batch = it->second;
  auto hi = by_batch.lower_bound(batch);
  if (hi == by_batch.end()) return std::nullopt;
  if (hi->first == batch) return hi->second;
  if (hi == by_batch.begin()) return std::nullopt;
  auto lo = std::prev(hi);
  const double t = static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

double analytical_seconds(const Node& node, const DeviceRates& rates, int64_t batch, bool backward) {
  if (backward && !node.schema->differentiable) return 0;
  double bytes = static_cast<double>(node.param_bytes()) + static_cast<double>(node.activation_bytes(batch));
  for (const Shape& in : node.input_shapes) bytes += static_cast<double>(in.with_batch(batch).numel()) * 4;
  const double flops = backward ? node.backward_flops(batch) : node.forward_flops(batch);
  if (backward) bytes *= 2;
  return rates.op_overhead_s + std::max(flops / rates.flops_per_s, bytes / rates.bytes_per_s);
}

double analytical_sum_seconds(int64_t floats, const DeviceRates& rates) {
  return rates.op_overhead_s + static_cast<double>(floats) * 4 * 3 / rates.bytes_per_s;
}

double analytical_offload_seconds(int64_t trained_param_bytes, bool backward, double bytes_per_s) {
  return static_cast<double>(trained_param_bytes) * (backward ? 3 : 1) / bytes_per_s;
}

}  // namespace devmap
