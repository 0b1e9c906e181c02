#include "core/plan/step_time.h"

#include <algorithm>
#include <cassert>

namespace devmap {

StepPrediction predict_step(const Partition& partition, bool training, PipelineKind kind, int64_t batch, int count,
                            const StepCosts& costs) {
  assert(count >= 1 && batch >= 1);
  const int64_t micro = (batch + count - 1) / count;
  ScheduleRequest request;
  request.partition = &partition;
  request.training = training;
  request.kind = kind;
  request.micro_batches = count;
  request.contention = costs.contention;
  if (costs.contends)
    for (const std::string& d : partition.devices) request.contends.push_back(costs.contends(d));
  // A segment costs its ops at the micro-batch size, and each tensor it
  // sends the handoff to its consumers (the producer writes the slot).
  for (const DeviceProgram& dp : partition.programs) {
    for (int pass = 0; pass < 2; ++pass) {
      const std::vector<Instr>& list = pass ? dp.backward : dp.forward;
      std::vector<double> segment_costs;
      if (pass == 0 || training)
        for (const Segment& s : segments_of(list)) {
          double c = 0;
          for (int i = s.begin; i < s.end; ++i) {
            const Instr& ins = list[static_cast<size_t>(i)];
            if (ins.kind == InstrKind::kForward) c += costs.op(ins.node, dp.device, micro).forward;
            if (ins.kind == InstrKind::kBackward) c += costs.op(ins.node, dp.device, micro).backward;
            if (ins.kind == InstrKind::kSend && costs.transfer) {
              const Edge& e = partition.edges.at(static_cast<size_t>(ins.node));
              for (const std::string& to : e.consumers) c += costs.transfer(dp.device, to, e.bytes(micro));
            }
          }
          segment_costs.push_back(c);
        }
      (pass ? request.backward_cost : request.forward_cost).push_back(std::move(segment_costs));
    }
  }
  const PipelineSchedule schedule = build_schedule(request);
  StepPrediction p;
  p.busy = schedule.busy;
  double update = 0;
  if (training && costs.optimizer)
    for (size_t d = 0; d < partition.devices.size(); ++d) {
      const double u = costs.optimizer(partition.devices[d]);
      p.busy[d] += u;
      update = std::max(update, u);
    }
  double overhead = 0;
  if (costs.step_overhead)
    for (const std::string& d : partition.devices) overhead = std::max(overhead, costs.step_overhead(d));
  p.seconds = schedule.makespan + update + overhead;
  return p;
}

MicroBatchChoice choose_micro_batches(const Partition& partition, bool training, PipelineKind kind, int64_t batch,
                                      const std::vector<int>& candidates, const StepCosts& costs, double tolerance) {
  assert(!candidates.empty());
  MicroBatchChoice choice;
  double best = 0;
  for (int c : candidates) {
    const double s = predict_step(partition, training, kind, batch, c, costs).seconds;
    choice.predicted.emplace_back(c, s);
    if (choice.predicted.size() == 1 || s < best) best = s;
  }
  for (const auto& [c, s] : choice.predicted)
    if (s <= best * (1 + tolerance)) {
      choice.count = c;
      break;
    }
  return choice;
}

std::vector<int> micro_batch_candidates(int64_t batch, int min_count, int max_count) {
  const int top = static_cast<int>(std::min<int64_t>(batch, max_count));
  if (min_count > top) return {min_count};  // the budget's minimum wins
  std::vector<int> out;
  if (min_count >= 1 && min_count <= top) out.push_back(min_count);
  for (int c : {1, 2, 3, 4, 6, 8, 12}) out.push_back(c);
  for (int c = 16; c <= top; c *= 2) out.push_back(c);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  std::erase_if(out, [&](int c) { return c < min_count || c > top; });
  return out;
}

}  // namespace devmap
