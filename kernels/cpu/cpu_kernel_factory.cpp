#include "kernels/cpu/cpu_kernel_factory.h"

#include <algorithm>
#include <map>

#include "core/base/error.h"
#include "kernels/cpu/activations.h"
#include "kernels/cpu/add.h"
#include "kernels/cpu/avg_pool2d.h"
#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/concat.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/dense.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/global_avg_pool.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/max_pool2d.h"
#include "kernels/cpu/mse_loss.h"
#include "kernels/cpu/optimizers.h"
#include "kernels/cpu/relu.h"
#include "kernels/cpu/reshape.h"
#include "kernels/cpu/softmax.h"

namespace devmap {
namespace {

using Maker = std::unique_ptr<OpKernel> (*)();

template <class K>
std::unique_ptr<OpKernel> make() {
  return std::make_unique<K>();
}

const std::map<std::string, Maker>& table() {
  static const std::map<std::string, Maker> t = {
      {"accuracy", make<cpu::AccuracyKernel>},
      {"add", make<cpu::AddKernel>},
      {"argmax", make<cpu::ArgmaxKernel>},
      {"conv2d", make<cpu::Conv2dKernel>},
      {"dense", make<cpu::DenseKernel>},
      {"dropout", make<cpu::DropoutKernel>},
      {"flatten", make<cpu::CopyKernel>},
      {"max_pool2d", make<cpu::MaxPool2dKernel>},
      {"relu", make<cpu::ReluKernel>},
      {"reshape", make<cpu::CopyKernel>},
      {"softmax_cross_entropy", make<cpu::SoftmaxCrossEntropyKernel>},
      // Alphabetical from here on.
      {"avg_pool2d", make<cpu::AvgPool2dKernel>},
      {"batch_norm", make<cpu::BatchNormKernel>},
      {"concat", make<cpu::ConcatKernel>},
      {"gelu", make<cpu::GeluKernel>},
      {"global_avg_pool", make<cpu::GlobalAvgPoolKernel>},
      {"layer_norm", make<cpu::LayerNormKernel>},
      {"leaky_relu", make<cpu::LeakyReluKernel>},
      {"mse_loss", make<cpu::MseLossKernel>},
      {"sigmoid", make<cpu::SigmoidKernel>},
      {"softmax", make<cpu::SoftmaxKernel>},
      {"tanh", make<cpu::TanhKernel>},
  };
  return t;
}

}  // namespace

std::unique_ptr<OpKernel> CpuKernelFactory::make_kernel(const std::string& op) const {
  auto it = table().find(op);
  if (it != table().end()) return it->second();
  const OpSchema* schema = find_op(op);
  if (schema != nullptr && schema->fed_by_coordinator())
    throw_invalid("op '" + op + "' is fed by the executor and has no cpu kernel");
  std::string known;
  for (const auto& [name, maker] : table()) known += (known.empty() ? "" : ", ") + name;
  throw_invalid("no cpu kernel for op '" + op + "' (known: " + known + ")");
}

std::unique_ptr<OptimizerKernel> CpuKernelFactory::make_optimizer(const OptimizerConfig& config) const {
  return cpu::make_optimizer(config);
}

std::vector<std::string> CpuKernelFactory::op_names() {
  std::vector<std::string> names;
  for (const auto& [name, maker] : table()) names.push_back(name);
  return names;
}

bool CpuKernelFactory::supports(const std::string& op) {
  return table().count(op) != 0;
}

}  // namespace devmap
