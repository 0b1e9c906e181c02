// Winograd (Toom-Cook) minimal filtering: the matrices of F(m, r), built at
// compile time, and the 2-D tile transform the Winograd convolution
// (conv2d_winograd.h) runs eight tiles at a time.
#pragma once

#include <array>
#include <cstddef>
#include <utility>

namespace devmap::cpu::winograd {

// The largest tile side (alpha = m + r - 1) these matrices are built for.
constexpr int kMaxAlpha = 8;
// Tiles are transformed kLanes at a time, one per vector lane.
constexpr int kLanes = 8;

// F(m, r): the m outputs y_i = sum_k g_k d_(i+k) (k < r) of a correlation
// over d of length alpha = m + r - 1 are y = AT [(G g) * (BT d)] with *
// elementwise. Built by Toom-Cook from the points 0, 1, -1, 2, -2, 1/2, -1/2
// (the first alpha - 1 of them) and infinity, in double, then rounded:
//   at [m x alpha]     evaluates a degree m-1 polynomial at the points,
//   g  [alpha x r]     evaluates g, divided per point by prod_(q != p)(p - q),
//   bt [alpha x alpha] the transposed interpolation, times that product.
// Each is row-major with its own column count as the row length. In 2-D
// the tile transforms are Y = AT [(G g G^T) * (BT d BT^T)] AT^T. F(r, m)
// has the same bt as F(m, r) and swaps the roles of at and g, which makes
// it the weight gradient's algorithm: dW (r x r) from an input tile
// (alpha x alpha) and an output-gradient tile (m x m).
struct Matrices {
  int m = 0, r = 0, alpha = 0;
  std::array<float, kMaxAlpha * kMaxAlpha> at{}, g{}, bt{};
};

namespace detail {

constexpr std::array<double, kMaxAlpha - 1> kPoints = {0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5};
using Square = std::array<std::array<double, kMaxAlpha>, kMaxAlpha>;

constexpr double power(double x, int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= x;
  return p;
}

// Row j < n-1: the point's powers 0..terms-1 divided by scale[j]; row n-1
// (infinity): the highest power only.
constexpr Square evaluation(int n, int terms, const std::array<double, kMaxAlpha>& scale) {
  Square e{};
  for (int j = 0; j + 1 < n; ++j)
    for (int k = 0; k < terms; ++k) e[j][k] = power(kPoints[j], k) / scale[j];
  e[n - 1][terms - 1] = 1.0;
  return e;
}

// The inverse of the leading n x n block, by Gauss-Jordan elimination with
// partial pivoting (the points are distinct, so it is nonsingular).
constexpr Square inverse(Square a, int n) {
  Square inv{};
  for (int i = 0; i < n; ++i) inv[i][i] = 1.0;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int row = col + 1; row < n; ++row) {
      const double cand = a[row][col] < 0 ? -a[row][col] : a[row][col];
      const double best = a[pivot][col] < 0 ? -a[pivot][col] : a[pivot][col];
      if (cand > best) pivot = row;
    }
    std::swap(a[col], a[pivot]);
    std::swap(inv[col], inv[pivot]);
    const double p = a[col][col];
    for (int j = 0; j < n; ++j) {
      a[col][j] /= p;
      inv[col][j] /= p;
    }
    for (int row = 0; row < n; ++row) {
      const double f = a[row][col];
      if (row == col || f == 0.0) continue;
      for (int j = 0; j < n; ++j) {
        a[row][j] -= f * a[col][j];
        inv[row][j] -= f * inv[col][j];
      }
    }
  }
  return inv;
}

}  // namespace detail

// F(m, r) for m, r >= 1 with m + r - 1 <= kMaxAlpha.
constexpr Matrices toom_cook(int m, int r) {
  using detail::Square;
  Matrices out;
  out.m = m;
  out.r = r;
  out.alpha = m + r - 1;
  const int n = out.alpha;
  // f_j = prod over the other finite points q of (p_j - q); 1 for infinity.
  std::array<double, kMaxAlpha> f{}, ones{};
  for (int j = 0; j < kMaxAlpha; ++j) f[j] = ones[j] = 1.0;
  for (int j = 0; j + 1 < n; ++j)
    for (int q = 0; q + 1 < n; ++q)
      if (q != j) f[j] *= detail::kPoints[j] - detail::kPoints[q];
  // The linear convolution of g (length r) and h (length m) is
  // s = V^-1 [(E_r g) * (E_m h)] with V = E_alpha; the correlation is its
  // transpose in h: y = E_m^T [(E_r g) * (V^-T d)]. Moving f from the data
  // side to the filter side keeps bt's entries small integers and halves.
  const Square v_inv = detail::inverse(detail::evaluation(n, n, ones), n);
  const Square em = detail::evaluation(n, m, ones);
  const Square er = detail::evaluation(n, r, f);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) out.bt[i * n + j] = static_cast<float>(f[i] * v_inv[j][i]);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) out.at[i * n + j] = static_cast<float>(em[j][i]);
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < r; ++k) out.g[j * r + k] = static_cast<float>(er[j][k]);
  return out;
}

// The matrices as compile-time constants, for the transforms below.
template <int M, int R>
inline constexpr Matrices kToomCook = toom_cook(M, R);

// Eight tiles, one per lane: element (i, j) of every tile at [i * side + j].
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));

// acc += c * x, where c is a compile-time constant: a product with 0
// vanishes and one with +-1 becomes an addition or a subtraction (the same
// bits as the product).
[[gnu::always_inline]] inline void add_term(Vec& acc, float c, const Vec& x) {
  if (c == 1.0f) {
    acc += x;
  } else if (c == -1.0f) {
    acc -= x;
  } else if (c != 0.0f) {
    acc += c * x;
  }
}

// out[i][j] = sum over k < Cols of a[i][k] * in[k][j], for i < Rows and
// j < N, with `in` and `out` addressed through (row, column) strides. `a`
// is Rows x Cols, row-major, and a compile-time constant (kToomCook): the
// loops unroll completely and add_term folds the zeros and ones. Sums run
// in k order.
template <int Rows, int Cols, int N, int InRow, int InCol, int OutRow, int OutCol>
[[gnu::always_inline]] inline void left_multiply(const std::array<float, kMaxAlpha * kMaxAlpha>& a, const Vec* in,
                                                 Vec* out) {
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) {
      Vec acc = {};
#pragma GCC unroll 8
      for (int k = 0; k < Cols; ++k) add_term(acc, a[i * Cols + k], in[k * InRow + j * InCol]);
      out[i * OutRow + j * OutCol] = acc;
    }
  }
}

// out = a * in * a^T for each lane, a being Rows x Cols (row-major), `in`
// Cols x Cols and `out` Rows x Rows, both row-major: tmp = a * in, then
// out^T = a * tmp^T. Always inlined, so that it is compiled for the
// caller's instruction set; the bits depend only on the inputs.
template <int Rows, int Cols>
[[gnu::always_inline]] inline void sandwich(const std::array<float, kMaxAlpha * kMaxAlpha>& a, const Vec* in,
                                            Vec* out) {
  Vec tmp[Rows * Cols];
  left_multiply<Rows, Cols, Cols, Cols, 1, Cols, 1>(a, in, tmp);
  left_multiply<Rows, Cols, Rows, 1, Cols, 1, Rows>(a, tmp, out);
}

}  // namespace devmap::cpu::winograd
