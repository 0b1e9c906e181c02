#include "kernels/cuda/concat.h"

#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {
namespace {

// `rows` rows of `width` floats from src (a row every src_pitch floats) to
// dst (every dst_pitch floats).
void copy_rows(const float* src, int64_t src_pitch, float* dst, int64_t dst_pitch, int64_t width, int64_t rows,
               cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  check(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch) * sizeof(float), src,
                          static_cast<size_t>(src_pitch) * sizeof(float), static_cast<size_t>(width) * sizeof(float),
                          static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpy2DAsync (concat)");
}

}  // namespace

void ConcatKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.output.shape[0], out_sample = args.node.out_shape.numel();
  int64_t offset = 0;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const int64_t len = args.node.input_shapes[i].numel();
    copy_rows(args.inputs[i].data, len, args.output.data + offset, out_sample, len, batch, device_.stream());
    offset += len;
  }
}

void ConcatKernel::backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0], out_sample = args.node.out_shape.numel();
  int64_t offset = 0;
  for (size_t i = 0; i < args.d_inputs.size(); ++i) {
    const int64_t len = args.node.input_shapes[i].numel();
    if (args.d_inputs[i].data != nullptr)
      copy_rows(args.d_output.data + offset, out_sample, args.d_inputs[i].data, len, len, batch, device_.stream());
    offset += len;
  }
}

}  // namespace devmap::cuda
