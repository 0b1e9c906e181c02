// im2col / col2im for one (sample, channel) plane of an NCHW tensor, the
// building blocks of the GEMM convolution in conv2d.cpp.
#pragma once

#include <cstdint>

#include "core/graph/ops/conv2d_cpu_layout.h"

namespace devmap::cpu {

// Columns layout: a row-major matrix [C*K*K, ld] (C: the channels of one
// conv group). For one plane (sample s of a chunk, channel c of the group)
// `cols` points at row c*K*K, column s*OH*OW; the plane
// owns rows [c*K*K, (c+1)*K*K) x columns [s*OH*OW, (s+1)*OH*OW) and nothing
// else, so planes can be processed in parallel.
//
// Writes the plane's K*K rows: cols[(kh*K+kw)*ld + oh*OW + ow] =
// plane[oh*S-P+kh*D][ow*S-P+kw*D] (D: the dilation), or 0 where that falls
// in the padding.
void im2col_plane(const ConvGeometry& g, const float* plane, float* cols, int64_t ld);

// The adjoint of im2col_plane: overwrites `plane` ([H, W]) with the sum, for
// each input pixel, of the column entries im2col_plane would copy it to.
// The order of the sum is fixed (kh, kw, oh, ow ascending).
// Both have a stride-1 path for planes that fit, with their padding, in a
// 16 KiB stack buffer (bound-free row copies); it gives the same bits.
void col2im_plane(const ConvGeometry& g, const float* cols, int64_t ld, float* plane);

}  // namespace devmap::cpu
