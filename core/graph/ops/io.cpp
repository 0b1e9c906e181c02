// input and labels: the tensors the coordinator feeds each step.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema input_schema() {
  OpSchema s;
  s.name = "input";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "a batch of images, pixels scaled to [0, 1]";
  s.num_inputs = 0;
  s.role = OpRole::kImageInput;
  s.attrs = {{"shape", AttrType::kIntList, true, std::vector<int64_t>{}, 1, "per-sample shape, e.g. [1, 28, 28]"}};
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>&) { return Shape(a.get_ints("shape")); };
  s.differentiable = false;
  s.backward_needs_inputs = false;
  return s;
}

OpSchema labels_schema() {
  OpSchema s;
  s.name = "labels";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "a batch of class indices";
  s.num_inputs = 0;
  s.role = OpRole::kLabelInput;
  s.attrs = {{"classes", AttrType::kInt, true, int64_t{0}, 2, "number of classes"}};
  s.infer_shape = [](const Attrs&, const std::vector<Shape>&) { return Shape{1}; };
  s.differentiable = false;
  s.backward_needs_inputs = false;
  return s;
}

}  // namespace devmap::ops
