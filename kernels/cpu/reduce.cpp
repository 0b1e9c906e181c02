#include "kernels/cpu/reduce.h"

#include "kernels/cpu/cpu_dispatch.h"

namespace devmap::cpu {
namespace {

DEVMAP_INLINE double sum_fixed_order_body(const float* x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(x[i + j]);
  for (int j = 0; i < n; ++i, ++j) acc[j] += static_cast<double>(x[i]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

DEVMAP_CPU_PATH_DISPATCH(double, sum_fixed_order, (const float* x, int64_t n), (x, n))

}  // namespace devmap::cpu
