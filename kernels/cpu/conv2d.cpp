#include "kernels/cpu/conv2d.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <string>

#include "core/error.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

size_t per_sample_bytes(const ConvGeometry& g) {
  return static_cast<size_t>((g.patch() + g.filters) * g.positions()) * sizeof(float);
}

// The two workspace matrices of a chunk of `chunk` samples.
struct ConvWorkspace {
  float* cols;
  float* block;
};

ConvWorkspace split_workspace(const Node& node, const ConvGeometry& g, int64_t chunk, const KernelContext& ctx) {
  size_t need = static_cast<size_t>(chunk) * per_sample_bytes(g);
  if (ctx.workspace == nullptr || ctx.workspace_bytes < need) {
    // The executor sizes the workspace from workspace_bytes(): this is a bug there.
    throw_runtime("conv2d '" + node.name + "': workspace of " + std::to_string(ctx.workspace_bytes) +
                  " bytes is smaller than the " + std::to_string(need) +
                  " bytes workspace_bytes() asked for (executor bug)");
  }
  return {ctx.workspace, ctx.workspace + chunk * g.patch() * g.positions()};
}

// im2col of samples [n0, n0+count) of x into cols [C*K*K, count*OH*OW].
void im2col_chunk(const ConvGeometry& g, const float* x, int64_t n0, int64_t count, float* cols, ThreadPool* pool) {
  const int64_t ld = count * g.positions(), kk = g.kernel * g.kernel;
  parallel_for(pool, count * g.channels, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t s = t / g.channels, c = t % g.channels;
      im2col_plane(g, x + ((n0 + s) * g.channels + c) * g.in_plane(), cols + c * kk * ld + s * g.positions(), ld);
    }
  });
}

}  // namespace

int64_t Conv2dKernel::chunk_samples(const ConvGeometry& g, int64_t batch) const {
  int64_t fit = static_cast<int64_t>(max_workspace_bytes_ / std::max<size_t>(per_sample_bytes(g), 1));
  return std::clamp<int64_t>(fit, 1, std::max<int64_t>(batch, 1));
}

int64_t Conv2dKernel::chunk_samples(const Node& node, int64_t batch) const {
  return chunk_samples(ConvGeometry::of(node), batch);
}

size_t Conv2dKernel::workspace_bytes(const Node& node, int64_t batch) const {
  const ConvGeometry g = ConvGeometry::of(node);
  return static_cast<size_t>(chunk_samples(g, batch)) * per_sample_bytes(g);
}

void Conv2dKernel::forward(const ForwardArgs& args) {
  const ConvGeometry g = ConvGeometry::of(args.node);
  const int64_t batch = args.inputs[0].shape[0];
  assert(args.output.shape == args.node.out_shape_for(batch));
  const int64_t chunk = chunk_samples(g, batch), p = g.positions(), o_n = g.filters;
  const ConvWorkspace ws = split_workspace(args.node, g, chunk, args.ctx);
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  const float* bias = args.params.size() > 1 ? args.params[1].data : nullptr;
  float* y = args.output.data;

  for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
    const int64_t count = std::min(chunk, batch - n0), ld = count * p;
    im2col_chunk(g, x, n0, count, ws.cols, args.ctx.pool);
    sgemm(false, false, o_n, ld, g.patch(), w, g.patch(), ws.cols, ld, 0.0f, ws.block, ld);
    // block [O, count*P] -> y [count, O, P], adding the bias.
    parallel_for(args.ctx.pool, count * o_n, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t s = t / o_n, o = t % o_n;
        const float* src = ws.block + o * ld + s * p;
        float* dst = y + ((n0 + s) * o_n + o) * p;
        if (bias == nullptr) {
          std::memcpy(dst, src, static_cast<size_t>(p) * sizeof(float));
        } else {
          const float b = bias[o];
          for (int64_t i = 0; i < p; ++i) dst[i] = src[i] + b;
        }
      }
    });
  }
}

void Conv2dKernel::backward(const BackwardArgs& args) {
  const ConvGeometry g = ConvGeometry::of(args.node);
  const int64_t batch = args.d_output.shape[0];
  const int64_t chunk = chunk_samples(g, batch), p = g.positions(), o_n = g.filters;
  const float* dy = args.d_output.data;
  float* dx = args.d_inputs[0].data;
  float* dw = args.d_params[0].data;
  float* db = args.d_params.size() > 1 ? args.d_params[1].data : nullptr;

  if (db != nullptr) {
    // db[o] = sum over samples, then positions, in order; one o per task.
    parallel_for(args.ctx.pool, o_n, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        double sum = 0.0;
        for (int64_t n = 0; n < batch; ++n) {
          const float* row = dy + (n * o_n + o) * p;
          for (int64_t i = 0; i < p; ++i) sum += row[i];
        }
        db[o] = args.accumulate ? db[o] + static_cast<float>(sum) : static_cast<float>(sum);
      }
    });
  }
  if (dw == nullptr && dx == nullptr) return;

  const ConvWorkspace ws = split_workspace(args.node, g, chunk, args.ctx);
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
    const int64_t count = std::min(chunk, batch - n0), ld = count * p;
    // dy [count, O, P] -> block [O, count*P].
    parallel_for(args.ctx.pool, count * o_n, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t s = t / o_n, o = t % o_n;
        std::memcpy(ws.block + o * ld + s * p, dy + ((n0 + s) * o_n + o) * p, static_cast<size_t>(p) * sizeof(float));
      }
    });
    if (dw != nullptr) {
      // dW [O, C*K*K] (+)= block [O, count*P] * cols^T; chunks add in order.
      im2col_chunk(g, x, n0, count, ws.cols, args.ctx.pool);
      const float beta = (args.accumulate || n0 > 0) ? 1.0f : 0.0f;
      sgemm(false, true, o_n, g.patch(), ld, ws.block, ld, ws.cols, ld, beta, dw, g.patch());
    }
    if (dx != nullptr) {
      // dcols [C*K*K, count*P] = W^T * block, then col2im into dx.
      sgemm(true, false, g.patch(), ld, o_n, w, g.patch(), ws.block, ld, 0.0f, ws.cols, ld);
      const int64_t kk = g.kernel * g.kernel;
      parallel_for(args.ctx.pool, count * g.channels, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t s = t / g.channels, c = t % g.channels;
          col2im_plane(g, ws.cols + c * kk * ld + s * p, ld, dx + ((n0 + s) * g.channels + c) * g.in_plane());
        }
      });
    }
  }
}

}  // namespace devmap::cpu
