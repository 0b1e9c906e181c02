#include "core/graph/ops/pool_geometry.h"

#include <string>

#include "core/graph/graph.h"
#include "core/graph/ops/schema_util.h"

namespace devmap::ops {

PoolWindow pool_window(const Attrs& attrs) {
  PoolWindow w;
  w.kernel = attrs.get_int("kernel");
  w.stride = attrs.get_int("stride");
  if (w.stride == 0) w.stride = w.kernel;
  w.padding = attrs.get_int("padding");
  if (w.padding * 2 > w.kernel)
    throw_invalid("padding " + std::to_string(w.padding) + " is more than half the kernel " + std::to_string(w.kernel));
  return w;
}

Shape pool_output_shape(const PoolWindow& w, const Shape& in) {
  return Shape{in[0], window_out(in[1], w.kernel, w.stride, w.padding, in, "window"),
               window_out(in[2], w.kernel, w.stride, w.padding, in, "window")};
}

PoolGeometry pool_geometry(const Node& node, int64_t batch) {
  const Shape& in = node.input_shapes[0];
  const PoolWindow w = pool_window(node.attrs);
  PoolGeometry g;
  g.planes = batch * in[0];
  g.height = in[1];
  g.width = in[2];
  g.kernel = w.kernel;
  g.stride = w.stride;
  g.padding = w.padding;
  g.out_h = node.out_shape[1];
  g.out_w = node.out_shape[2];
  return g;
}

}  // namespace devmap::ops
