#pragma once
/// \file creation.hpp
/// Arrays made from a formula of their global indices, and index expressions:
///
///   auto x = spmd::linspace(comm, 0.0, 1.0, 101);                  // NumPy's linspace
///   auto I = spmd::eye<double>(comm, 64);                           // 2-D, distributed
///   auto f = spmd::fromfunction<double>(comm, {n, m}, KOKKOS_LAMBDA(index_t i, index_t j) {
///     return 1.0 / (i + j + 1); });                                 // Hilbert matrix
///   u = sin(spmd::indices(u.shape(), 1) * dx);                      // lazy: no index array
///
/// spmd::indices(shape, axis) and spmd::fromfunction(shape, f) are lazy expressions of `shape`
/// (generators: impl::GenExpr): the element at index g is g[axis], or f(g...), computed where
/// the expression is assigned or reduced, fused with the rest of it. An index is the
/// expression's own: assigned to a slice, index 0 is the slice's first element (as NumPy's
/// `u[1:-1] = np.indices(...)[0]`). The creation functions take a communicator and the
/// distribution options (halo, periodic, grid, label), make a new array and assign the
/// generator to it: Collective (they build a Distribution); a halo, if any, is zero.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/expr.hpp"
#include "spmd/impl/creation_impl.hpp"

namespace spmd {

// ---- index expressions -----------------------------------------------------------------------

/// The global index along `axis` of an array of `shape`, as a lazy index_t expression (NumPy's
/// `np.indices(shape)[axis]`, without the array): `u = sin(spmd::indices(u.shape(), 1) * dx)`.
/// Local (building it); an axis outside [0, N) is an spmd::Error on every rank.
template <std::size_t R>
auto indices(const std::array<index_t, R>& shape, int axis) {
  constexpr int N = static_cast<int>(R);
  impl::check_shape("spmd::indices", shape);
  if (axis < 0 || axis >= N)
    throw Error::replicated(
        impl::str("spmd::indices: axis ", axis, " is out of range for shape ", impl::shape_str(shape)));
  return impl::GenExpr<impl::AxisIndex<N>, index_t, N>{{}, impl::AxisIndex<N>{axis}, shape};
}
/// indices with a braced shape: `spmd::indices({n, m}, 1)`. Local.
template <std::size_t R>
auto indices(const index_t (&shape)[R], int axis) {
  return indices(impl::to_index(shape), axis);
}

// ---- fromfunction ----------------------------------------------------------------------------

/// A lazy expression of `shape` whose element at g is f(g0, ..., gN-1) converted to T (f: a
/// KOKKOS_LAMBDA of N index_t; T defaults to f's result type). Local (building it).
template <class T = void, std::size_t R, class F>
auto fromfunction(const std::array<index_t, R>& shape, const F& f) {
  constexpr int N = static_cast<int>(R);
  using V = std::conditional_t<std::is_void_v<T>, typename impl::result_of_indices<F, N>::type, T>;
  impl::check_shape("spmd::fromfunction", shape);
  return impl::GenExpr<impl::Unpacked<V, F, N>, V, N>{{}, impl::Unpacked<V, F, N>{f}, shape};
}
/// The lazy fromfunction with a braced shape: `spmd::fromfunction({n, m}, f)`. Local.
template <class T = void, std::size_t R, class F>
auto fromfunction(const index_t (&shape)[R], const F& f) {
  return fromfunction<T>(impl::to_index(shape), f);
}
/// A new array of `shape` whose element at global index g is f(g0, ..., gN-1) (NumPy's
/// fromfunction, with f called per element: a KOKKOS_LAMBDA of N index_t). Options: halo,
/// periodic, grid, label. Collective.
template <class T = void, class M = DefaultMemorySpace, std::size_t R, class F, class... Opts,
          impl::if_options<Opts...> = 0>
auto fromfunction(const Comm& comm, const index_t (&shape)[R], const F& f, const Opts&... opts) {
  const auto e = fromfunction<T>(shape, f);
  using V = typename std::decay_t<decltype(e)>::value_type;
  return impl::make_generated<V, M>("spmd::fromfunction", comm, impl::to_index(shape), e, opts...);
}
/// The new-array fromfunction with the shape as a std::array (e.g. another array's shape()).
/// Collective.
template <class T = void, class M = DefaultMemorySpace, std::size_t R, class F, class... Opts,
          impl::if_options<Opts...> = 0>
auto fromfunction(const Comm& comm, const std::array<index_t, R>& shape, const F& f, const Opts&... opts) {
  const auto e = fromfunction<T>(shape, f);
  using V = typename std::decay_t<decltype(e)>::value_type;
  return impl::make_generated<V, M>("spmd::fromfunction", comm, shape, e, opts...);
}

// ---- linspace, eye, identity -----------------------------------------------------------------

/// `num` evenly spaced values over [start, stop] (endpoint true) or [start, stop) (false), as
/// NumPy's linspace computes them (i * step + start in double, the last one stop exactly), in a
/// new 1-D array of T. Collective; num < 0 is an spmd::Error on every rank.
template <class T = double, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 1, M> linspace(const Comm& comm, double start, double stop, index_t num, bool endpoint, const Opts&... opts) {
  if (num < 0) throw Error::replicated(impl::str("spmd::linspace: number of samples, ", num, ", must be non-negative"));
  impl::LinspaceAt<T> at{start, stop, 0.0, stop - start, static_cast<double>(endpoint ? num - 1 : num), -1, 0};
  if (at.div > 0) {
    at.step = at.delta / at.div;
    at.mode = at.step == 0 ? 1 : 0;
  } else {
    at.mode = 2;
  }
  if (endpoint && num > 1) at.last = num - 1;
  const auto e = impl::GenExpr<impl::LinspaceAt<T>, T, 1>{{}, at, Index<1>{num}};
  return impl::make_generated<T, M>("spmd::linspace", comm, Index<1>{num}, e, opts...);
}
/// linspace with the endpoint included (NumPy's default). Collective.
template <class T = double, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 1, M> linspace(const Comm& comm, double start, double stop, index_t num, const Opts&... opts) {
  return linspace<T, M>(comm, start, stop, num, true, opts...);
}

/// An n x m 2-D array with ones on diagonal k (0: the main one, > 0 above, < 0 below) and zeros
/// elsewhere (NumPy's eye), distributed like any new array (options: halo, grid, label, ...).
/// Collective; negative extents are an spmd::Error on every rank.
template <class T = double, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 2, M> eye(const Comm& comm, index_t n, index_t m, index_t k, const Opts&... opts) {
  const Index<2> shape{n, m};
  impl::check_shape("spmd::eye", shape);
  const auto e = impl::GenExpr<impl::EyeAt<T>, T, 2>{{}, impl::EyeAt<T>{k}, shape};
  return impl::make_generated<T, M>("spmd::eye", comm, shape, e, opts...);
}
/// eye(n, m) with ones on the main diagonal. Collective.
template <class T = double, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 2, M> eye(const Comm& comm, index_t n, index_t m, const Opts&... opts) {
  return eye<T, M>(comm, n, m, 0, opts...);
}
/// eye(n): the n x n identity. Collective.
template <class T = double, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 2, M> eye(const Comm& comm, index_t n, const Opts&... opts) {
  return eye<T, M>(comm, n, n, 0, opts...);
}
/// The n x n identity (NumPy's identity). Collective.
template <class T = double, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 2, M> identity(const Comm& comm, index_t n, const Opts&... opts) {
  return eye<T, M>(comm, n, n, 0, opts...);
}

}  // namespace spmd
