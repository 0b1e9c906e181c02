// The placement planner against brute force: exact on chains (over every
// contiguous placement), within 10% on small random DAGs (over every
// placement), budgets never broken, pins always kept; a fast device with
// little memory beside slow ones with plenty; and the answer when nothing
// fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>

#include "core/base/error.h"
#include "core/placement/planner.h"
#include "core/placement/search.h"
#include "tests/core/graph_builders.h"
#include "tests/core/planner_graphs.h"

namespace devmap {
namespace {

using planner_test::cpu_like;
using planner_test::gpu_like;
using planner_test::links_for;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr double kInf = std::numeric_limits<double>::infinity();

PlacementRequest request_for(const Graph& g, std::vector<PlannerDevice> devices, int64_t batch) {
  PlacementRequest r;
  r.graph = &g;
  r.devices = std::move(devices);
  r.links = links_for(r.devices);
  r.batch = batch;
  r.optimizer_states = 1;  // momentum
  r.micro_batch_counts = {1, 2, 4};
  return r;
}

// Every assignment of the free ops to devices (pins kept), completed.
template <typename Visit>
void for_each_placement(const PlacementScorer& scorer, Visit visit) {
  const std::vector<int>& free = scorer.free_ops();
  const int nd = scorer.device_count();
  std::vector<int> digits(free.size(), 0);
  for (;;) {
    std::vector<int> p(static_cast<size_t>(scorer.request().graph->size()), -1);
    for (int op : scorer.compute_ops()) p[static_cast<size_t>(op)] = scorer.pinned_device(op);
    for (size_t k = 0; k < free.size(); ++k) p[static_cast<size_t>(free[k])] = digits[k];
    visit(scorer.complete(std::move(p)));
    size_t k = 0;
    while (k < digits.size() && ++digits[k] == nd) digits[k++] = 0;
    if (k == digits.size()) return;
  }
}

// Each device's computed ops form one run of the chain.
bool contiguous(const PlacementScorer& scorer, const std::vector<int>& placement) {
  std::set<int> done;
  int current = -1;
  for (int op : scorer.compute_ops()) {
    const int d = placement[static_cast<size_t>(op)];
    if (d == current) continue;
    if (done.count(d)) return false;
    done.insert(d);
    current = d;
  }
  return true;
}

// The least step time of every placement `keep` accepts (infinity: none fits).
template <typename Keep>
double brute_force(const PlacementRequest& r, Keep keep) {
  PlacementScorer scorer(r);
  double best = kInf;
  for_each_placement(scorer, [&](const std::vector<int>& p) {
    if (!keep(scorer, p)) return;
    const PlacementScore s = scorer.score(p);
    if (s.fits) best = std::min(best, s.best.step_seconds);
  });
  return best;
}

void expect_within_budgets(const PlacementPlan& plan, const PlacementRequest& r) {
  EXPECT_TRUE(plan.memory.fits());
  for (const DeviceForecast& d : plan.devices) {
    for (const PlannerDevice& dev : r.devices) {
      if (dev.name == d.device && dev.memory_limit) {
        EXPECT_LE(d.memory_bytes, dev.memory_limit) << d.device;
      }
    }
    EXPECT_NEAR(d.busy_seconds + d.idle_seconds, plan.choice.step_seconds, 1e-9 * plan.choice.step_seconds);
  }
}

void expect_pins_kept(const PlacementPlan& plan, const PlacementRequest& r) {
  for (size_t i = 0; i < r.pins.size(); ++i) {
    if (!r.pins[i].empty()) {
      EXPECT_EQ(plan.placement[i], r.pins[i]) << r.graph->node(static_cast<int>(i)).name;
    }
  }
}

std::vector<PlannerDevice> random_devices(std::mt19937& rng, int count, uint64_t roomy) {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<PlannerDevice> out;
  for (int d = 0; d < count; ++d) {
    PlannerDevice dev = d == 0 && u(rng) < 0.5 ? gpu_like("gpu:0", 0) : cpu_like("cpu:" + std::to_string(d), 0);
    dev.rates.flops_per_s *= 0.2 + 2 * u(rng);
    dev.rates.bytes_per_s *= 0.2 + 2 * u(rng);
    // Some devices are tight: a fraction of what the whole model needs.
    dev.memory_limit = u(rng) < 0.4 ? static_cast<uint64_t>(static_cast<double>(roomy) * (0.3 + 0.5 * u(rng))) : 0;
    if (!dev.host_memory && dev.memory_limit) dev.memory_limit += uint64_t{32} << 20;  // cuBLAS's workspace
    out.push_back(std::move(dev));
  }
  return out;
}

// What one device needs for the whole model, at the least memory.
uint64_t whole_model_bytes(const Graph& g, int64_t batch) {
  PlacementRequest r = request_for(g, {cpu_like("cpu:0", 0)}, batch);
  PlacementScorer scorer(r);
  std::vector<int> p(static_cast<size_t>(g.size()), 0);
  return scorer.score(scorer.complete(p)).least_need[0];
}

TEST(PlacementPlanner, ChainsMatchTheBestContiguousPlacement) {
  std::mt19937 rng(18);
  int fitted = 0;
  for (int trial = 0; trial < 24; ++trial) {
    std::vector<int64_t> widths = {64};
    const int layers = 2 + static_cast<int>(rng() % 3);
    for (int k = 0; k < layers; ++k) widths.push_back(int64_t{16} << (rng() % 6));
    const Graph g = planner_test::mlp(widths);
    const int64_t batch = int64_t{8} << (rng() % 3);
    PlacementRequest r =
        request_for(g, random_devices(rng, 2 + static_cast<int>(rng() % 2), whole_model_bytes(g, batch)), batch);
    r.links = links_for(r.devices);
    if (trial % 3 == 0) {  // a pin
      r.pins.assign(static_cast<size_t>(g.size()), "");
      r.pins[static_cast<size_t>(g.find("fc1"))] = r.devices.back().name;
    }
    const double best = brute_force(r, contiguous);
    const PlacementResult res = plan_placement(r);
    if (best == kInf) {  // no contiguous placement fits; one that returns to a device may
      if (res.fits) {
        EXPECT_EQ(res.plan.method, "heuristic");
        expect_within_budgets(res.plan, r);
      }
      continue;
    }
    ASSERT_TRUE(res.fits) << "trial " << trial;
    ++fitted;
    EXPECT_EQ(res.plan.method, "chain");
    EXPECT_TRUE(res.plan.exact);
    EXPECT_NEAR(res.plan.choice.step_seconds, best, 1e-12 * best) << "trial " << trial;
    expect_within_budgets(res.plan, r);
    expect_pins_kept(res.plan, r);
  }
  EXPECT_GE(fitted, 12);  // the tables are not all impossible
}

TEST(PlacementPlanner, SmallDagsComeWithinTenPercentOfTheBestPlacement) {
  std::mt19937 rng(1812);
  int fitted = 0, multi_device = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const int ops = 4 + static_cast<int>(rng() % 5);  // with x, y, head and loss: at most 12 ops
    const Graph g = planner_test::random_dag(rng, ops, int64_t{32} << (rng() % 5));
    const int64_t batch = 16;
    PlacementRequest r = request_for(g, random_devices(rng, 3, whole_model_bytes(g, batch)), batch);
    // Pins until at most six ops are free, so that brute force stays small.
    r.pins.assign(static_cast<size_t>(g.size()), "");
    {
      PlacementScorer probe(r);
      std::vector<int> free = probe.free_ops();
      std::shuffle(free.begin(), free.end(), rng);
      for (size_t k = 6; k < free.size(); ++k)
        r.pins[static_cast<size_t>(free[k])] = r.devices[rng() % r.devices.size()].name;
    }
    const double best = brute_force(r, [](const PlacementScorer&, const std::vector<int>&) { return true; });
    const PlacementResult res = plan_placement(r);
    ASSERT_EQ(res.fits, best < kInf) << "trial " << trial;
    if (!res.fits) continue;
    ++fitted;
    EXPECT_LE(res.plan.choice.step_seconds, 1.10 * best) << "trial " << trial << " method " << res.plan.method;
    EXPECT_GE(res.plan.choice.step_seconds, best * (1 - 1e-12));
    expect_within_budgets(res.plan, r);
    expect_pins_kept(res.plan, r);
    if (res.plan.devices.size() > 1) ++multi_device;
  }
  EXPECT_GE(fitted, 10);
  EXPECT_GE(multi_device, 3);  // the tables make splitting worth it sometimes
}

TEST(PlacementPlanner, AFastDeviceWithLittleMemoryBesideSlowOnesWithPlenty) {
  // fc1 holds 4096 x 2048 weights: 32 MiB, 96 MiB with its gradient and
  // momentum; the GPU has 64 MiB beside cuBLAS's 32.
  const Graph g = planner_test::mlp({2048, 4096, 1024, 1024, 10});
  const uint64_t gpu_limit = 96 * kMiB;
  PlacementRequest r = request_for(
      g, {gpu_like("gpu:0", gpu_limit), cpu_like("cpu:0", 4096 * kMiB), cpu_like("cpu:1", 4096 * kMiB)}, 64);
  r.micro_batch_counts = {1, 2, 4, 8};
  const PlacementResult res = plan_placement(r);
  ASSERT_TRUE(res.fits);
  expect_within_budgets(res.plan, r);
  const std::vector<std::string>& where = res.plan.placement;
  EXPECT_NE(where[static_cast<size_t>(g.find("fc1"))], "gpu:0");  // it cannot be there
  // The other large layers run where they are fastest.
  EXPECT_EQ(where[static_cast<size_t>(g.find("fc2"))], "gpu:0") << describe_placement(g, where);
  EXPECT_EQ(where[static_cast<size_t>(g.find("fc3"))], "gpu:0") << describe_placement(g, where);
  EXPECT_EQ(res.plan.method, "chain");
  // Faster than the CPUs alone, and the all-GPU placement is rejected for its budget.
  PlacementScorer scorer(r);
  const PlacementScore cpu_only = scorer.score(scorer.complete(std::vector<int>(static_cast<size_t>(g.size()), 1)));
  ASSERT_TRUE(cpu_only.fits);
  EXPECT_LT(res.plan.choice.step_seconds, cpu_only.best.step_seconds);
  bool gpu_rejected = false;
  for (const RejectedPlan& x : res.plan.runners_up)
    if (x.why == RejectedPlan::Why::kOverBudget && x.device == "gpu:0") {
      gpu_rejected = true;
      EXPECT_NE(x.reason().find("over the budget of gpu:0 by"), std::string::npos);
    }
  EXPECT_TRUE(gpu_rejected);
  EXPECT_GT(res.plan.bytes_per_step, 0u);
  EXPECT_EQ(res.plan.estimated.size(), 8u);  // no measurement at all: 4 dense, 3 relu and the loss
}

// `auto` never chooses a plan it predicts slower than the model on one
// device alone, where that device fits it: every device alone is a
// candidate of both searches (chains and other graphs).
TEST(PlacementPlanner, NeverSlowerThanASingleDeviceThatFits) {
  std::mt19937 rng(36);
  int alone_fits = 0, split_forced = 0;
  for (int trial = 0; trial < 16; ++trial) {
    const bool chain = trial % 2 == 0;
    const Graph g = chain ? reference_cnn() : planner_test::random_dag(rng, 6, int64_t{64} << (rng() % 4));
    const int64_t batch = 32;
    PlacementRequest r = request_for(g, random_devices(rng, 2, whole_model_bytes(g, 1)), batch);
    const PlacementResult res = plan_placement(r);
    if (!res.fits) continue;
    PlacementScorer scorer(r);
    bool any_alone = false;
    for (int d = 0; d < scorer.device_count(); ++d) {
      const PlacementScore alone = scorer.score(scorer.complete(std::vector<int>(static_cast<size_t>(g.size()), d)));
      if (!alone.fits) continue;
      any_alone = true;
      EXPECT_LE(res.plan.choice.step_seconds, alone.best.step_seconds * (1 + 1e-12))
          << "trial " << trial << ": " << describe_placement(g, res.plan.placement) << " against "
          << r.devices[static_cast<size_t>(d)].name << " alone";
    }
    ++(any_alone ? alone_fits : split_forced);
    if (!any_alone) {
      EXPECT_GT(res.plan.devices.size(), 1u) << "trial " << trial;
    }
  }
  EXPECT_GE(alone_fits, 4);
}

TEST(PlacementPlanner, PinsStayWhereTheUserPutThem) {
  const Graph g = reference_cnn();
  PlacementRequest r = request_for(g, {cpu_like("cpu:0", 0), gpu_like("gpu:0", 0)}, 64);
  r.pins.assign(static_cast<size_t>(g.size()), "");
  r.pins[static_cast<size_t>(g.find("conv2"))] = "cpu:0";  // the GPU would be far faster
  r.pins[static_cast<size_t>(g.find("loss"))] = "cpu:0";
  const PlacementResult res = plan_placement(r);
  ASSERT_TRUE(res.fits);
  expect_pins_kept(res.plan, r);
  EXPECT_EQ(res.plan.placement[static_cast<size_t>(g.find("image"))], "");  // fed: no device

  r.pins[static_cast<size_t>(g.find("fc1"))] = "cpu:7";
  try {
    plan_placement(r);
    FAIL() << "cpu:7 is not declared";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("'fc1' is pinned to 'cpu:7'"), std::string::npos) << e.what();
  }
}

TEST(PlacementPlanner, TheReferenceModelUnderTightBudgets) {
  // fc1 with its gradient and momentum needs about 37 MiB: not on cpu:0.
  const Graph g = reference_cnn();
  PlacementRequest r = request_for(g, {cpu_like("cpu:0", 32 * kMiB), cpu_like("cpu:1", 48 * kMiB)}, 64);
  r.micro_batch_counts = default_micro_batch_counts(64, 16);
  const PlacementResult res = plan_placement(r);
  ASSERT_TRUE(res.fits);
  expect_within_budgets(res.plan, r);
  EXPECT_EQ(res.plan.placement[static_cast<size_t>(g.find("fc1"))], "cpu:1");
  EXPECT_TRUE(res.plan.exact);
  // The memory reported is the memory plan's, at the plan's micro-batch.
  EXPECT_EQ(res.plan.memory.batch, res.plan.choice.micro_batch);
}

// Every count whose micro-batches differ in size, even or not: a limit
// that holds 22 samples runs 64 as 3 micro-batches, not 4 of 16.
TEST(PlacementPlanner, DefaultCountsGiveEveryMicroBatchSizeUpToTheMost) {
  EXPECT_EQ(default_micro_batch_counts(64, 16), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16}));
  EXPECT_EQ(default_micro_batch_counts(4, 16), (std::vector<int>{1, 2, 4})) << "3 would run 2 samples, as 2 does";
  EXPECT_EQ(default_micro_batch_counts(1, 16), (std::vector<int>{1}));
}

TEST(PlacementPlanner, WhenNothingFitsItSaysWhatWould) {
  const Graph g = reference_cnn();
  PlacementRequest r = request_for(g, {cpu_like("cpu:0", 16 * kMiB), cpu_like("cpu:1", 16 * kMiB)}, 64);
  const PlacementResult res = plan_placement(r);
  ASSERT_FALSE(res.fits);
  const NoFit& f = res.no_fit;
  EXPECT_EQ(f.largest_op, "fc1");
  EXPECT_GT(f.largest_op_bytes, 36 * kMiB);
  ASSERT_FALSE(f.shortfalls.empty());
  for (const DeviceShortfall& s : f.shortfalls) EXPECT_GT(s.need, s.limit);
  ASSERT_FALSE(f.suggestions.empty());
  bool adds = false;
  for (const FitSuggestion& s : f.suggestions) {
    // Every suggestion makes the same request fit.
    PlacementRequest fixed = r;
    if (s.kind == FitSuggestion::Kind::kRaiseLimit) {
      for (PlannerDevice& d : fixed.devices)
        if (d.name == s.device) d.memory_limit = s.bytes;
    } else {
      adds = true;
      EXPECT_GE(s.bytes, f.largest_op_bytes);  // an op is never split
      fixed.devices.push_back(cpu_like("cpu:2", s.bytes));
      fixed.links = links_for(fixed.devices);
    }
    EXPECT_TRUE(plan_placement(fixed).fits) << format_no_fit(f);
  }
  EXPECT_TRUE(adds);
  const std::string text = format_no_fit(f);
  EXPECT_NE(text.find("fc1 alone needs"), std::string::npos) << text;
  EXPECT_NE(text.find("raise cpu:"), std::string::npos) << text;
  EXPECT_NE(text.find("add a device with a memory_limit of"), std::string::npos) << text;
}

TEST(PlacementPlanner, MeasuredTimesWinOverTheEstimateAndTheRestIsNamed) {
  const Graph g = planner_test::mlp({256, 512, 10});  // fc1, relu1, fc2
  MeasuredOpTimes measured;
  for (const char* name : {"fc1", "fc2", "loss"})
    for (bool backward : {false, true}) {
      measured.add(name, "cpu:0", 8, backward, 1e-3);
      measured.add(name, "cpu:0", 32, backward, 4e-3);
    }
  PlacementRequest r = request_for(g, {cpu_like("cpu:0", 0)}, 16);
  r.measured = &measured;
  PlacementScorer scorer(r);
  EXPECT_DOUBLE_EQ(scorer.op_seconds(g.find("fc1"), 0, 16, false), 2e-3);  // between 8 and 32
  EXPECT_NE(scorer.op_seconds(g.find("relu1"), 0, 16, false), 0.0);
  EXPECT_DOUBLE_EQ(scorer.op_seconds(g.find("fc2"), 0, 64, true),
                   analytical_seconds(g.node(g.find("fc2")), r.devices[0].rates, 64, true));  // beyond: estimated
  r.micro_batch_counts = {2};
  const PlacementResult res = plan_placement(r);
  ASSERT_TRUE(res.fits);
  EXPECT_EQ(res.plan.estimated, std::vector<std::string>{"relu1 on cpu:0"});
}

TEST(PlacementPlanner, LockStepAtTheLeastMicroBatchIsTheLeastMemory) {
  // The scorer's least memory (one buffer set, rings at their least) is
  // what plan_pipeline asks for lock-step at any count.
  Graph g = reference_cnn();
  for (int i = 0; i < g.size(); ++i) g.node(i).device = i <= g.find("pool2") ? "cpu:0" : "cpu:1";
  const Program program = build_training_program(g);
  const Partition part = partition_program(g, program);
  for (int count : {1, 4, 64}) {
    const PipelinePlan p = plan_pipeline(g, part, true, PipelineKind::kNone, count, 2);
    EXPECT_EQ(p.sets, std::vector<int>(part.devices.size(), 1));
    EXPECT_EQ(p.edge_slots, std::vector<int>(part.edges.size(), 2));
  }
}

TEST(PlacementPlanner, PlansAThousandOpGraph) {
  // 500 dense + relu pairs of width 64 (a chain), and a residual DAG of the
  // same size; both complete (the bench times them).
  std::vector<int64_t> widths(501, 64);
  widths.back() = 10;
  const Graph chain = planner_test::mlp(widths);
  std::mt19937 rng(1000);
  const Graph dag = planner_test::random_dag(rng, 1000, 64);
  for (const Graph* g : {&chain, &dag}) {
    PlacementRequest r = request_for(*g, {cpu_like("cpu:0", 0), cpu_like("cpu:1", 0), gpu_like("gpu:0", 0)}, 64);
    r.max_evaluations = 200;
    const PlacementResult res = plan_placement(r);
    ASSERT_TRUE(res.fits);
    EXPECT_EQ(res.plan.placement.size(), static_cast<size_t>(g->size()));
    EXPECT_EQ(res.plan.method, g == &chain ? "chain" : "heuristic");
  }
}

}  // namespace
}  // namespace devmap
