#include "kernels/cuda/loss.h"

#include <cassert>
#include <cstring>
#include <string>

#include "core/base/error.h"
#include "core/graph/ops/label_op_layout.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/loss_kernels.h"

namespace devmap::cuda {
namespace {

// The per-sample scratch and the bad-sample word inside ctx.workspace.
struct LabelScratch {
  double* values;
  int* bad;
};

LabelScratch scratch_of(const Node& node, const KernelContext& ctx, int64_t batch) {
  if (ctx.workspace == nullptr || ctx.workspace_bytes < label_op_workspace_bytes(batch))
    throw_runtime(node.op() + " '" + node.name + "': workspace of " + std::to_string(ctx.workspace_bytes) +
                  " bytes is smaller than the " + std::to_string(label_op_workspace_bytes(batch)) +
                  " bytes workspace_bytes() asked for (executor bug)");
  auto* base = reinterpret_cast<char*>(ctx.workspace);
  return {reinterpret_cast<double*>(base), reinterpret_cast<int*>(base + label_op_flag_offset(batch))};
}

double batch_total(const KernelContext& ctx) {
  assert(ctx.batch_total > 0 && "the executor sets batch_total for loss and metric ops");
  return static_cast<double>(ctx.batch_total);
}

// Waits for the label check and throws cpu::label_index's message for the
// first sample whose label is not a class index.
void check_labels(CudaDevice& device, const Node& node, const KernelContext& ctx, const float* labels, const int* bad,
                  int64_t classes) {
  auto* host = static_cast<int*>(device.host_scratch());
  check(cudaMemcpyAsync(host, bad, sizeof(int), cudaMemcpyDeviceToHost, device.stream()),
        "cudaMemcpyAsync (label check)");
  device.synchronize(node.name.c_str());
  const int sample = *host;
  if (sample == kNoBadSample) return;
  check(cudaMemcpyAsync(host, labels + sample, sizeof(float), cudaMemcpyDeviceToHost, device.stream()),
        "cudaMemcpyAsync (label)");
  device.synchronize(node.name.c_str());
  float label = 0.0f;
  std::memcpy(&label, host, sizeof label);
  const double l = label;
  throw_runtime(node.loc.prefix() + node.op() + " '" + node.name + "': label " + std::to_string(l) + " of sample " +
                std::to_string(ctx.sample_offset + sample) + " is not a class index in [0, " + std::to_string(classes) +
                "); check the data's labels against the " + std::to_string(classes) + " logits this op gets");
}

}  // namespace

void SoftmaxCrossEntropyKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  const LabelScratch s = scratch_of(args.node, args.ctx, batch);
  launch_softmax_cross_entropy_forward(args.inputs[0].data, args.inputs[1].data, batch, classes, batch_total(args.ctx),
                                       s.values, s.bad, args.output.data, device_.stream());
  check_labels(device_, args.node, args.ctx, args.inputs[1].data, s.bad, classes);
}

void SoftmaxCrossEntropyKernel::backward(const BackwardArgs& args) {
  float* dz = args.d_inputs[0].data;
  if (dz == nullptr) return;
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  launch_softmax_cross_entropy_backward(args.inputs[0].data, args.inputs[1].data, args.d_output.data, batch, classes,
                                        batch_total(args.ctx), dz, device_.stream());
}

void AccuracyKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  const LabelScratch s = scratch_of(args.node, args.ctx, batch);
  launch_accuracy(args.inputs[0].data, args.inputs[1].data, batch, classes, batch_total(args.ctx), s.values, s.bad,
                  args.output.data, device_.stream());
  check_labels(device_, args.node, args.ctx, args.inputs[1].data, s.bad, classes);
}

void AccuracyKernel::backward(const BackwardArgs&) {
  assert(false && "accuracy is not differentiable");
}

void ArgmaxKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], classes = args.inputs[0].shape[1];
  launch_argmax(args.inputs[0].data, batch, classes, args.output.data, device_.stream());
}

void ArgmaxKernel::backward(const BackwardArgs&) {
  assert(false && "argmax is not differentiable");
}

}  // namespace devmap::cuda
