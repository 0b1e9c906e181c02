#include "kernels/cuda/cuda_kernel_factory.h"

#include <map>

#include "core/base/error.h"
#include "kernels/cuda/activations.h"
#include "kernels/cuda/avg_pool2d.h"
#include "kernels/cuda/batch_norm.h"
#include "kernels/cuda/concat.h"
#include "kernels/cuda/conv2d.h"
#include "kernels/cuda/dense.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/host_optimizers.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/loss.h"
#include "kernels/cuda/max_pool2d.h"
#include "kernels/cuda/optimizers.h"
#include "kernels/cuda/relu.h"

namespace devmap::cuda {
namespace {

using Maker = std::unique_ptr<OpKernel> (*)(CudaDevice&, const std::shared_ptr<ConvPlans>&);

template <class K>
std::unique_ptr<OpKernel> make(CudaDevice& device, const std::shared_ptr<ConvPlans>& /*plans*/) {
  return std::make_unique<K>(device);
}

std::unique_ptr<OpKernel> make_conv(CudaDevice& device, const std::shared_ptr<ConvPlans>& plans) {
  return std::make_unique<Conv2dKernel>(device, plans);
}

const std::map<std::string, Maker>& table() {
  static const std::map<std::string, Maker> t = {
      {"accuracy", make<AccuracyKernel>},
      {"add", make<AddKernel>},
      {"argmax", make<ArgmaxKernel>},
      {"conv2d", make_conv},
      {"dense", make<DenseKernel>},
      {"dropout", make<DropoutKernel>},
      {"flatten", make<CopyKernel>},
      {"max_pool2d", make<MaxPool2dKernel>},
      {"relu", make<ReluKernel>},
      {"reshape", make<CopyKernel>},
      {"softmax_cross_entropy", make<SoftmaxCrossEntropyKernel>},
      // Alphabetical from here on.
      {"avg_pool2d", make<AvgPool2dKernel>},
      {"batch_norm", make<BatchNormKernel>},
      {"concat", make<ConcatKernel>},
      {"gelu", make<ActivationKernel>},
      {"global_avg_pool", make<GlobalAvgPoolKernel>},
      {"layer_norm", make<LayerNormKernel>},
      {"leaky_relu", make<ActivationKernel>},
      {"mse_loss", make<MseLossKernel>},
      {"sigmoid", make<ActivationKernel>},
      {"softmax", make<SoftmaxKernel>},
      {"tanh", make<ActivationKernel>},
  };
  return t;
}

}  // namespace

CudaKernelFactory::CudaKernelFactory(std::shared_ptr<CudaDevice> device)
    : device_(std::move(device)), conv_plans_(std::make_shared<ConvPlans>(*device_)) {}

std::unique_ptr<OpKernel> CudaKernelFactory::make_kernel(const std::string& op) const {
  auto it = table().find(op);
  if (it != table().end()) return it->second(*device_, conv_plans_);
  const OpSchema* schema = find_op(op);
  if (schema != nullptr && schema->fed_by_coordinator())
    throw_invalid("op '" + op + "' is fed by the executor and has no gpu kernel");
  std::string known;
  for (const auto& [name, maker] : table()) known += (known.empty() ? "" : ", ") + name;
  throw_invalid("no gpu kernel for op '" + op + "' (known: " + known + ")");
}

std::unique_ptr<OptimizerKernel> CudaKernelFactory::make_optimizer(const OptimizerConfig& config) const {
  return cuda::make_optimizer(config, *device_);
}

std::unique_ptr<OptimizerKernel> CudaKernelFactory::make_host_optimizer(const OptimizerConfig& config) const {
  return cuda::make_host_optimizer(config);
}

std::vector<std::string> CudaKernelFactory::op_names() {
  std::vector<std::string> names;
  for (const auto& [name, maker] : table()) names.push_back(name);
  return names;
}

bool CudaKernelFactory::supports(const std::string& op) {
  return table().count(op) != 0;
}

}  // namespace devmap::cuda
