// Target calibration_cache: bytes as a calibration cache file ->
// CalibrationCache::load. A file it accepts must save and load back to the
// same text, and its numbers, used as the op, update, step, link and
// contention costs of a small CNN on two CPU devices (with budgets that
// force a choice), must give the placement planner a plan with a finite
// step time or a refusal: never a crash, whatever the values the loader
// lets through (its comparisons are total).
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/config/loader.h"
#include "coordinator/plan/calibration_cache.h"
#include "core/base/error.h"
#include "core/placement/planner.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_targets.h"

namespace devmap::fuzz {
namespace {

constexpr const char* kModel = R"(model:
  ops:
    - {name: image, op: input, shape: [1, 12, 12]}
    - {name: label, op: labels, classes: 4}
    - {name: conv1, op: conv2d, inputs: [image], filters: 4, kernel: 3, padding: 1}
    - {name: relu1, op: relu, inputs: [conv1]}
    - {name: pool1, op: max_pool2d, inputs: [relu1], kernel: 2}
    - {name: flat, op: flatten, inputs: [pool1]}
    - {name: fc1, op: dense, inputs: [flat], units: 16}
    - {name: logits, op: dense, inputs: [fc1], units: 4}
    - {name: loss, op: softmax_cross_entropy, inputs: [logits, label]}
devices: {cpu:0: {threads: 1}, cpu:1: {threads: 1}}
)";

// A file of its own per process (libFuzzer may run several).
std::string scratch(const char* what) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/devmap-fuzz-" + what + "-" + std::to_string(::getpid()) + ".tsv";
}

std::string saved_text(const CalibrationCache& cache) {
  const std::string path = scratch("saved");
  cache.save(path);
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  ::unlink(path.c_str());
  return text.str();
}

// Every number of the saved entries (the fields after their keys), in order.
std::vector<double> numbers_of(const std::string& text) {
  std::vector<double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind, field;
    std::getline(fields, kind, '\t');
    const int keys = kind == "op" || kind == "optimizer" || kind == "link" ? 2 : 1;
    for (int k = 0; std::getline(fields, field, '\t'); ++k)
      if (k >= keys) out.push_back(std::strtod(field.c_str(), nullptr));
  }
  return out;
}

void plan_with(const std::vector<double>& v) {
  static const Config config = load_config_text(kModel, "fuzz.yaml");
  const Graph& graph = config.graph;
  size_t next = 0;
  auto take = [&](double fallback) { return v.empty() ? fallback : v[next++ % v.size()]; };
  MeasuredOpTimes times;
  for (const char* device : {"cpu:0", "cpu:1"})
    for (int i = 0; i < graph.size(); ++i)
      for (bool backward : {false, true}) times.add(graph.node(i).name, device, 8, backward, take(1e-4));
  PlacementRequest r;
  r.graph = &graph;
  r.batch = 8;
  r.measured = &times;
  r.pins.assign(static_cast<size_t>(graph.size()), "");
  for (const char* name : {"cpu:0", "cpu:1"}) {
    PlannerDevice d;
    d.name = name;
    d.memory_limit = 96 << 10;  // tight: micro-batches and splits compete
    d.update_seconds_per_param = take(0);
    d.step_overhead_s = take(0);
    r.devices.push_back(d);
  }
  r.links = {{LinkCost{}, LinkCost{take(0), take(1e9)}}, {LinkCost{take(0), take(1e9)}, LinkCost{}}};
  r.contention = take(0);
  r.max_evaluations = 40;
  const PlacementResult result = plan_placement(r);
  if (result.fits) FUZZ_CHECK(std::isfinite(result.plan.choice.step_seconds), "a plan that fits has a step time");
}

}  // namespace

void run_calibration_cache(std::string_view data) {
  const std::string path = scratch("input");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  try {
    const CalibrationCache cache = CalibrationCache::load(path);
    ::unlink(path.c_str());
    const std::string text = saved_text(cache);
    const std::string again_path = scratch("again");
    { std::ofstream(again_path, std::ios::trunc) << text; }
    const CalibrationCache again = CalibrationCache::load(again_path);
    ::unlink(again_path.c_str());
    FUZZ_CHECK(saved_text(again) == text, "a saved cache loads back to the same entries");
    for (double x : numbers_of(text)) FUZZ_CHECK(std::isfinite(x) && x >= 0, "the loader keeps finite values only");
    plan_with(numbers_of(text));
  } catch (const Error&) {
    ::unlink(path.c_str());  // a damaged file, refused with its line
  }
}

}  // namespace devmap::fuzz
