#include "coordinator/plan/gpu_placement.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>

#include "coordinator/config/placement.h"
#include "coordinator/config/worker_program.h"
#include "coordinator/util/program_output.h"
#include "core/base/error.h"

namespace devmap {
namespace {

constexpr int kProbeNoGpu = 3;  // worker_gpu --probe's exit status without a usable GPU

// The first line of `path`, blanks trimmed; empty when it cannot be read.
std::string first_line_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  const size_t end = line.find_last_not_of(" \t\r");
  return end == std::string::npos ? std::string() : line.substr(0, end + 1);
}

}  // namespace

std::string no_worker_gpu_reason(const std::string& dir, const std::string& recorded) {
  if (!recorded.empty()) return "no usable GPU: this build has no worker_gpu: " + recorded;
  return "no usable GPU: there is no worker_gpu in " + dir +
         " (build the target worker_gpu there, or set DEVMAP_WORKER_DIR to a folder that has it)";
}

std::string probe_failure_reason(const std::string& program, int status, const std::string& output) {
  // The dynamic loader: "PROGRAM: error while loading shared libraries:
  // LIB: cannot open shared object file: No such file or directory".
  const std::string loader = "error while loading shared libraries: ";
  if (const size_t at = output.find(loader); at != std::string::npos) {
    const size_t from = at + loader.size();
    const std::string library = output.substr(from, output.find(':', from) - from);
    std::string what = "the shared library " + library;
    if (library.rfind("libcudnn", 0) == 0)
      what = "cuDNN's library " + library;
    else if (library.rfind("libcublas", 0) == 0)
      what = "cuBLAS's library " + library + " (CUDA toolkit)";
    return "no usable GPU: " + program + " cannot start: " + what +
           " is missing or unreadable (install it, or add its folder to LD_LIBRARY_PATH)";
  }
  return "no usable GPU: " + program + " --probe failed (status " + std::to_string(status) + "): " + output;
}

std::string probe_timeout_reason(const std::string& program, double seconds) {
  return "no usable GPU: " + program + " --probe gave no answer in " + std::to_string(std::lround(seconds)) +
         " s and was stopped: the driver or the device does not respond (nvidia-smi shows their state)";
}

GpuProbe probe_gpu_device(const RunOptions& options, const std::string& device, double timeout_seconds) {
  GpuProbe p;
  std::string program;
  try {
    program = find_worker_program(options, DeviceKind::kGpu);
  } catch (const Error&) {
    const std::string dir = worker_program_dir(options);
    p.text = no_worker_gpu_reason(dir, first_line_of(std::filesystem::path(dir) / "worker_gpu.absent"));
    return p;
  }
  const ProgramOutput run = run_program({program, "--probe", "--device", device}, timeout_seconds);
  if (!run.ran) {
    p.text = "no usable GPU: cannot run " + program + " --probe";
    return p;
  }
  if (run.timed_out) {
    p.text = probe_timeout_reason(program, timeout_seconds);
    return p;
  }
  const int code = run.status;
  p.usable = code == 0;
  p.text = run.text;
  if (!p.usable && code != kProbeNoGpu) p.text = probe_failure_reason(program, code, run.text);
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
