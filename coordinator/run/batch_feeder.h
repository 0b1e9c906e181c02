// BatchFeeder: feeds one pass over a data set's samples through the
// workers in batches, double buffered: while the workers compute one
// (micro-)batch from one input slot, the next is written into the other.
// A training batch larger than the memory plan's micro-batch goes through
// as several micro-batches of one step: the workers add up the parameter
// gradients and update once, after the last.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/data/dataset.h"
#include "coordinator/run/gradient_exchange.h"
#include "coordinator/run/worker_group.h"
#include "coordinator/util/signals.h"
#include "core/base/error.h"
#include "core/plan/memory_plan.h"
#include "transport/shm_segment.h"

namespace devmap {

// A BatchFeeder's source of samples: a data set held in memory, visited in
// `order`. (PredictionInput, which reads its file as it goes, is the other.)
struct OrderedSamples {
  const Dataset& data;
  const std::vector<int64_t>& order;
  int64_t count() const { return static_cast<int64_t>(order.size()); }
  void fill(int64_t first, int64_t n, float* images, float* labels) const {
    fill_batch(data, order, first, n, images, labels);
  }
};

class BatchFeeder {
 public:
  BatchFeeder(WorkerGroup& group, ShmSegment& segment, const InputLayout& layout, int image_node, int label_node)
      : group_(group), segment_(segment), layout_(layout) {
    for (size_t k = 0; k < layout.input_nodes.size(); ++k) {
      if (layout.input_nodes[k] == image_node) image_off_ = layout.input_offsets[k];
      if (layout.input_nodes[k] == label_node) label_off_ = layout.input_offsets[k];
    }
  }

  // Runs batches of `job.batch_size` samples of `source` (OrderedSamples or
  // PredictionInput: count() samples, fill() writes them in order; at most
  // job.max_batches, -1: all), each as micro-batches of at most `job.micro`
  // samples, as even as micro_batch_sizes() makes them (training only;
  // others pass micro == batch_size). Calls on_done(index, batch, result,
  // slot) after each batch with its loss and metric (the workers add the
  // micro-batches' shares of the batch's mean, chunk by chunk); the outputs
  // of a batch run as one micro-batch stay in output slot `slot` until two
  // more have been sent. After SIGINT or SIGTERM it stops at the next batch
  // boundary (the micro-batches of a step always run to its end) and
  // returns false; true when every batch ran.
  struct Run {
    int64_t batch_size = 0;
    int64_t micro = 0;       // samples per micro-batch at most
    int64_t first_step = 0;  // the step number of the first batch
    uint32_t flags = 0;      // wire::kTrain for training steps
    int64_t max_batches = -1;
  };
  template <typename Source, typename OnDone>
  bool run(Source&& source, const Run& job, OnDone on_done) {
    const int64_t batch_size = job.batch_size, first_step = job.first_step, max_batches = job.max_batches;
    const uint32_t flags = job.flags;
    int64_t micro = job.micro;
    const int64_t count = source.count();
    int64_t batches = (count + batch_size - 1) / batch_size;
    if (max_batches >= 0) batches = std::min(batches, max_batches);
    if (batches == 0) return true;
    if (round_ > 0)
      return run_rounds(source,
                        RoundsRun{.count = count,
                                  .batch_size = batch_size,
                                  .micro = micro,
                                  .batches = batches,
                                  .first_step = first_step,
                                  .round = round_,
                                  .flags = flags},
                        on_done);
    micro = std::min(micro, batch_size);
    const bool replicated = exchange_ && (flags & wire::kTrain);
    const std::vector<Planned> units = plan_units(count, batch_size, micro, batches, replicated);
    const auto total = static_cast<int64_t>(units.size());
    const LockstepRun lockstep{
        .first_step = first_step, .batch_size = batch_size, .flags = flags, .replicated = replicated};
    // Whether unit k + 1 may be sent before unit k is collected.
    auto overlaps = [&](int64_t k) { return may_overlap(units[static_cast<size_t>(k)], lockstep); };
    auto step_of = [&](int64_t k) { return lockstep_step(units[static_cast<size_t>(k)], k, lockstep); };
    auto fill_unit = [&](int64_t k) {
      wire::Step traced{};
      traced.step = first_step + units[static_cast<size_t>(k)].unit.batch;
      traced.flags = flags;
      const int64_t t0 = feed_started(traced);
      fill(source, k, units[static_cast<size_t>(k)].unit);
      feed_done(t0, traced);
    };
    // Units [collected, sent) are in flight (at most two), [sent, filled)
    // written and waiting; a unit's input slot is free again once the unit
    // `slots` before it is collected. A stop (SIGINT, SIGTERM) sends no
    // further batch, collects what is in flight and returns false.
    int64_t sent = 0, filled = 0, collected = 0;
    bool stopping = false;
    std::deque<wire::Step> flight;
    StepResult sum;
    fill_unit(filled++);
    for (;;) {
      while (!stopping && sent < filled && (sent == collected || (sent - collected < 2 && overlaps(sent - 1)))) {
        if (units[static_cast<size_t>(sent)].micro == 0 && interrupted()) {
          stopping = true;
          break;
        }
        const wire::Step s = step_of(sent);
        // A replica's gradients go to the exchange as the backward makes them.
        if (s.flags & wire::kSendGradients) exchange_->begin(s.step);
        group_.send(s);
        flight.push_back(s);
        ++sent;
      }
      if (sent == collected) return !stopping;  // nothing in flight: every unit ran, or a stop
      // The next unit goes into its slot while the workers run.
      if (!stopping && filled < total && filled - collected < static_cast<int64_t>(layout_.slots)) {
        fill_unit(filled++);
        continue;
      }
      const wire::Step s = flight.front();
      flight.pop_front();
      const Planned& p = units[static_cast<size_t>(collected++)];
      StepResult r = group_.collect();
      // The worker adds each micro-batch's loss to the earlier ones' (the
      // chunks in order, Executor::scalar): the last holds the batch's.
      sum.loss = r.loss;
      sum.metric = r.metric;
      sum.compute_seconds += r.compute_seconds;
      if (!r.param_stats.empty()) sum.param_stats = std::move(r.param_stats);
      if (p.micro + 1 == p.micros) {
        if (replicated) exchange_->finish(s.step, sum);
        on_done(p.unit.batch, s.batch_total, sum, s.slot);
        sum = StepResult{};
      }
    }
  }
  void set_first_step_flags(uint32_t f) { extra_first_flags_ = f; }
  // Data-parallel training (lock-step batches only): this feeder runs
  // replica `rank` of `replicas`, feeding its share of each training step's
  // samples and handing each step to `exchange` before on_done sees it.
  void set_replica(int rank, int replicas, GradientExchange* exchange) {
    rank_ = rank;
    replicas_ = replicas;
    exchange_ = exchange;
  }
  // run() goes by rounds of up to `micro_batches` micro-batches (a
  // pipelined job: JobMemory::rounds; see run_rounds()); 0: one micro-batch
  // at a time.
  void set_micro_batches_per_round(int micro_batches) { round_ = micro_batches; }
  // Training by run() without rounds: whether the workers may be sent the
  // next step before on_done has seen training step `step` (numbered from
  // 0, as first_step counts); they then start it without waiting for the
  // coordinator's round trip. The caller says no for a step whose on_done
  // asks the workers for something (a checkpoint). Unset: never.
  void set_run_ahead(std::function<bool(int64_t step)> run_ahead) { run_ahead_ = std::move(run_ahead); }

 private:
  // What a pipelined run's rounds share: `batches` batches of `batch_size`
  // of `count` samples; training steps cut into micro-batches of at most
  // `micro`; otherwise up to `round` batches a round.
  struct RoundsRun {
    int64_t count = 0, batch_size = 0, micro = 0, batches = 0, first_step = 0;
    int round = 0;
    uint32_t flags = 0;
    bool train() const { return (flags & wire::kTrain) != 0; }
    // Round r: training, step r; otherwise batches [r * round, ...).
    int64_t rounds() const { return train() ? batches : (batches + round - 1) / round; }
    // Round r's slots (input and output) start at (r % 2) x round.
    uint32_t base_of(int64_t r) const { return static_cast<uint32_t>((r % 2) * round); }
  };
  // One round: its STEP says how many samples in how many micro-batches,
  // and wire::round_sizes() what each holds, here and in every worker.
  struct Round {
    int64_t first = 0;           // its samples start at first in the source
    wire::Step step{};           // its slot set when it is sent
    std::vector<int64_t> sizes;  // its micro-batches (training) or batches
  };

  // Pipelined: rounds of several micro-batches, each round one STEP that
  // every worker runs as its share of the pipeline schedule. Training: each
  // step of `batch_size` samples is a round of ceil(size / micro)
  // micro-batches (as even as split_evenly makes them). Otherwise: rounds of
  // up to `round` batches of `batch_size` samples, two rounds in flight.
  // The input segment holds two rounds (2 x round slots): the next round is
  // written while the workers run this one. Calls on_done per step
  // (training) or per batch, in order, as run() does; same stop and return
  // rules (a stop collects the rounds in flight first).
  //
  // Training collects each round before sending the next (a step needs the
  // update of the one before it). Otherwise two rounds are in flight, so a
  // device starts round r + 1 while later devices finish round r; round
  // r + 1's slots are refilled once round r - 1 is collected.
  template <typename Source, typename OnDone>
  bool run_rounds(Source& source, const RoundsRun& run, OnDone& on_done) {
    const int64_t rounds = run.rounds();
    const size_t depth = run.train() ? 1 : 2;
    std::deque<Round> flight;  // sent, not collected, oldest first
    Round next = plan_round(run, 0);
    fill_round(source, next, run.base_of(0));
    for (int64_t r = 0; r < rounds; ++r) {
      if (interrupted()) {
        while (!flight.empty()) collect_round(flight, run, on_done);
        return false;
      }
      next.step.slot = run.base_of(r);
      group_.send(next.step);
      flight.push_back(std::move(next));
      if (r + 1 < rounds) {
        if (flight.size() > 1) collect_round(flight, run, on_done);  // round r - 1: its slots are round r + 1's
        next = plan_round(run, r + 1);
        fill_round(source, next, run.base_of(r + 1));
      }
      if (flight.size() >= depth) collect_round(flight, run, on_done);
    }
    while (!flight.empty()) collect_round(flight, run, on_done);
    return true;
  }

  // Round r of `run`, its slot not yet set.
  Round plan_round(const RoundsRun& run, int64_t r) const {
    Round out;
    wire::Step& s = out.step;
    s.step = run.train() ? run.first_step + r : r;
    s.flags = run.flags;
    if (run.train() && r == 0 && run.first_step == 0) s.flags |= extra_first_flags_;
    if (run.train()) {
      out.first = r * run.batch_size;
      s.batch_total = std::min(run.batch_size, run.count - out.first);
      s.micro_batches = static_cast<uint32_t>((s.batch_total + run.micro - 1) / run.micro);
      s.batch = (s.batch_total + s.micro_batches - 1) / s.micro_batches;
    } else {
      out.first = r * run.round * run.batch_size;
      s.batch_total = std::min(std::min(run.batches, (r + 1) * run.round) * run.batch_size, run.count) - out.first;
      s.batch = run.batch_size;
      s.micro_batches = static_cast<uint32_t>((s.batch_total + run.batch_size - 1) / run.batch_size);
    }
    out.sizes = wire::round_sizes(s);
    return out;
  }

  // Writes round `rd`'s samples into the input slots from `base` on.
  template <typename Source>
  void fill_round(Source& source, const Round& rd, uint32_t base) {
    const int64_t t0 = feed_started(rd.step);
    int64_t at = rd.first;
    for (size_t m = 0; m < rd.sizes.size(); ++m) {
      fill(source, base + static_cast<int64_t>(m), Unit{0, at, rd.sizes[m]});
      at += rd.sizes[m];
    }
    feed_done(t0, rd.step);
  }

  // Collects the oldest round in flight and hands on_done its step
  // (training) or each of its batches.
  template <typename OnDone>
  void collect_round(std::deque<Round>& flight, const RoundsRun& run, OnDone& on_done) {
    const Round rd = std::move(flight.front());
    flight.pop_front();
    const uint32_t base = rd.step.slot;
    StepResult res = group_.collect();
    if (run.train()) {
      on_done(rd.step.step - run.first_step, rd.step.batch_total, res, base);
      return;
    }
    for (size_t k = 0; k < rd.sizes.size(); ++k) {
      StepResult one;
      if (k < res.micro.size()) {
        one.loss = res.micro[k].loss;
        one.metric = res.micro[k].metric;
      }
      on_done(rd.step.step * run.round + static_cast<int64_t>(k), rd.sizes[k], one, base + static_cast<uint32_t>(k));
    }
  }

  // The coordinator's "feed" slice of a traced step (--trace): its start, or
  // -1 when the step is not traced.
  int64_t feed_started(const wire::Step& s) const {
    return group_.trace() && group_.trace()->covers(s) ? trace_now_ns() : -1;
  }
  void feed_done(int64_t start_ns, const wire::Step& s) {
    if (start_ns >= 0) group_.trace()->add_coordinator("feed", start_ns, trace_now_ns(), s);
  }
  struct Unit {
    int64_t batch, first, size;
  };
  // A unit of a lock-step run (a micro-batch, or a batch run whole): its
  // samples, its place among its batch's micro-batches, its batch's size.
  struct Planned {
    Unit unit;
    int64_t micro, micros, batch_total;
  };

  // Every unit of the first `batches` batches, in order. A batch's
  // micro-batches are as even as micro_batch_sizes() makes them (micro-batch
  // j of n samples in m: n/m samples, one more for the first n%m). A
  // data-parallel replica's share of a batch is split the same way (n/r
  // samples, one more for the first n%r replicas), and its micro-batches
  // split that share.
  std::vector<Planned> plan_units(int64_t count, int64_t batch_size, int64_t micro, int64_t batches,
                                  bool replicated) const {
    std::vector<Planned> units;
    for (int64_t i = 0; i < batches; ++i) {
      const int64_t n = std::min(batch_size, count - i * batch_size);
      Unit share{i, i * batch_size, n};
      if (replicated) {
        const int64_t base = n / replicas_, extra = n % replicas_;
        share = {i, i * batch_size + rank_ * base + std::min<int64_t>(rank_, extra), base + (rank_ < extra ? 1 : 0)};
      }
      if (share.size == 0)
        throw_invalid("batch " + std::to_string(i + 1) + " has " + std::to_string(n) + " samples, fewer than the " +
                      std::to_string(replicas_) + " data-parallel replicas: every replica needs one");
      const int64_t m = (share.size + micro - 1) / micro, base = share.size / m, extra = share.size % m;
      for (int64_t j = 0; j < m; ++j)
        units.push_back({{i, share.first + j * base + std::min(j, extra), base + (j < extra ? 1 : 0)}, j, m, n});
    }
    return units;
  }

  // What a lock-step run's units share.
  struct LockstepRun {
    int64_t first_step = 0, batch_size = 0;
    uint32_t flags = 0;
    bool replicated = false;
  };

  // Whether the unit after `p` may be sent before `p` is collected: the
  // micro-batches of a training step, and the next step when the caller's
  // run_ahead allows (on one host, without replicas, whose steps end in the
  // exchange).
  bool may_overlap(const Planned& p, const LockstepRun& run) const {
    if (!(run.flags & wire::kTrain) || run.replicated || group_.hosts() != nullptr) return false;
    return p.micro + 1 < p.micros || (run_ahead_ && run_ahead_(run.first_step + p.unit.batch));
  }

  // The STEP of unit number k.
  wire::Step lockstep_step(const Planned& p, int64_t k, const LockstepRun& run) const {
    const int64_t i = p.unit.batch, first_step = run.first_step;
    const uint32_t flags = run.flags;
    const bool replicated = run.replicated;
    wire::Step s{};
    s.step = first_step + i;
    s.batch = p.unit.size;
    s.sample_offset = p.unit.first - i * run.batch_size;
    s.batch_total = p.batch_total;
    s.slot = static_cast<uint32_t>(k % layout_.slots);
    s.flags = flags;
    if (flags & wire::kTrain) {
      if (p.micro > 0) s.flags |= wire::kAccumulate;
      if (p.micro + 1 < p.micros || replicated) s.flags |= wire::kNoUpdate;  // a replica updates after the exchange
      if (i == 0 && first_step == 0) s.flags |= extra_first_flags_;
    }
    if (replicated && p.micro + 1 == p.micros) s.flags |= wire::kSendGradients;
    return s;
  }
  template <typename Source>
  void fill(Source& source, int64_t index, const Unit& u) {
    char* base =
        static_cast<char*>(segment_.data()) + static_cast<uint64_t>(index % layout_.slots) * layout_.slot_bytes;
    source.fill(u.first, u.size, reinterpret_cast<float*>(base + image_off_),
                reinterpret_cast<float*>(base + label_off_));
  }

  WorkerGroup& group_;
  ShmSegment& segment_;
  const InputLayout& layout_;
  uint64_t image_off_ = 0, label_off_ = 0;
  uint32_t extra_first_flags_ = 0;
  int round_ = 0;
  int rank_ = 0, replicas_ = 1;
  GradientExchange* exchange_ = nullptr;
  std::function<bool(int64_t)> run_ahead_;
};

}  // namespace devmap
