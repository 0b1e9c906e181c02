// The 2x2, stride 2, unpadded max pooling of one plane, written in
// intrinsics: up to 16 outputs per vector with AVX-512, 8 with AVX2,
// whatever the row's length (masked loads and stores for the rest of a
// row), where the compiled loops of max_pool2d.cpp run a row shorter than a
// vector (the reference CNN's 7 and 14 outputs) mostly scalar. Every output
// is a select among the window's elements by the same comparisons as
// max_pool2d.cpp's loops, so the bits are theirs
// (tests/kernels/cpu_paths_test.cpp checks against the baseline build).
// Only on x86-64: the _avx512 functions for the AVX-512 path, the _avx2
// ones for the AVX2 path.
#pragma once

#include <cstdint>

namespace devmap::cpu {

// One plane's geometry: out_h = height / 2, out_w = width / 2.
struct Plane2x2 {
  int64_t height = 0, width = 0, out_h = 0, out_w = 0;
};

#if defined(__x86_64__) && defined(__GNUC__)
// out[oh][ow] = the first maximum (or first NaN) of in[2oh][2ow],
// in[2oh][2ow+1], in[2oh+1][2ow], in[2oh+1][2ow+1], in that order.
void max_pool2x2_forward_avx512(const Plane2x2& g, const float* in, float* out);

// d_in (overwritten): each window's d_out at the first element matching its
// maximum m (equal, or both NaN), +0.0 at its other elements and at the
// rows and columns no window covers; with `relu`, +0.0 also wherever `in`
// is not above zero (BackwardArgs::relu_input_gradient).
void max_pool2x2_backward_avx512(const Plane2x2& g, const float* in, const float* m, const float* d_out, float* d_in,
                                 bool relu);

// The same two with AVX2 (8 outputs per vector).
void max_pool2x2_forward_avx2(const Plane2x2& g, const float* in, float* out);
void max_pool2x2_backward_avx2(const Plane2x2& g, const float* in, const float* m, const float* d_out, float* d_in,
                               bool relu);
#endif

}  // namespace devmap::cpu
