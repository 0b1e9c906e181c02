#include "kernels/cpu/conv2d.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "core/base/error.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/conv2d_onednn.h"
#include "kernels/cpu/conv2d_winograd.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/relu.h"

namespace devmap::cpu {
namespace {

ConvGeometry geometry_of(const Node& node) {
  return ConvGeometry::of(node.attrs, node.input_shapes[0], node.out_shape);
}

// Throws when the executor handed us less than workspace_bytes() asked for.
void check_workspace(const Node& node, size_t need, const KernelContext& ctx) {
  if (ctx.workspace == nullptr || ctx.workspace_bytes < need) {
    throw_runtime("conv2d '" + node.name + "': workspace of " + std::to_string(ctx.workspace_bytes) +
                  " bytes is smaller than the " + std::to_string(need) +
                  " bytes workspace_bytes() asked for (executor bug)");
  }
}

// im2col of samples [n0, n0+count) of x, channels [c0, c0 + C/G) (one conv
// group), into cols [(C/G)*K*K, count*OH*OW].
void im2col_group(const ConvGeometry& g, const float* x, int64_t n0, int64_t count, int64_t c0, float* cols) {
  const int64_t ld = count * g.positions(), kk = g.kernel * g.kernel;
  for (int64_t s = 0; s < count; ++s)
    for (int64_t c = 0; c < g.group_channels(); ++c)
      im2col_plane(g, x + ((n0 + s) * g.channels + c0 + c) * g.in_plane(), cols + c * kk * ld + s * g.positions(), ld);
}

}  // namespace

int64_t Conv2dKernel::lanes(int64_t batch) const {
  return std::clamp<int64_t>(batch, 1, max_lanes_);
}

ConvAlgorithm Conv2dKernel::algorithm(const Node& node) const {
  const ConvGeometry g = geometry_of(node);
  return algorithm_ != ConvAlgorithm::kAuto ? resolve_conv_algorithm(algorithm_, g) : conv_algorithm_of(node.attrs, g);
}

int64_t Conv2dKernel::group_samples(const Node& node) {
  return GemmConvLayout(geometry_of(node)).group;
}

size_t Conv2dKernel::lane_bytes(const Node& node) const {
  const ConvGeometry g = geometry_of(node);
  const ConvAlgorithm algo = algorithm(node);
  return conv_cpu_workspace_bytes(g, algo, 1) - conv_cpu_workspace_bytes(g, algo, 0);
}

std::string Conv2dKernel::implementation(const Node& node) const {
  switch (algorithm(node)) {
    case ConvAlgorithm::kWinograd: return path_kernel_name("winograd") + "+" + gemm_kernel_name();
    case ConvAlgorithm::kOneDnn: return OneDnnConv(geometry_of(node)).implementation();
    case ConvAlgorithm::kGemm:
    case ConvAlgorithm::kAuto: break;
  }
  return "im2col+" + gemm_kernel_name();
}

std::string Conv2dKernel::backward_implementation(const Node& node) const {
  if (algorithm(node) == ConvAlgorithm::kOneDnn) return OneDnnConv(geometry_of(node)).backward_implementation();
  return implementation(node);
}

size_t Conv2dKernel::workspace_bytes(const Node& node, int64_t batch) const {
  return conv_cpu_workspace_bytes(geometry_of(node), algorithm(node), lanes(batch));
}

void Conv2dKernel::forward(const ForwardArgs& args) {
  const ConvGeometry g = geometry_of(args.node);
  const int64_t batch = args.inputs[0].shape[0];
  assert(args.output.shape == args.node.out_shape_for(batch));
  const int64_t lane_count = lanes(batch), p = g.positions(), o_n = g.filters, og = g.group_filters();
  const ConvAlgorithm algo = algorithm(args.node);
  check_workspace(args.node, conv_cpu_workspace_bytes(g, algo, lane_count), args.ctx);
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  const float* bias = args.params.size() > 1 ? args.params[1].data : nullptr;
  float* y = args.output.data;
  if (batch == 0) return;
  if (algo == ConvAlgorithm::kWinograd) {
    WinogradConv(g).forward(args.ctx.pool, batch, lane_count, x, w, bias, y, args.ctx.workspace, args.relu_output);
    return;
  }
  if (algo == ConvAlgorithm::kOneDnn) {
    OneDnnConv(g).forward(args.ctx.pool, batch, lane_count, x, w, bias, y, args.ctx.workspace, args.relu_output);
    return;
  }
  const GemmConvLayout lay(g);

  parallel_for(args.ctx.pool, lane_count, [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      float* ws = args.ctx.workspace + l * lay.lane;
      float* cols = ws + lay.cols;
      const auto [begin, end] = split_range(batch, lane_count, l);
      for (int64_t n0 = begin; n0 < end; n0 += lay.group) {
        const int64_t count = std::min(lay.group, end - n0), ld = count * p;
        // One sample: the GEMMs write y[n0] ([O, P]) directly; else `block` [O, count*P].
        float* gemm_out = count == 1 ? y + n0 * o_n * p : ws + lay.block;
        for (int64_t gi = 0; gi < g.groups; ++gi) {  // conv group gi: filters [gi*O/G, (gi+1)*O/G)
          im2col_group(g, x, n0, count, gi * g.group_channels(), cols);
          sgemm(false, false, og, ld, g.patch(), w + gi * og * g.patch(), g.patch(), cols, ld, 0.0f,
                gemm_out + gi * og * ld, ld);
        }
        if (count == 1) {
          float* yn = gemm_out;
          if (bias != nullptr)
            for (int64_t o = 0; o < o_n; ++o) {
              const float b = bias[o];
              float* row = yn + o * p;
              for (int64_t i = 0; i < p; ++i) row[i] += b;
            }
        } else {
          const float* block = gemm_out;
          // block [O, count*P] -> y [count, O, P], adding the bias.
          for (int64_t s = 0; s < count; ++s)
            for (int64_t o = 0; o < o_n; ++o) {
              const float* src = block + o * ld + s * p;
              float* dst = y + ((n0 + s) * o_n + o) * p;
              const float b = bias != nullptr ? bias[o] : 0.0f;
              for (int64_t i = 0; i < p; ++i) dst[i] = src[i] + b;
            }
        }
        if (args.relu_output) relu_in_place(y + n0 * o_n * p, count * o_n * p);
      }
    }
  });
}

// The GEMM algorithm's backward: dx (when not null), and the weight
// gradient (when dw is not null), which the lanes compute in parts and add
// in lane order, then add to dw (accumulate) or write.
void Conv2dKernel::backward_gemm(const GemmPass& pass) const {
  const ConvGeometry& g = pass.g;
  const GemmConvLayout lay(g);
  const int64_t batch = pass.batch, lane_count = lanes(batch), p = g.positions(), o_n = g.filters;
  const int64_t og = g.group_filters();
  const float* x = pass.x;
  const float* dy = pass.dy;
  float* dx = pass.dx;
  float* dw = pass.dw;
  float* workspace = pass.workspace;
  parallel_for(pass.pool, lane_count, [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      float* ws = workspace + l * lay.lane;
      float* cols = ws + lay.cols;
      float* dw_lane = ws + lay.dw;
      const auto [begin, end] = split_range(batch, lane_count, l);
      for (int64_t n0 = begin; n0 < end; n0 += lay.group) {
        const int64_t count = std::min(lay.group, end - n0), ld = count * p;
        // The group's dy as a matrix [O, count*P]: dy[n0] itself for one sample.
        const float* dy_g = dy + n0 * o_n * p;
        if (count > 1) {
          float* block = ws + lay.block;
          for (int64_t s = 0; s < count; ++s)
            for (int64_t o = 0; o < o_n; ++o)
              std::memcpy(block + o * ld + s * p, dy + ((n0 + s) * o_n + o) * p,
                          static_cast<size_t>(p) * sizeof(float));
          dy_g = block;
        }
        for (int64_t gi = 0; gi < g.groups; ++gi) {  // conv group gi: rows [gi*O/G, (gi+1)*O/G) of dy_g and W
          const int64_t c0 = gi * g.group_channels();
          const float* dy_gi = dy_g + gi * og * ld;
          if (dw != nullptr) {
            // dW_lane (+)= dy_gi [O/G, count*P] * cols^T; sample groups add in order.
            im2col_group(g, x, n0, count, c0, cols);
            sgemm(false, true, og, g.patch(), ld, dy_gi, ld, cols, ld, n0 > begin ? 1.0f : 0.0f,
                  dw_lane + gi * og * g.patch(), g.patch());
          }
          if (dx != nullptr) {
            // dcols [(C/G)*K*K, count*P] = W_gi^T * dy_gi, then col2im into dx.
            sgemm(true, false, g.patch(), ld, og, pass.w + gi * og * g.patch(), g.patch(), dy_gi, ld, 0.0f, cols, ld);
            const int64_t kk = g.kernel * g.kernel;
            for (int64_t s = 0; s < count; ++s)
              for (int64_t c = 0; c < g.group_channels(); ++c)
                col2im_plane(g, cols + c * kk * ld + s * p, ld, dx + ((n0 + s) * g.channels + c0 + c) * g.in_plane());
          }
        }
      }
    }
  });
  if (dw == nullptr) return;
  // dW [+]= (dW_0 + dW_1 + ...), the lanes added in order first: the
  // samples' whole gradient, then added to what earlier chunks and
  // micro-batches left (core/exec/kernel.h). Elementwise, so any split of the
  // elements gives the same bits.
  const int64_t n_w = o_n * g.patch();
  parallel_for_elements(pass.pool, n_w, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float s = workspace[lay.dw + i];
      for (int64_t l = 1; l < lane_count; ++l) s += workspace[l * lay.lane + lay.dw + i];
      dw[i] = pass.accumulate ? dw[i] + s : s;
    }
  });
}

void Conv2dKernel::backward(const BackwardArgs& args) {
  const ConvGeometry g = geometry_of(args.node);
  const int64_t batch = args.d_output.shape[0];
  const int64_t p = g.positions(), o_n = g.filters;
  const float* dy = args.d_output.data;
  float* dx = args.d_inputs[0].data;
  float* dw = args.d_params[0].data;
  float* db = args.d_params.size() > 1 ? args.d_params[1].data : nullptr;

  if (db != nullptr) {
    // db[o] = sum over samples (in order) of the sum over positions; one o per task.
    parallel_for(args.ctx.pool, o_n, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        double sum = 0.0;
        for (int64_t n = 0; n < batch; ++n) sum += sum_fixed_order(dy + (n * o_n + o) * p, p);
        db[o] = args.accumulate ? db[o] + static_cast<float>(sum) : static_cast<float>(sum);
      }
    });
  }
  if (dw == nullptr && dx == nullptr) return;
  if (batch == 0) {  // no samples: a zero weight gradient (the lanes would leave theirs unwritten)
    if (dw != nullptr && !args.accumulate) std::fill(dw, dw + o_n * g.patch(), 0.0f);
    return;
  }

  const ConvAlgorithm algo = algorithm(args.node);
  check_workspace(args.node, conv_cpu_workspace_bytes(g, algo, lanes(batch)), args.ctx);
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  // Winograd and oneDNN: dW, then dx.
  const auto backward_by = [&](const auto& conv) {
    if (dw != nullptr)
      conv.backward_weights(args.ctx.pool, batch, lanes(batch), x, dy, dw, args.accumulate, args.ctx.workspace);
    if (dx != nullptr) conv.backward_input(args.ctx.pool, batch, lanes(batch), dy, w, dx, args.ctx.workspace);
  };
  if (algo == ConvAlgorithm::kWinograd) return backward_by(WinogradConv(g));
  if (algo == ConvAlgorithm::kOneDnn) return backward_by(OneDnnConv(g));
  backward_gemm(GemmPass{g, args.ctx.pool, x, dy, w, dx, dw, batch, args.accumulate, args.ctx.workspace});
}

}  // namespace devmap::cpu
