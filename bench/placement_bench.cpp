// How long the placement planner takes on 1000-op graphs: a chain (500
// dense + relu pairs, the chain search) and a random DAG with
// residual adds (the heuristic), over 2, 3 and 4 synthetic devices (CPU-like
// and one GPU-like, PCIe-like links). Prints one line per case with the
// median of `--repeat` runs (3), the method, whether the chain search
// finished (exact), the placements scored and the predicted step time.
//   build/ci/bin/placement_bench [--repeat N] [--only chain|dag]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/placement/planner.h"
#include "tests/core/planner_graphs.h"

using namespace devmap;

namespace {

std::vector<PlannerDevice> devices(int count) {
  std::vector<PlannerDevice> out;
  for (int d = 0; d + 1 < count; ++d) out.push_back(planner_test::cpu_like("cpu:" + std::to_string(d), 0));
  out.push_back(planner_test::gpu_like("gpu:0", uint64_t{64} << 20));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  std::string only;  // --only chain|dag
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
  }
  std::vector<int64_t> widths(501, 64);
  widths.back() = 10;
  const Graph chain = planner_test::mlp(widths);
  std::mt19937 rng(1000);
  const Graph dag = planner_test::random_dag(rng, 996, 64);
  std::printf("%-6s %7s %7s %10s %11s %6s %8s %12s\n", "graph", "ops", "devices", "median_s", "method", "exact",
              "scored", "step_ms");
  for (const auto& [name, graph] : {std::pair<const char*, const Graph*>{"chain", &chain}, {"dag", &dag}})
    for (int nd : {2, 3, 4}) {
      if (!only.empty() && only != name) continue;
      PlacementRequest r;
      r.graph = graph;
      r.devices = devices(nd);
      r.links = planner_test::links_for(r.devices);
      r.batch = 64;
      r.optimizer_states = 1;
      std::vector<double> seconds;
      PlacementResult res;
      for (int k = 0; k < repeat; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        res = plan_placement(r);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(seconds.begin(), seconds.end());
      std::printf("%-6s %7d %7d %10.3f %11s %6s %8d %12.3f\n", name, graph->size(), nd, seconds[seconds.size() / 2],
                  res.fits ? res.plan.method.c_str() : "no fit", res.plan.exact ? "yes" : "no", res.plan.evaluations,
                  res.fits ? 1e3 * res.plan.choice.step_seconds : 0.0);
      std::fflush(stdout);
    }
  return 0;
}
