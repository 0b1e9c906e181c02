#include "core/kernel.h"

namespace devmap {

const char* optimizer_kind_name(OptimizerConfig::Kind k) {
  switch (k) {
    case OptimizerConfig::Kind::kSgd: return "sgd";
    case OptimizerConfig::Kind::kMomentum: return "momentum";
    case OptimizerConfig::Kind::kAdam: return "adam";
  }
  return "?";
}

}  // namespace devmap
