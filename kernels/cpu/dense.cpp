#include "kernels/cpu/dense.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/dense_gemm.h"
#include "kernels/cpu/dense_gradient_gemm.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

// Splits `cols` output columns of a GEMM of `flops` into blocks of at most
// kMaxBlockCols columns (more when there are at least kMinBlockFlops per
// block, up to 4), a multiple of 4 blocks when more than one (so 1, 2 or 4
// threads share them evenly), boundaries on multiples of 16 columns. Depends only on the shape, so a block's GEMM and
// its bits are the same for any pool size.
constexpr double kMinBlockFlops = 4e6;
constexpr int64_t kMaxBlockCols = 512;

struct Blocks {
  int64_t count, cols;
  int64_t begin(int64_t b) const { return std::min(cols, (b * cols / count + 15) / 16 * 16); }
  int64_t end(int64_t b) const { return b + 1 == count ? cols : begin(b + 1); }
};

Blocks blocks_of(int64_t cols, double flops) {
  const int64_t by_flops = std::max<int64_t>(1, static_cast<int64_t>(flops / kMinBlockFlops));
  const int64_t by_cols = (cols + kMaxBlockCols - 1) / kMaxBlockCols;
  const int64_t max_blocks = std::max<int64_t>(1, cols / 16);
  int64_t count = std::max(by_cols, std::min<int64_t>(by_flops, 4));
  if (count > 1) count = (count + 3) / 4 * 4;
  return {std::clamp<int64_t>(count, 1, max_blocks), cols};
}

// Runs fn(col_begin, col_end) for every block of `b` on the pool.
template <class Fn>
void for_blocks(ThreadPool* pool, const Blocks& b, const Fn& fn) {
  parallel_for(pool, b.count, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i)
      if (b.end(i) > b.begin(i)) fn(b.begin(i), b.end(i));
  });
}

// Whether the kernel's own GEMMs (dense_gemm.h, dense_gradient_gemm.h) run
// here at all: on their path, and unless DEVMAP_GEMM (or a test) forces a
// library for every GEMM.
bool own_gemms_run() {
  return dense_gemm_runs() && !gemm_library_forced();
}

}  // namespace

std::string DenseKernel::implementation(const Node& /*node*/) const {
  if (!own_gemms_run()) return gemm_kernel_name();
  // Within the profile's 48 characters: "dense/avx512, >64 rows openblas:Cooperlake".
  return path_kernel_name("dense") + ", >" + std::to_string(kDenseOwnForwardMaxRows) + " rows " + gemm_kernel_name();
}

std::string DenseKernel::backward_implementation(const Node& /*node*/) const {
  return own_gemms_run() ? path_kernel_name("dense") : gemm_kernel_name(GemmUse::kDenseGradient);
}

bool DenseKernel::forward_handles_gradient_chunks(const Node& /*node*/) const {
  return true;
}

bool DenseKernel::backward_handles_gradient_chunks(const Node& /*node*/) const {
  return true;
}

void DenseKernel::forward(const ForwardArgs& args) {
  const int64_t batch = args.inputs[0].shape[0], in = args.inputs[0].shape[1], units = args.output.shape[1];
  const float* bias = args.params.size() > 1 ? args.params[1].data : nullptr;
  const float* x = args.inputs[0].data;
  const float* w = args.params[0].data;
  float* y = args.output.data;
  const int64_t chunk_rows = args.gradient_chunk > 0 ? std::min(batch, args.gradient_chunk) : batch;
  const Blocks blocks = blocks_of(units, 2.0 * static_cast<double>(chunk_rows * in * units));
  // Rows [first, first + rows) in one call of the kernel's own GEMM, whose
  // rows' bits do not depend on the rows beside them, or a library's.
  const auto own = [&](int64_t rows) { return own_gemms_run() && rows <= kDenseOwnForwardMaxRows; };
  const auto rows_in_own = [&](int64_t first, int64_t rows) {
    const DenseOperands o{rows, in, units, x + first * in, w};
    for_blocks(args.ctx.pool, blocks, [&](int64_t u0, int64_t u1) {
      dense_gemm_forward(o, bias, y + first * units, {u0, u1});
    });
  };
  if (own(chunk_rows)) {  // every chunk at once
    rows_in_own(0, batch);
    return;
  }
  for_each_gradient_chunk(batch, args.gradient_chunk, false, [&](int64_t first, int64_t rows, bool /*add*/) {
    if (own(rows)) {  // a last chunk short enough
      rows_in_own(first, rows);
      return;
    }
    const float* xc = x + first * in;
    float* yc = y + first * units;
    // The blocks of a call on this chunk alone, so the library's calls keep
    // their shapes (a last chunk may have fewer rows, and fewer blocks).
    const Blocks chunk_blocks = blocks_of(units, 2.0 * static_cast<double>(rows * in * units));
    for_blocks(args.ctx.pool, chunk_blocks, [&](int64_t u0, int64_t u1) {
      if (bias != nullptr)
        for (int64_t n = 0; n < rows; ++n)
          std::memcpy(yc + n * units + u0, bias + u0, static_cast<size_t>(u1 - u0) * sizeof(float));
      sgemm(false, true, rows, u1 - u0, in, xc, in, w + u0 * in, in, bias ? 1.0f : 0.0f, yc + u0, units);
    });
  });
}

namespace {

// The gradients a backward call writes: dx null when the input needs none,
// db null without a bias.
struct DenseGradients {
  float* dx;
  float* dw;
  float* db;
};

DenseGradients gradients_of(const BackwardArgs& args) {
  return {args.d_inputs[0].data, args.d_params[0].data, args.d_params.size() > 1 ? args.d_params[1].data : nullptr};
}

// db[u] for u in [u0, u1) (+)= the column sums of dy's `rows` rows,
// samples added in order, in double, rounded once.
void bias_gradient(const float* dy, int64_t rows, int64_t units, ColumnRange cols, float* db, bool add) {
  double sums[kMaxBlockCols];
  for (int64_t c0 = cols.begin; c0 < cols.end; c0 += kMaxBlockCols) {
    const int64_t c1 = std::min(cols.end, c0 + kMaxBlockCols);
    std::fill(sums, sums + (c1 - c0), 0.0);
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t u = c0; u < c1; ++u) sums[u - c0] += static_cast<double>(dy[n * units + u]);
    for (int64_t u = c0; u < c1; ++u)
      db[u] = add ? db[u] + static_cast<float>(sums[u - c0]) : static_cast<float>(sums[u - c0]);
  }
}

// The gradients of one chunk, [first, first + rows), in a library's sgemm:
// dx[:, i0:i1] = dy W[:, i0:i1], and rows [u0, u1) of dW (+)= dy[:, u0:u1]^T
// x with the same units of db, in the blocks a call on this chunk alone has.
void library_backward_chunk(const BackwardArgs& args, int64_t first, int64_t rows, bool add) {
  const int64_t units = args.d_output.shape[1], in = args.node.input_shapes[0][0];
  const GemmLibrary library = gemm_library(GemmUse::kDenseGradient);
  const float* dy = args.d_output.data + first * units;
  const float* x = args.inputs[0].data + first * in;
  const float* w = args.params[0].data;
  const auto [dx, dw, db] = gradients_of(args);
  const double flops = 2.0 * static_cast<double>(rows * in * units);
  if (dx != nullptr)
    for_blocks(args.ctx.pool, blocks_of(in, flops), [&](int64_t i0, int64_t i1) {
      sgemm_in(library, false, false, rows, i1 - i0, units, dy, units, w + i0, in, 0.0f, dx + first * in + i0, in);
    });
  if (dw == nullptr && db == nullptr) return;
  for_blocks(args.ctx.pool, blocks_of(units, flops), [&](int64_t u0, int64_t u1) {
    if (dw != nullptr)
      sgemm_in(library, true, false, u1 - u0, in, rows, dy + u0, units, x, in, add ? 1.0f : 0.0f, dw + u0 * in, in);
    if (db != nullptr) bias_gradient(dy, rows, units, {u0, u1}, db, add);
  });
}

// Every chunk at once in dense_gradient_gemm.h's GEMMs, whose outputs'
// bits depend on neither the rows beside them nor the blocks.
void own_backward(const BackwardArgs& args) {
  const int64_t batch = args.d_output.shape[0], units = args.d_output.shape[1];
  const int64_t in = args.node.input_shapes[0][0];
  const DenseGradientOperands o{{batch, in, units, args.inputs[0].data, args.params[0].data}, args.d_output.data};
  const auto [dx, dw, db] = gradients_of(args);
  const double flops = 2.0 * static_cast<double>(batch * in * units);
  if (dx != nullptr)
    for_blocks(args.ctx.pool, blocks_of(in, flops), [&](int64_t i0, int64_t i1) {
      dense_gemm_input_gradient(o, dx, {i0, i1});
    });
  if (dw == nullptr && db == nullptr) return;
  const GradientChunks chunks{args.gradient_chunk, args.accumulate};
  for_blocks(args.ctx.pool, blocks_of(units, flops), [&](int64_t u0, int64_t u1) {
    if (dw != nullptr) dense_gemm_weight_gradient(o, chunks, dw, {u0, u1});
    if (db != nullptr)
      for_each_gradient_chunk(batch, args.gradient_chunk, args.accumulate, [&](int64_t first, int64_t rows, bool add) {
        bias_gradient(o.dy + first * units, rows, units, {u0, u1}, db, add);
      });
  });
}

}  // namespace

void DenseKernel::backward(const BackwardArgs& args) {
  if (own_gemms_run()) {
    own_backward(args);
    return;
  }
  const int64_t batch = args.d_output.shape[0];
  for_each_gradient_chunk(batch, args.gradient_chunk, args.accumulate, [&](int64_t first, int64_t rows, bool add) {
    library_backward_chunk(args, first, rows, add);
  });
}

}  // namespace devmap::cpu
