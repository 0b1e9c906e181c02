// The CPU conv2d kernel's algorithm and workspace layout, in one place for
// the kernel (kernels/cpu/conv2d.h lays its workspace out exactly so) and
// for the op schema, whose workspace figure the memory plan counts.
#pragma once

#include <cstdint>
#include <string>

#include "core/graph/attrs.h"
#include "core/graph/shape.h"

namespace devmap {

// Sizes of a conv2d (per sample). With `groups` G the channels and filters
// split into G groups; filter o sees only the C/G channels of its group
// (depthwise: G = C). Kernel tap k reads the input at offset k * dilation.
struct ConvGeometry {
  int64_t channels = 0, height = 0, width = 0;  // input C, H, W
  int64_t filters = 0, kernel = 0, stride = 1, padding = 0, dilation = 1, groups = 1;
  int64_t out_h = 0, out_w = 0;

  static ConvGeometry of(const Attrs& attrs, const Shape& in, const Shape& out);
  int64_t in_plane() const { return height * width; }
  int64_t positions() const { return out_h * out_w; }  // OH*OW
  int64_t group_channels() const { return channels / groups; }
  int64_t group_filters() const { return filters / groups; }
  // (C/G)*K*K: a filter's weights, the GEMM's inner dimension.
  int64_t patch() const { return group_channels() * kernel * kernel; }
};

// How the CPU computes a convolution (the conv2d attribute `algorithm`).
//   gemm:     im2col + GEMM, any shape; FLOPs as the definition.
//   winograd: Winograd F(4x4, KxK) with GEMMs in the transformed domain;
//             stride 1, dilation 1, groups 1, kernel 3 to 5, padding
//             below the kernel. About
//             2.8x (kernel 3) to 5x (kernel 5) fewer multiplications; its
//             rounding differs from gemm's by about 1e-6 relative.
//   onednn:   oneDNN's direct convolution (its JIT kernels for the CPU
//             path: avx512_core, avx2 or sse41), groups 1, any stride,
//             padding and dilation; FLOPs as the definition, in channel
//             blocks of 16 (8 below AVX-512).
//   auto:     winograd for kernels of 4 and 5 where it applies and pays
//             (at least 8 channels and 8 filters: F(4x4, 5x5) multiplies
//             6.25x less, which no direct kernel makes up), else onednn
//             where groups is 1, else gemm. Measured in bench/README.md.
enum class ConvAlgorithm { kAuto, kGemm, kWinograd, kOneDnn };

// Parses the attribute value; throws kInvalidInput naming the choices.
ConvAlgorithm parse_conv_algorithm(const std::string& name);
// Empty when Winograd can run on g, else why not ("stride 2 (needs 1)").
std::string winograd_unsupported(const ConvGeometry& g);
// Empty when oneDNN can run on g, else why not ("groups 4 (needs 1)").
std::string onednn_unsupported(const ConvGeometry& g);
// The algorithm the CPU kernel runs: never kAuto. A requested kWinograd or
// kOneDnn that cannot run throws kInvalidInput with the reason.
ConvAlgorithm resolve_conv_algorithm(ConvAlgorithm requested, const ConvGeometry& g);
// resolve_conv_algorithm of the node's `algorithm` attribute.
ConvAlgorithm conv_algorithm_of(const Attrs& attrs, const ConvGeometry& g);

// The most lanes of consecutive samples the CPU kernel runs at once: the
// workspace the memory plan counts is for this many at most.
inline constexpr int64_t kConvCpuMaxLanes = 8;

// Sizes are in floats. The workspace is `shared` floats, then `lanes`
// blocks of `lane` floats, one per lane of consecutive samples (see
// kernels/cpu/conv2d.h for the lanes).
struct GemmConvLayout {
  // A group's im2col matrix is kept at or under this many bytes (at least
  // one sample): OpenBLAS runs these shapes fastest one sample at a time.
  // (A "group" here is of samples; with conv groups, `cols` holds one conv
  // group's (C/G)*K*K rows at a time.)
  static constexpr int64_t kGroupColsBytes = int64_t{64} << 10;
  int64_t group = 1;                              // samples per group
  int64_t cols = 0, block = 0, dw = 0, lane = 0;  // offsets in a lane, and its size
  explicit GemmConvLayout(const ConvGeometry& g);
};

struct WinogradConvLayout {
  static constexpr int kTile = 4;  // m: output tile side
  // A group holds about this many tiles (at least one sample).
  static constexpr int64_t kGroupTiles = 32;
  static constexpr int64_t kVector = 8;  // tiles are transformed 8 at a time
  // Arrays [alpha^2][rows][cols] keep this many floats between the points'
  // matrices, so that the alpha^2 floats of one tile do not sit a power of
  // two apart (which would make them share one set of the L1 cache).
  static constexpr int64_t kSkew = 16;
  static int64_t point_stride(int64_t rows, int64_t cols) { return rows * cols + kSkew; }
  // The shared part and every lane start on 64-byte boundaries (given a
  // 64-byte aligned workspace); the transformed tiles' rows then start on
  // 32-byte ones (tiles_padded and kSkew are multiples of 8 floats).
  static constexpr int64_t kAlign = 16;
  int m = kTile, r = 0, alpha = 0;         // F(m x m, r x r), alpha = m + r - 1
  int64_t tiles_h = 0, tiles_w = 0;        // over the output (forward, weight gradient)
  int64_t dx_tiles_h = 0, dx_tiles_w = 0;  // over the input (the input gradient)
  int64_t group = 1;                       // samples per group
  int64_t tiles_padded = 0;                // the most tiles a group has, rounded up to kVector
  int64_t plane = 0;                       // floats of one zero-padded input plane
  // Shared: the transformed weights [alpha^2][O][C].
  int64_t shared = 0;
  // Per lane: padded planes [group + 1][plane] (the last one all zeros);
  // the transformed input [alpha^2][C][tiles_padded] and the GEMM products
  // [alpha^2][O][tiles_padded] (the input gradient swaps C and O); the
  // lane's transformed weight gradient [alpha^2][O][C].
  int64_t planes = 0, transformed = 0, dw = 0, lane = 0;
  explicit WinogradConvLayout(const ConvGeometry& g);
};

// oneDNN runs on channel-blocked copies of the NCHW tensors, one
// single-threaded primitive call per group of samples of a lane. Sizes
// bound what any of its layouts needs: channels padded to kBlock.
struct OneDnnConvLayout {
  static constexpr int64_t kBlock = 16;
  // A group's blocked input and output stay at or under this many bytes
  // (at least one sample), about a core's L2.
  static constexpr int64_t kGroupBytes = int64_t{1024} << 10;
  static constexpr int64_t kAlign = 16;  // regions start on 64-byte boundaries
  int64_t group = 1;                     // samples per primitive call
  int64_t weights = 0;                   // floats of blocked weights
  // Shared: the weights blocked for the forward pass and for the input
  // gradient.
  int64_t shared = 0;
  // Per lane: the group's blocked input (or input gradient) and output
  // (or output gradient), its blocked weight gradient, the same in OIHW,
  // and the lane's weight gradient (OIHW).
  int64_t src = 0, dst = 0, dw_blocked = 0, dw_group = 0, dw = 0, lane = 0;
  explicit OneDnnConvLayout(const ConvGeometry& g);
};

// Bytes of workspace for `lanes` lanes (shared + lanes x lane, as floats).
uint64_t conv_cpu_workspace_bytes(const ConvGeometry& g, ConvAlgorithm algorithm, int64_t lanes);

}  // namespace devmap
