#include "kernels/cuda/conv2d.h"

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/reduce_kernels.h"

namespace devmap::cuda {

size_t Conv2dKernel::workspace_bytes(const Node& node, int64_t batch) const {
  return conv_request(node, batch).workspace_limit;
}

void Conv2dKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0];
  const ConvRequest request = conv_request(args.node, batch, args.ctx);
  const ConvPlan& plan = plans_->get(request.shape, request.workspace_limit);
  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t h = device_.cudnn();
  check(cudnnConvolutionForward(h, &one, plan.x.get(), args.inputs[0].data, plan.w.get(), args.params[0].data,
                                plan.conv.get(), plan.forward, args.ctx.workspace, plan.forward_bytes, &zero,
                                plan.y.get(), args.output.data),
        "cudnnConvolutionForward");
  if (args.params.size() > 1)
    check(cudnnAddTensor(h, &one, plan.bias.get(), args.params[1].data, &one, plan.y.get(), args.output.data),
          "cudnnAddTensor (conv2d bias)");
}

void Conv2dKernel::backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0];
  const ConvRequest request = conv_request(args.node, batch, args.ctx);
  const ConvShape& shape = request.shape;
  float* dx = args.d_inputs[0].data;
  float* dw = args.d_params[0].data;
  float* db = args.d_params.size() > 1 ? args.d_params[1].data : nullptr;
  if (db != nullptr)
    launch_channel_sums(args.d_output.data, batch, shape.filters, shape.out_h * shape.out_w, db, args.accumulate,
                        device_.stream());
  if (dw == nullptr && dx == nullptr) return;
  const ConvPlan& plan = plans_->get(shape, request.workspace_limit);
  const float one = 1.0f, zero = 0.0f, dw_beta = args.accumulate ? 1.0f : 0.0f;
  cudnnHandle_t h = device_.cudnn();
  if (dw != nullptr)
    check(cudnnConvolutionBackwardFilter(h, &one, plan.x.get(), args.inputs[0].data, plan.y.get(), args.d_output.data,
                                         plan.conv.get(), plan.backward_filter, args.ctx.workspace,
                                         plan.backward_filter_bytes, &dw_beta, plan.w.get(), dw),
          "cudnnConvolutionBackwardFilter");
  if (dx != nullptr)
    check(cudnnConvolutionBackwardData(h, &one, plan.w.get(), args.params[0].data, plan.y.get(), args.d_output.data,
                                       plan.conv.get(), plan.backward_data, args.ctx.workspace,
                                       plan.backward_data_bytes, &zero, plan.x.get(), dx),
          "cudnnConvolutionBackwardData");
}

}  // namespace devmap::cuda
