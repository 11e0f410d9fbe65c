#pragma once
// NumPy's rules for the operations that select a value (NumPy 1.24, checked against Debian's
// numpy): one definition, used by the element-wise minimum / maximum (expr_nodes.hpp), the folds
// of min / max / norm_inf (kernels.hpp), the per-axis folds and their MPI combination
// (axis_reduce_impl.hpp), and argmin / argmax whole and per axis (expr_device.hpp,
// axis_reduce_impl.hpp).
//
// - minimum(a, b) / maximum(a, b): a NaN on either side gives that NaN (a's when both are);
//   otherwise the smaller (larger), and on a tie the second operand b, so maximum(-0.0, 0.0) is
//   0.0 and maximum(0.0, -0.0) is -0.0 (NumPy's `(a > b || isnan(a)) ? a : b`).
// - min / max reductions fold acc = minimum(x, acc): NaN when any element is NaN (a NaN x
//   enters, a NaN acc stays). Which NaN, and the sign of a zero result when +0 and -0 tie, are
//   not specified (NumPy's reductions return the first NaN and the last of tied zeros; a
//   parallel fold has no such order).
// - argmin / argmax: the first NaN in row-major order when there is one, else the first
//   occurrence of the smallest (largest) value.
// The non-NaN path is the plain compare-select plus one NaN test off the loop-carried chain;
// integers skip the NaN test at compile time. Device-callable.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace spmd::impl {

/// True for a NaN (never for integers or bool). Device-callable.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr bool is_nan(const T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

/// The identity of a min (Low) or max fold: +inf / -inf for floating types (so the min of an
/// array of infinities is inf, not the largest finite value), else the type's largest / lowest
/// value. A constant, usable in device code.
template <class T, bool Low>
struct select_identity {
  static constexpr T value = std::numeric_limits<T>::has_infinity
                                 ? (Low ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity())
                                 : (Low ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest());
};

/// NumPy's minimum(a, b) (see the file comment). Written so that the data-dependent part is
/// the plain `a < b ? a : b` (one minsd / fmin-free select) and the NaN test is on `a` alone: a
/// fold acc = np_minimum(x, acc) keeps its loop-carried chain as short as std::min's, and the NaN
/// test of the new value x is off that chain (a branch never taken, or a blend). Device-callable.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr T np_minimum(const T a, const T b) {
  return is_nan(a) ? a : (a < b ? a : b);
}
/// NumPy's maximum(a, b) (see the file comment and np_minimum). Device-callable.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr T np_maximum(const T a, const T b) {
  return is_nan(a) ? a : (a > b ? a : b);
}

/// NumPy's argmin (Less) / argmax choice: does x at row-major index i beat v at index j
/// (j < 0: nothing yet)? The first NaN, else the smaller (larger) value, else the lower index.
/// Device-callable.
template <bool Less, class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr bool arg_beats(const T x, const std::int64_t i, const T v, const std::int64_t j) {
  if (j < 0) return true;
  const bool xn = is_nan(x), vn = is_nan(v);
  if (vn) return xn && i < j;
  if (xn) return true;
  return (Less ? x < v : x > v) || (x == v && i < j);
}

}  // namespace spmd::impl
