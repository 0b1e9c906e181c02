#include "kernels/cpu/add.h"

#include <cstring>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/relu.h"

namespace devmap::cpu {

void AddKernel::forward(const ForwardArgs& args) {
  const float* a = args.inputs[0].data;
  const float* b = args.inputs[1].data;
  float* y = args.output.data;
  parallel_for_elements(args.ctx.pool, args.output.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
    if (args.relu_output) relu_in_place(y + begin, end - begin);
  });
}

void AddKernel::backward(const BackwardArgs& args) {
  const float* dy = args.d_output.data;
  const size_t bytes = args.d_output.nbytes();
  for (const TensorView& d : args.d_inputs)
    if (d.data != nullptr && d.data != dy) std::memcpy(d.data, dy, bytes);
}

}  // namespace devmap::cpu
