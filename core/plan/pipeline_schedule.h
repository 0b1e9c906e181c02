// Pipeline schedules: how the micro-batches of one step flow through the
// devices of a partition, as data. A pure function builds, for every device,
// the ordered list of actions its worker runs (the forward or backward of one
// segment for one micro-batch), by simulating the step with a cost per
// action; the same simulation checks the schedule against the slot rings of
// the cut edges, so a schedule that could deadlock is an error before any
// process starts, never a hang.
//
// A segment is a maximal run of a device's forward (or backward)
// instructions that needs no tensor from another device in its middle: it
// starts with the receives it waits for. A stage of the pipeline is a
// forward segment; a device map that returns to a device gives that device
// several stages (configs/fashion_mnist_cnn_3way.yaml: cpu:0, cpu:1, cpu:2,
// cpu:0 again).
//
// Schedules (`train.pipeline.schedule`):
//   none  lock-step: micro-batch m+1 starts when m has finished everywhere;
//   gpipe every device runs all its forwards, then all its backwards;
//   1f1b  a device admits a new micro-batch only while it holds fewer than
//         p - i in flight (i: the index of its first stage among p), and
//         after each forward runs the backward of its oldest micro-batch as
//         soon as it can: once full, forwards and backwards alternate.
// Every schedule runs each segment's micro-batches in order 0, 1, ..., so
// parameter gradients add up in micro-batch order and a pipelined step
// computes the same bits as the lock-step one.
#pragma once

#include <string>
#include <vector>

#include "core/plan/partition.h"

namespace devmap {

enum class PipelineKind { kNone, kGpipe, k1f1b };

// The most micro-batches one round (a STEP) may carry.
constexpr int kMaxMicroBatches = 256;

// "none", "gpipe", "1f1b"; parse throws devmap::Error (kInvalidInput).
const char* pipeline_kind_name(PipelineKind kind);
PipelineKind parse_pipeline_kind(const std::string& name);
const std::vector<std::string>& pipeline_kind_names();

// [begin, end) of a device's instruction list.
struct Segment {
  int begin = 0, end = 0;
};
std::vector<Segment> segments_of(const std::vector<Instr>& instrs);

// One thing a worker does: run segment `segment` of its forward (or
// backward) instructions for micro-batch `micro`, in buffer set `set`.
struct PipelineAction {
  bool backward = false;
  int micro = 0;
  int segment = 0;
  int set = 0;
  // The device's last action for this micro-batch: afterwards its received
  // slots go back to their producers.
  bool last_of_micro = false;
};

struct ScheduleRequest {
  const Partition* partition = nullptr;
  bool training = true;
  int micro_batches = 1;
  PipelineKind kind = PipelineKind::kNone;
  // Cost of each segment's forward and backward per device (partition
  // order), in any unit (seconds, FLOPs); backward empty for inference.
  std::vector<std::vector<double>> forward_cost, backward_cost;
  // Slots of each edge's ring (by edge id); empty: as many as the schedule
  // needs (PipelineSchedule::edge_slots says how many).
  std::vector<int> ring_slots;
  // Transfer time of each edge (by edge id), in the cost unit: a segment
  // that receives the edge starts no earlier than this long after the
  // segment that sends it finished (the devices stay free meanwhile).
  // Empty: every transfer is instant.
  std::vector<double> edge_cost;
  // Devices that share one host's cores, caches and memory slow each other
  // down: while k of the devices marked in `contends` (partition order;
  // empty: none) run an action at once, each of those actions progresses at
  // 1 / (1 + contention x (k - 1)) of its rate alone. 0: no slowdown (the
  // order of actions then depends on the costs alone, as the workers derive it).
  double contention = 0;
  std::vector<bool> contends;
};

struct PipelineSchedule {
  PipelineKind kind = PipelineKind::kNone;
  int micro_batches = 1;
  std::vector<std::vector<PipelineAction>> actions;  // per device, in order
  std::vector<int> sets;                             // per device: micro-batches held at once
  std::vector<int> edge_slots;                       // per edge: slots held at once
  double makespan = 0;                               // in the request's cost unit
  std::vector<double> busy;                          // per device, same unit
};

// Throws devmap::Error (kInvalidInput) when the schedule cannot finish with
// the request's ring slots (naming the devices that wait and for what).
PipelineSchedule build_schedule(const ScheduleRequest& request);

// Segment costs from the graph's FLOPs per sample (plus a small overhead per
// segment), for planning before anything was measured.
void set_flops_costs(const Graph& graph, ScheduleRequest& request);

// What a run with up to `micro_batches` micro-batches a round needs: the
// schedule of every count 1..micro_batches (a step or pass whose last round
// is shorter runs fewer), the buffer sets each device and the ring slots
// each edge need for any of them (at least `min_slots`), each schedule
// checked against those rings. The coordinator and every worker derive the
// same plan from the same inputs (costs from the graph's FLOPs).
// A training plan also holds the forward-only schedules its evaluation
// rounds run.
struct PipelinePlan {
  PipelineKind kind = PipelineKind::kNone;
  int micro_batches = 1;
  std::vector<PipelineSchedule> by_count;          // [c - 1]: the schedule of c micro-batches
  std::vector<PipelineSchedule> forward_by_count;  // the same, forward passes only
  std::vector<int> sets;                           // per device (partition order)
  std::vector<int> edge_slots;                     // per edge
  const PipelineSchedule& schedule(int count, bool training = true) const {
    return (training && !by_count.empty() ? by_count : forward_by_count).at(static_cast<size_t>(count - 1));
  }
  int sets_of(const Partition& partition, const std::string& device) const;
};
PipelinePlan plan_pipeline(const Graph& graph, const Partition& partition, bool training, PipelineKind kind,
                           int micro_batches, int min_slots);

// "cpu:0: F0 F1 B0 F2 B1 ...": one line per device.
std::string describe_schedule(const PipelineSchedule& schedule, const Partition& partition);

}  // namespace devmap
