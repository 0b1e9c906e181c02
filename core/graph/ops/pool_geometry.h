// The geometry of max_pool2d and avg_pool2d, decoded from their attributes
// in one place for their schemas and every kernel of them: a square window
// of `kernel`, moved by `stride` (the attribute's 0 means the kernel), over
// the input padded by `padding` on each side (at most kernel / 2).
//
// Only <cstdint> and declarations: CUDA device code uses PoolGeometry.
#pragma once

#include <cstdint>

namespace devmap {

class Attrs;
class Shape;
struct Node;

namespace ops {

struct PoolWindow {
  int64_t kernel = 0, stride = 0, padding = 0;
};

// The window an op's attributes describe. Throws devmap::Error
// (kInvalidInput) when the padding is more than half the kernel.
PoolWindow pool_window(const Attrs& attrs);

// The per-sample output [C, OH, OW] of per-sample input [C, H, W]. Throws
// devmap::Error (kInvalidInput) when the window does not fit.
Shape pool_output_shape(const PoolWindow& window, const Shape& in);

// A pooling op at `batch` samples, as its kernels loop over it: `planes`
// (batch * channels) planes of height x width, out_h x out_w windows each.
// Plain data, copied to CUDA kernels by value.
struct PoolGeometry {
  int64_t planes = 0;
  int64_t height = 0, width = 0, kernel = 0, stride = 0, padding = 0, out_h = 0, out_w = 0;
};

// The geometry of a pooling node (max_pool2d or avg_pool2d) whose shapes the
// graph has inferred.
PoolGeometry pool_geometry(const Node& node, int64_t batch);

}  // namespace ops
}  // namespace devmap
