#include "coordinator/plan/gpu_placement.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>

#include "coordinator/config/placement.h"
#include "coordinator/config/worker_program.h"
#include "coordinator/util/program_output.h"
#include "core/base/error.h"

namespace devmap {
namespace {

constexpr int kProbeNoGpu = 3;  // worker_gpu --probe's exit status without a usable GPU

}  // namespace

GpuProbe probe_gpu_device(const RunOptions& options, const std::string& device) {
  GpuProbe p;
  std::string program;
  try {
    program = find_worker_program(options, DeviceKind::kGpu);
  } catch (const Error&) {
    p.text = "no usable GPU: this build has no worker_gpu (the CUDA toolkit was not found when it was built)";
    return p;
  }
  const ProgramOutput run = run_program({program, "--probe", "--device", device});
  if (!run.ran) {
    p.text = "no usable GPU: cannot run " + program + " --probe";
    return p;
  }
  const int code = run.status;
  p.usable = code == 0;
  p.text = run.text;
  if (!p.usable && code != kProbeNoGpu)
    p.text = "no usable GPU: " + program + " --probe failed (status " + std::to_string(code) + "): " + p.text;
  if (!p.usable && p.text.rfind("no usable GPU", 0) != 0) p.text = "no usable GPU: " + p.text;
  return p;
}

void resolve_gpu_placement(Config& config, const RunOptions& options, std::ostream& log) {
  std::map<std::string, std::vector<int>> ops_on;  // gpu device -> its ops
  for (int i = 0; i < config.graph.size(); ++i) {
    const std::string& d = config.graph.node(i).device;
    if (d.rfind("gpu:", 0) == 0) ops_on[d].push_back(i);
  }
  for (const auto& [gpu, ops] : ops_on) {
    GpuProbe probe = probe_gpu_device(options, gpu);
    if (probe.usable) continue;
    std::string names;
    for (int i : ops) names += (names.empty() ? "" : ", ") + config.graph.node(i).name;
    std::string reason = probe.text.substr(0, probe.text.find('\n'));
    if (!config.allow_soft_placement)
      throw_invalid(config.path + ": ops are placed on " + gpu + " (" + names + "), but " + reason +
                    "; place them on a cpu device, or set allow_soft_placement: true to move them there");
    // The CPU device they move to: the default if it is a CPU, else the
    // first CPU declared, else a new cpu:0.
    std::string cpu = config.default_device.rfind("cpu:", 0) == 0 ? config.default_device : "";
    for (const DeviceSpec& d : config.devices)
      if (cpu.empty() && d.kind == DeviceKind::kCpu) cpu = d.name;
    if (cpu.empty()) {
      DeviceSpec spec;
      spec.name = cpu = "cpu:0";
      config.devices.push_back(spec);
    }
    for (int i : ops) {
      config.graph.node(i).device = cpu;
      if (static_cast<size_t>(i) < config.placement_reason.size())
        config.placement_reason[static_cast<size_t>(i)] = "allow_soft_placement: " + gpu + " is not usable";
      log << "devmap: soft placement: " << config.graph.node(i).name << " moves from " << gpu << " to " << cpu << " ("
          << reason << ")\n";
    }
  }
  check_placed_ops_supported(config.graph, config.devices, config.placement_reason);
}

}  // namespace devmap
