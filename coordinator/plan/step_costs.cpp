#include "coordinator/plan/step_costs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "coordinator/config/worker_program.h"
#include "coordinator/plan/gpu_placement.h"
#include "coordinator/util/program_output.h"
#include "coordinator/util/version.h"
#include "core/base/error.h"

namespace devmap {
namespace {

constexpr double kOpOverhead = 20e-6;
constexpr double kUpdateSecondsPerParameter = 1e-9;

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// Linear between the nearest measured batches, scaled beyond them.
std::optional<OpSeconds> interpolate(const std::map<int64_t, OpSeconds>& sizes, int64_t batch) {
  if (sizes.empty()) return std::nullopt;
  auto hi = sizes.lower_bound(batch);
  if (hi != sizes.end() && hi->first == batch) return hi->second;
  auto scaled = [&](const std::pair<const int64_t, OpSeconds>& at) {
    const double f = static_cast<double>(batch) / static_cast<double>(at.first);
    return OpSeconds{at.second.forward * f, at.second.backward * f};
  };
  if (hi == sizes.end()) return scaled(*std::prev(hi));
  if (hi == sizes.begin()) return scaled(*hi);
  auto lo = std::prev(hi);
  const double w = static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return OpSeconds{lo->second.forward + w * (hi->second.forward - lo->second.forward),
                   lo->second.backward + w * (hi->second.backward - lo->second.backward)};
}

}  // namespace

std::optional<OpSeconds> calibrated_op_seconds(const CalibrationCache& cache, const std::string& device_key,
                                               const std::string& signature, int64_t batch) {
  return interpolate(cache.op_sizes(device_key, signature), batch);
}

std::string machine_key_text() {
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  return "cpu=" + cpu_model() + ";cores=" + std::to_string(std::thread::hardware_concurrency()) +
         ";OPENBLAS_CORETYPE=" + (coretype ? coretype : "(unset)") + ";devmap=" + devmap_version();
}

std::string device_key(const Config& config, const RunOptions& options, const std::string& device) {
  const DeviceSpec* d = config.find_device(device);
  if (!d) throw_invalid("unknown device " + device);
  const std::string program = find_worker_program(options, d->kind);
  struct stat st {};
  ::stat(program.c_str(), &st);
  const ProgramOutput& described = run_program_once({program, "--describe"});
  if (!described.ran || described.status != 0)
    throw_runtime(program + " --describe failed (status " + std::to_string(described.status) + "): " + described.text);
  return key_hash(machine_key_text() + ";kind=" + device_kind_name(d->kind) + ";threads=" + std::to_string(d->threads) +
                  ";worker=" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                  std::to_string(st.st_mtim.tv_nsec) + ";libraries=" + described.text);
}

double estimated_flops_per_s(const RunOptions& options, const DeviceSpec& device) {
  if (device.kind == DeviceKind::kGpu) return kEstimatedGpuFlops;
  double peak = 0;
  try {
    const ProgramOutput& out = run_program_once({find_worker_program(options, device.kind), "--fma-peak"});
    if (out.ran && out.status == 0) peak = std::strtod(out.text.c_str(), nullptr);
  } catch (const Error&) {
    // No worker program: the fixed estimate.
  }
  const double threads = static_cast<double>(std::max(1, device.threads));
  return std::isfinite(peak) && peak > 0 ? kEstimatedShareOfFmaPeak * peak * threads
                                         : kEstimatedCpuFlopsPerThread * threads;
}

double device_flops_per_s(const CalibrationCache& cache, const std::map<std::string, std::string>& keys,
                          const RunOptions& options, const DeviceSpec& device) {
  if (auto k = keys.find(device.name); k != keys.end())
    if (auto rate = cache.rate(k->second)) return *rate;
  return estimated_flops_per_s(options, device);
}

std::optional<std::string> contention_key(const Config& config, const std::map<std::string, std::string>& keys) {
  std::vector<std::string> cpus;
  for (const DeviceSpec& d : config.devices)
    if (auto k = keys.find(d.name); k != keys.end() && d.kind != DeviceKind::kGpu) cpus.push_back(k->second);
  if (cpus.size() < 2) return std::nullopt;
  std::sort(cpus.begin(), cpus.end());
  std::string text = "contention";
  for (const std::string& k : cpus) text += ";" + k;
  return key_hash(text);
}

std::string calibration_path(const RunOptions& options) {
  return options.calibration_path.empty() ? default_calibration_path() : options.calibration_path;
}

JobMemory plan_run_memory_with_costs(const Config& config, const RunOptions& options, const PlanInputs& inputs,
                                     int64_t batch, int64_t eval_batch, const std::vector<int>& outputs) {
  if (!config.train.auto_micro_batches()) return plan_run_memory(config, inputs, batch, eval_batch, outputs);
  const PlanCosts costs = plan_costs(config, options, *inputs.graph);
  JobMemory m = plan_run_memory(config, inputs, batch, eval_batch, outputs, &costs.costs);
  m.estimated.assign(costs.estimated->begin(), costs.estimated->end());
  return m;
}

RunPrediction predict_run_step(const Config& config, const RunOptions& options, const Graph& graph,
                               const Partition& partition, const JobMemory& memory) {
  const PlanCosts costs = plan_costs(config, options, graph);
  const bool training = !memory.rounds || !memory.pipeline.by_count.empty();
  RunPrediction p;
  p.step_seconds = predict_step(partition, training, memory.rounds ? memory.pipeline.kind : PipelineKind::kNone,
                                memory.split.requested, static_cast<int>(memory.split.count), costs.costs)
                       .seconds;
  p.estimated.assign(costs.estimated->begin(), costs.estimated->end());
  return p;
}

std::optional<std::string> usable_device_key(const Config& config, const RunOptions& options, const std::string& device,
                                             std::string& why) {
  try {
    std::string key = device_key(config, options, device);
    const DeviceSpec* d = config.find_device(device);
    if (d && d->kind == DeviceKind::kGpu)
      if (const GpuProbe probe = probe_gpu_device(options, device); !probe.usable) {
        why = probe.text.substr(0, probe.text.find('\n'));
        return std::nullopt;
      }
    return key;
  } catch (const Error& e) {
    why = e.what();
    return std::nullopt;
  }
}

PlanCosts plan_costs(const Config& config, const RunOptions& options, const Graph& graph) {
  PlanCosts pc;
  pc.cache_path = calibration_path(options);
  auto cache = std::make_shared<CalibrationCache>(CalibrationCache::load(pc.cache_path));
  auto keys = std::make_shared<std::map<std::string, std::string>>();
  for (const DeviceSpec& d : config.devices) {
    try {
      (*keys)[d.name] = device_key(config, options, d.name);
    } catch (const Error&) {
      // A device whose worker cannot run here has no measurements.
    }
  }
  const std::string machine = key_hash(machine_key_text());
  auto estimated = pc.estimated;
  const Graph* g = &graph;
  const Config* cfg = &config;
  // Each device's rate for the ops it has no time of: calibrated, else
  // estimated.
  auto rates = std::make_shared<std::map<std::string, double>>();
  for (const DeviceSpec& d : config.devices) (*rates)[d.name] = device_flops_per_s(*cache, *keys, options, d);
  pc.costs.op = [=](int node, const std::string& device, int64_t batch) {
    const Node& n = g->node(node);
    if (auto k = keys->find(device); k != keys->end())
      if (auto s = calibrated_op_seconds(*cache, k->second, op_signature(*g, node), batch)) return *s;
    estimated->insert(n.name + " on " + device);
    const auto r = rates->find(device);
    const double rate = r != rates->end() ? r->second : kEstimatedCpuFlopsPerThread;
    return OpSeconds{kOpOverhead + n.forward_flops(batch) / rate,
                     n.schema->differentiable ? kOpOverhead + n.backward_flops(batch) / rate : 0.0};
  };
  // An offloaded device's ops also copy their parameters each pass (at
  // kOffloadCopyBytesPerSecond: not measured).
  pc.costs.op = [op = pc.costs.op, cfg, g](int node, const std::string& device, int64_t batch) {
    OpSeconds s = op(node, device, batch);
    const DeviceSpec* d = cfg->find_device(device);
    if (!d || !d->offload) return s;
    const int64_t bytes = g->node(node).trained_param_bytes();
    const double rate = d->kind == DeviceKind::kGpu ? kGpuOffloadCopyBytesPerSecond : kCpuOffloadCopyBytesPerSecond;
    s.forward += analytical_offload_seconds(bytes, false, rate);
    s.backward += analytical_offload_seconds(bytes, true, rate);
    return s;
  };
  pc.costs.transfer = [=](const std::string& from, const std::string& to, int64_t bytes) {
    const DeviceSpec* a = cfg->find_device(from);
    const DeviceSpec* b = cfg->find_device(to);
    if (a && b)
      if (auto link = cache->link(machine, device_kind_name(a->kind), device_kind_name(b->kind)))
        return link->seconds(static_cast<uint64_t>(bytes));
    estimated->insert("handoffs " + from + " -> " + to);
    return kEstimatedHandoffLatency + static_cast<double>(bytes) / kEstimatedHandoffBytesPerSecond;
  };
  if (const std::optional<std::string> ck = contention_key(config, *keys)) {
    if (auto c = cache->contention(*ck))
      pc.costs.contention = *c;
    else
      estimated->insert("how the CPU devices slow each other down");
  }
  pc.costs.step_overhead = [=](const std::string& device) {
    if (auto k = keys->find(device); k != keys->end())
      if (auto o = cache->step_overhead(k->second)) return *o;
    return 0.0;
  };
  pc.costs.contends = [cfg](const std::string& device) {
    const DeviceSpec* d = cfg->find_device(device);
    return d && d->kind != DeviceKind::kGpu;
  };
  const std::string optimizer = optimizer_kind_name(config.train.optimizer.kind);
  pc.costs.optimizer = [=](const std::string& device) {
    int64_t params = 0;
    for (const Node& n : g->nodes())
      if (n.device == device) params += n.param_bytes() / 4;
    double per_param = kUpdateSecondsPerParameter;
    bool measured = false;
    if (auto k = keys->find(device); k != keys->end())
      if (auto s = cache->optimizer(k->second, optimizer)) {
        per_param = *s;
        measured = true;
      }
    if (!measured && params > 0) estimated->insert("the optimizer update on " + device);
    return per_param * static_cast<double>(params);
  };
  return pc;
}

}  // namespace devmap
