// One factory per op schema; registry.cpp lists them all.
#pragma once

#include "core/graph/op_schema.h"

namespace devmap::ops {

OpSchema add_schema();
OpSchema avg_pool2d_schema();
OpSchema batch_norm_schema();
OpSchema concat_schema();
OpSchema global_avg_pool_schema();
OpSchema input_schema();
OpSchema labels_schema();
OpSchema conv2d_schema();
OpSchema max_pool2d_schema();
OpSchema relu_schema();
OpSchema dropout_schema();
OpSchema dense_schema();
OpSchema flatten_schema();
OpSchema reshape_schema();
OpSchema softmax_cross_entropy_schema();
OpSchema accuracy_schema();
OpSchema argmax_schema();
OpSchema gelu_schema();
OpSchema layer_norm_schema();
OpSchema leaky_relu_schema();
OpSchema mse_loss_schema();
OpSchema sigmoid_schema();
OpSchema softmax_schema();
OpSchema tanh_schema();

}  // namespace devmap::ops
