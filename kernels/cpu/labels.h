// Class-index labels as the label-input op feeds them: one float per sample.
#pragma once

#include <cstdint>

#include "core/graph/graph.h"

namespace devmap::cpu {

// The class index `label` holds. Throws devmap::Error (kRuntime) naming the
// op, the sample (`sample` is its index in the step's batch) and the range
// when the label is not an integer in [0, classes).
int64_t label_index(const Node& node, float label, int64_t sample, int64_t classes);

// Index of the largest of row[0..n): the first one on ties; a NaN wins and
// the first NaN is kept (so NaN logits never look like a correct answer by
// accident and argmax stays deterministic).
int64_t first_argmax(const float* row, int64_t n);

}  // namespace devmap::cpu
