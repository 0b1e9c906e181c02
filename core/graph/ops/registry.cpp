#include <algorithm>
#include <map>

#include "core/graph/op_schema.h"
#include "core/graph/ops/schemas.h"

namespace devmap {
namespace {

const std::map<std::string, OpSchema>& registry() {
  static const std::map<std::string, OpSchema> table = [] {
    std::map<std::string, OpSchema> t;
    for (OpSchema (*make)() :
         {ops::add_schema, ops::input_schema, ops::labels_schema, ops::conv2d_schema, ops::max_pool2d_schema,
          ops::relu_schema, ops::dropout_schema, ops::dense_schema, ops::flatten_schema, ops::reshape_schema,
          ops::softmax_cross_entropy_schema, ops::accuracy_schema, ops::argmax_schema,
          // Alphabetical from here on.
          ops::avg_pool2d_schema, ops::batch_norm_schema, ops::concat_schema, ops::gelu_schema,
          ops::global_avg_pool_schema, ops::layer_norm_schema, ops::leaky_relu_schema, ops::mse_loss_schema,
          ops::sigmoid_schema, ops::softmax_schema, ops::tanh_schema}) {
      OpSchema s = make();
      std::string name = s.name;
      t.emplace(std::move(name), std::move(s));
    }
    return t;
  }();
  return table;
}

}  // namespace

const OpSchema* find_op(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> known_op_names() {
  std::vector<std::string> names;
  for (const auto& [name, schema] : registry()) names.push_back(name);
  return names;  // std::map keeps them sorted
}

}  // namespace devmap
