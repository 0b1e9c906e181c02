// The per-sample logic of the loss, accuracy and argmax kernels, host and
// device: the CPU kernels' rules (kernels/cpu/loss.h, labels.h), in double
// where they use double.
#pragma once

#include <math.h>

#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace devmap::cuda::loss {

// cpu::label_index's test: an integer in [0, classes).
DEVMAP_HD inline bool valid_label(float label, int64_t classes) {
  const double l = label;
  return l >= 0.0 && l < static_cast<double>(classes) && l == floor(l);
}

// cpu::first_argmax: the first largest; a NaN wins (the first NaN).
DEVMAP_HD inline int64_t first_argmax(const float* row, int64_t n) {
  if (row[0] != row[0]) return 0;
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (row[i] > row[best]) {
      best = i;
    } else if (row[i] != row[i]) {
      return i;
    }
  }
  return best;
}

struct LogSumExp {
  double max, log_sum;
};

// cpu's log_sum_exp: the max (std::max_element's), then the sum of
// exp(z - max) in class order, in double.
DEVMAP_HD inline LogSumExp log_sum_exp(const float* z, int64_t classes) {
  float m = z[0];
  for (int64_t c = 1; c < classes; ++c) m = m < z[c] ? z[c] : m;
  const double md = m;
  double sum = 0.0;
  for (int64_t c = 0; c < classes; ++c) sum += exp(static_cast<double>(z[c]) - md);
  return {md, log(sum)};
}

// -log softmax(z)[label] of one sample with a valid label.
DEVMAP_HD inline double cross_entropy(const float* z, int64_t classes, int64_t label) {
  const LogSumExp lse = log_sum_exp(z, classes);
  return lse.log_sum + lse.max - static_cast<double>(z[label]);
}

// d[c] = scale * (softmax(z)[c] - (c == target)) for one sample (target -1: none).
DEVMAP_HD inline void cross_entropy_gradient(const float* z, int64_t classes, int64_t target, double scale, float* d) {
  const LogSumExp lse = log_sum_exp(z, classes);
  for (int64_t c = 0; c < classes; ++c) {
    const double p = exp(static_cast<double>(z[c]) - lse.max - lse.log_sum);
    d[c] = static_cast<float>(scale * (p - (c == target ? 1.0 : 0.0)));
  }
}

// The batch sum of per-sample values: in sample order, one addition at a
// time in double, as the CPU kernels add them (softmax_cross_entropy,
// accuracy). One thread runs it: any split into lanes adds in another
// order and differs from the CPU's bits in the last place.
DEVMAP_HD inline double batch_sum(const double* v, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  return s;
}

}  // namespace devmap::cuda::loss
