#include "kernels/cuda/dense.h"

#include <cstdint>
#include <limits>
#include <string>

#include "core/base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/reduce_kernels.h"

namespace devmap::cuda {
namespace {

int blas_int(int64_t v, const Node& node) {
  if (v > std::numeric_limits<int>::max())
    throw_runtime("dense '" + node.name + "': dimension " + std::to_string(v) + " is too large for cuBLAS");
  return static_cast<int>(v);
}

}  // namespace

void DenseKernel::require_workspace(const Node& node) {
  if (device_.cublas_workspace_bytes() == 0)
    throw_runtime("dense '" + node.name + "': " + device_.name() +
                  " gave cuBLAS no workspace (create its CudaMemory before running kernels; a worker bug)");
}

void DenseKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], in = args.inputs[0].shape[1], units = args.output.shape[1];
  const float* bias = args.params.size() > 1 ? args.params[1].data : nullptr;
  float* y = args.output.data;
  if (bias != nullptr) launch_broadcast_rows(bias, batch, units, y, device_.stream());
  require_workspace(args.node);
  const float one = 1.0f, beta = bias != nullptr ? 1.0f : 0.0f;
  // Column-major: y^T [units, N] = W [units, in] (W^T stored) * x^T [in, N].
  check(cublasSgemm(device_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, blas_int(units, args.node), blas_int(batch, args.node),
                    blas_int(in, args.node), &one, args.params[0].data, blas_int(in, args.node), args.inputs[0].data,
                    blas_int(in, args.node), &beta, y, blas_int(units, args.node)),
        "cublasSgemm (dense forward)");
}

void DenseKernel::backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0], units = args.d_output.shape[1];
  const int64_t in = args.node.input_shapes[0][0];
  const int n = blas_int(batch, args.node), u = blas_int(units, args.node), k = blas_int(in, args.node);
  const float* dy = args.d_output.data;
  const float one = 1.0f, zero = 0.0f, beta = args.accumulate ? 1.0f : 0.0f;
  require_workspace(args.node);
  if (float* dx = args.d_inputs[0].data) {
    // dx^T [in, N] = W^T [in, units] * dy^T [units, N].
    check(cublasSgemm(device_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, k, n, u, &one, args.params[0].data, k, dy, u, &zero,
                      dx, k),
          "cublasSgemm (dense input gradient)");
  }
  if (float* dw = args.d_params[0].data) {
    // dW^T [in, units] (+)= x^T [in, N] * dy [N, units].
    check(cublasSgemm(device_.cublas(), CUBLAS_OP_N, CUBLAS_OP_T, k, u, n, &one, args.inputs[0].data, k, dy, u, &beta,
                      dw, k),
          "cublasSgemm (dense weight gradient)");
  }
  if (args.d_params.size() > 1 && args.d_params[1].data != nullptr)
    launch_column_sums(dy, batch, units, args.d_params[1].data, args.accumulate, device_.stream());
}

}  // namespace devmap::cuda
