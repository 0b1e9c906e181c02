#include "core/exec/kernel.h"

namespace devmap {

const char* optimizer_kind_name(OptimizerConfig::Kind k) {
  switch (k) {
    case OptimizerConfig::Kind::kSgd: return "sgd";
    case OptimizerConfig::Kind::kMomentum: return "momentum";
    case OptimizerConfig::Kind::kAdam: return "adam";
  }
  return "?";
}

int optimizer_state_count(OptimizerConfig::Kind k) {
  switch (k) {
    case OptimizerConfig::Kind::kSgd: return 0;
    case OptimizerConfig::Kind::kMomentum: return 1;
    case OptimizerConfig::Kind::kAdam: return 2;
  }
  return 0;
}

}  // namespace devmap
