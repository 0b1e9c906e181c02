#include "fuzz/fuzz_targets.h"

namespace devmap::fuzz {

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"calibration_cache", run_calibration_cache}, {"config_plan", run_config_plan},
      {"fma_peak_cache", run_fma_peak_cache},       {"safetensors_header", run_safetensors_header},
      {"wire_message", run_wire_message},           {"worker_plan", run_worker_plan},
  };
  return targets;
}

}  // namespace devmap::fuzz
