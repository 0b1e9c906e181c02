#include "kernels/cpu/labels.h"

#include <cmath>
#include <string>

#include "core/base/error.h"

namespace devmap::cpu {

int64_t label_index(const Node& node, float label, int64_t sample, int64_t classes) {
  double l = label;
  if (!(l >= 0.0 && l < static_cast<double>(classes)) || l != std::floor(l)) {
    throw_runtime(node.loc.prefix() + node.op() + " '" + node.name + "': label " + std::to_string(l) + " of sample " +
                  std::to_string(sample) + " is not a class index in [0, " + std::to_string(classes) +
                  "); check the data's labels against the " + std::to_string(classes) + " logits this op gets");
  }
  return static_cast<int64_t>(l);
}

int64_t first_argmax(const float* row, int64_t n) {
  int64_t best = 0;
  if (std::isnan(row[0])) return 0;
  for (int64_t i = 1; i < n; ++i) {
    if (row[i] > row[best]) {
      best = i;
    } else if (std::isnan(row[i])) {
      return i;
    }
  }
  return best;
}

}  // namespace devmap::cpu
