#pragma once
// Creation functions, implementation (creation.hpp checks and dispatches): the generators that
// linspace, eye, indices and fromfunction evaluate (expression nodes without storage), and making
// a new array holding one.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/array_impl.hpp"

namespace spmd::impl {

/// Generator: the index along one axis.
template <int N>
struct AxisIndex {
  int axis;
  KOKKOS_INLINE_FUNCTION index_t operator()(const Kokkos::Array<index_t, N>& g) const { return g[axis]; }
};

/// Generator: a user's f(i0, ..., iN-1) (global indices as index_t), its result converted to T.
template <class T, class F, int N, class Seq = std::make_index_sequence<N>>
struct Unpacked;
template <class T, class F, int N, std::size_t... D>
struct Unpacked<T, F, N, std::index_sequence<D...>> {
  F f;
  KOKKOS_INLINE_FUNCTION T operator()(const Kokkos::Array<index_t, N>& g) const { return static_cast<T>(f(g[D]...)); }
};
/// The element type fromfunction makes by default: f's result for N index_t arguments.
template <class F, int N, class Seq = std::make_index_sequence<N>>
struct result_of_indices;
template <class F, int N, std::size_t... D>
struct result_of_indices<F, N, std::index_sequence<D...>> {
  using type = std::decay_t<decltype(std::declval<const F&>()(((void)D, index_t(0))...))>;
};

/// i * s without a fused multiply-add on devices (NumPy multiplies, then adds: two roundings;
/// nvcc would fuse a written-out i * s + start).
KOKKOS_INLINE_FUNCTION double mul_rounded(const double a, const double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/// Generator: NumPy's linspace element i (numpy/core/function_base.py): i * step + start, or
/// i / div * delta + start when the step underflows to 0; the last element is stop itself when
/// the endpoint is included.
template <class T>
struct LinspaceAt {
  double start, stop, step, delta, div;
  index_t last;  // the index that is stop exactly, or -1
  int mode;      // 0: i * step; 1: i / div * delta; 2: i * delta (div == 0)
  KOKKOS_INLINE_FUNCTION T operator()(const Kokkos::Array<index_t, 1>& g) const {
    if (g[0] == last) return static_cast<T>(stop);
    const double i = static_cast<double>(g[0]);
    double y;
    if (mode == 0)
      y = mul_rounded(i, step);
    else if (mode == 1)
      y = mul_rounded(i / div, delta);
    else
      y = mul_rounded(i, delta);
    return static_cast<T>(y + start);
  }
};

/// Generator: ones on the k-th diagonal (column - row == k), zeros elsewhere.
template <class T>
struct EyeAt {
  index_t k;
  KOKKOS_INLINE_FUNCTION T operator()(const Kokkos::Array<index_t, 2>& g) const {
    return g[1] - g[0] == k ? T(1) : T(0);
  }
};

/// A new array of `shape` on `comm` holding the generator e (zero halo). Collective.
template <class T, class M, std::size_t R, class E, class... Opts>
Array<T, static_cast<int>(R), M> make_generated(const char* fn, const Comm& comm, const std::array<index_t, R>& shape,
                                                const E& e, const Opts&... opts) {
  auto a = make_array<T, M>(fn, comm, shape, Init::none, opts...);
  bool halo = false;
  for (std::size_t d = 0; d < R; ++d) halo = halo || a.halo()[d] > 0;
  if (halo) a.fill_with_halo(T(0));
  assign(a, e);
  return a;
}

template <std::size_t R>
void check_shape(const char* fn, const std::array<index_t, R>& shape) {
  for (std::size_t d = 0; d < R; ++d)
    if (shape[d] < 0) throw Error::replicated(str(fn, ": negative extent in shape ", shape_str(shape)));
}

}  // namespace spmd::impl
