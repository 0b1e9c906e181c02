#include "coordinator/plan/memory_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "coordinator/plan/step_costs.h"
#include "core/base/error.h"
#include "core/base/format_bytes.h"

namespace devmap {
namespace {

// The plan of `config` with `device`'s memory_limit at `limit`, as a point;
// nullopt when no plan fits that limit.
std::optional<MemoryCurvePoint> point_at(const Config& config, const RunOptions& options, const Graph& graph,
                                         const JobShape& shape, const std::string& device, uint64_t limit) {
  Config c = config;
  for (DeviceSpec& d : c.devices)
    if (d.name == device) d.memory_limit = static_cast<int64_t>(limit);
  try {
    const JobPlan plan(c, options, graph, shape);
    MemoryCurvePoint p;
    p.limit = limit;
    for (const DeviceMemoryPlan& d : plan.memory.plan.devices)
      if (d.device == device) p.planned = d.total();
    p.micro_batches = plan.memory.split.count;
    const RunPrediction r = predict_run_step(c, options, plan.graph, plan.partition, plan.memory);
    p.step_seconds = r.step_seconds;
    p.calibrated = r.estimated.empty();
    return p;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    return std::nullopt;
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace

MemoryCurve memory_curve(const Config& config, const RunOptions& options, const JobPlan& plan, const JobShape& shape,
                         double step, int max_points) {
  MemoryCurve curve;
  // The device with the tightest memory_limit, else the one whose plan is largest.
  const DeviceMemoryPlan* chosen = nullptr;
  for (const DeviceMemoryPlan& d : plan.memory.plan.devices) {
    const bool better = !chosen || (d.limit && (!chosen->limit || d.limit < chosen->limit)) ||
                        (!d.limit && !chosen->limit && d.total() > chosen->total());
    if (better) chosen = &d;
  }
  if (!chosen) throw_invalid(config.path + ": the plan has no device to draw a memory curve of");
  curve.device = chosen->device;
  const DeviceSpec* spec = config.find_device(curve.device);
  const uint64_t today_limit = spec ? static_cast<uint64_t>(spec->memory_limit) : 0;
  // Today's plan, then from what it needs unconstrained downwards.
  const std::optional<MemoryCurvePoint> today = point_at(config, options, plan.graph, shape, curve.device, today_limit);
  const std::optional<MemoryCurvePoint> free = point_at(config, options, plan.graph, shape, curve.device, 0);
  if (!today || !free) throw_invalid(config.path + ": today's plan does not fit, so it has no memory curve");
  std::vector<MemoryCurvePoint> points = {*today};
  MemoryCurvePoint top = *free;
  top.limit = free->planned;  // the limit at which nothing more is needed
  points.push_back(top);
  for (double limit = static_cast<double>(top.limit) * step; static_cast<int>(points.size()) < max_points;
       limit *= step) {
    const std::optional<MemoryCurvePoint> p =
        point_at(config, options, plan.graph, shape, curve.device, static_cast<uint64_t>(limit));
    if (!p) break;
    points.push_back(*p);
  }
  // By limit, largest first (none counts as the largest); today's point kept once.
  auto key = [](const MemoryCurvePoint& p) { return p.limit == 0 ? UINT64_MAX : p.limit; };
  const MemoryCurvePoint today_point = points.front();
  std::stable_sort(points.begin(), points.end(), [&](const auto& a, const auto& b) { return key(a) > key(b); });
  points.erase(
      std::unique(points.begin(), points.end(), [&](const auto& a, const auto& b) { return key(a) == key(b); }),
      points.end());
  for (size_t i = 0; i < points.size(); ++i)
    if (key(points[i]) == key(today_point)) curve.today = i;
  curve.points = std::move(points);
  return curve;
}

std::string memory_curve_csv(const MemoryCurve& curve) {
  std::string out = "device,limit_bytes,planned_bytes,micro_batches,predicted_step_ms,calibrated,today\n";
  for (size_t i = 0; i < curve.points.size(); ++i) {
    const MemoryCurvePoint& p = curve.points[i];
    out += curve.device + "," + std::to_string(p.limit) + "," + std::to_string(p.planned) + "," +
           std::to_string(p.micro_batches) + "," + fixed(p.step_seconds * 1e3, 3) + "," + (p.calibrated ? "1" : "0") +
           "," + (i == curve.today ? "1" : "0") + "\n";
  }
  return out;
}

std::string memory_curve_svg(const MemoryCurve& curve, const std::string& title) {
  // Axes: x the planned bytes of the device (MiB), y the predicted step (ms).
  const double w = 720, h = 440, left = 70, right = 20, top = 50, bottom = 60;
  double x_max = 0, y_max = 0;
  for (const MemoryCurvePoint& p : curve.points) {
    x_max = std::max(x_max, mib(p.planned));
    y_max = std::max(y_max, p.step_seconds * 1e3);
  }
  x_max = std::max(x_max * 1.05, 1.0);
  y_max = std::max(y_max * 1.1, 1.0);
  auto X = [&](double v) { return left + v / x_max * (w - left - right); };
  auto Y = [&](double v) { return h - bottom - v / y_max * (h - top - bottom); };
  std::string s =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fixed(w, 0) + "\" height=\"" + fixed(h, 0) +
      "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fixed(left, 0) + "\" y=\"24\" font-size=\"15\">" + title + "</text>\n";
  s += "<line x1=\"" + fixed(left, 1) + "\" y1=\"" + fixed(h - bottom, 1) + "\" x2=\"" + fixed(w - right, 1) +
       "\" y2=\"" + fixed(h - bottom, 1) + "\" stroke=\"black\"/>\n";
  s += "<line x1=\"" + fixed(left, 1) + "\" y1=\"" + fixed(top, 1) + "\" x2=\"" + fixed(left, 1) + "\" y2=\"" +
       fixed(h - bottom, 1) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {  // ticks
    const double xv = x_max * i / 5, yv = y_max * i / 5;
    s += "<text x=\"" + fixed(X(xv), 1) + "\" y=\"" + fixed(h - bottom + 18, 1) + "\" text-anchor=\"middle\">" +
         fixed(xv, 0) + "</text>\n";
    s += "<text x=\"" + fixed(left - 6, 1) + "\" y=\"" + fixed(Y(yv) + 4, 1) + "\" text-anchor=\"end\">" +
         fixed(yv, 0) + "</text>\n";
  }
  s += "<text x=\"" + fixed((left + w - right) / 2, 1) + "\" y=\"" + fixed(h - 16, 1) + "\" text-anchor=\"middle\">" +
       curve.device + ": planned MiB (its memory_limit at least this)</text>\n";
  s += "<text transform=\"translate(18," + fixed((top + h - bottom) / 2, 1) +
       ") rotate(-90)\" text-anchor=\"middle\">predicted step (ms)</text>\n";
  std::string line;
  for (const MemoryCurvePoint& p : curve.points)
    line += fixed(X(mib(p.planned)), 1) + "," + fixed(Y(p.step_seconds * 1e3), 1) + " ";
  s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"" + line + "\"/>\n";
  for (size_t i = 0; i < curve.points.size(); ++i) {
    const MemoryCurvePoint& p = curve.points[i];
    const bool today = i == curve.today;
    s += "<circle cx=\"" + fixed(X(mib(p.planned)), 1) + "\" cy=\"" + fixed(Y(p.step_seconds * 1e3), 1) + "\" r=\"" +
         (today ? "6" : "3") + "\" fill=\"" + (today ? "#d62728" : "#1f77b4") + "\"><title>" + format_bytes(p.planned) +
         ", " + std::to_string(p.micro_batches) + " micro-batch" + (p.micro_batches == 1 ? "" : "es") + ", " +
         fixed(p.step_seconds * 1e3, 1) + " ms</title></circle>\n";
    if (today)
      s += "<text x=\"" + fixed(X(mib(p.planned)) + 9, 1) + "\" y=\"" + fixed(Y(p.step_seconds * 1e3) - 9, 1) +
           "\" fill=\"#d62728\">today: " + format_bytes(p.planned) + ", " + fixed(p.step_seconds * 1e3, 1) +
           " ms</text>\n";
  }
  return s + "</svg>\n";
}

}  // namespace devmap
