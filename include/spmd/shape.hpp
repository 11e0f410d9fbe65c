#pragma once
/// \file shape.hpp
/// Shape functions (NumPy's flip and roll so far):
///
///   auto r = spmd::flip(a, spmd::axis(1));               // np.flip(a, axis=1): a view, no copy
///   auto s = spmd::roll(a, 3, spmd::axis(0));            // np.roll(a, 3, axis=0): a new array
///
/// flip is a view (a slice with step -1 along the axis, slice.hpp): making it is Local and moves
/// nothing; writing through it writes the array. roll returns a new array laid out like the
/// operand (an Array's distribution, halo included; a view's on an automatic one): two slice
/// assignments, each one move of the wrapped part. Collective. A bad axis is an spmd::Error on
/// every rank naming the shape. See docs/api/shape.md.

#include <Kokkos_Core.hpp>

#include <array>
#include <utility>
#include <vector>

#include "spmd/axis_reduce.hpp"
#include "spmd/expr.hpp"
#include "spmd/slice.hpp"

namespace spmd {

namespace impl {
template <class V, std::size_t... D>
auto flip_view(const V& v, int axis, std::index_sequence<D...>) {
  return v(slice(none, none, static_cast<int>(D) == axis ? -1 : 1)...);
}
/// v with slice [a, b) along `axis` and all of every other axis.
template <class V, std::size_t... D>
auto axis_slice(const V& v, int axis, index_t a, index_t b, std::index_sequence<D...>) {
  return v((static_cast<int>(D) == axis ? slice(a, b) : slice(none, none, 1))...);
}
template <class X>
constexpr int rank_of() {
  return std::decay_t<X>::rank;
}
}  // namespace impl

/// The elements of `x` (an Array or a view) in reverse order along the axis: a view of the same
/// storage (np.flip(x, axis)). Local.
template <class X, std::enable_if_t<impl::is_array<X>::value || impl::is_view<X>::value, int> = 0>
auto flip(const X& x, const Axes<1>& ax) {
  constexpr int N = impl::rank_of<X>();
  const auto mask = impl::axis_mask<N>("spmd::flip", ax.list, x.shape());
  int axis = 0;
  for (int a = 0; a < N; ++a)
    if (mask[a]) axis = a;
  return impl::flip_view(x, axis, std::make_index_sequence<N>{});
}

/// A new array holding `x` (an Array or a view) rolled by `shift` along the axis: element i goes
/// to (i + shift) mod n (np.roll(x, shift, axis)), on `exec`. Laid out like x when x is an Array
/// (its distribution, its halo zero), else on an automatic distribution. Collective.
template <class Exec, class X, std::enable_if_t<Kokkos::is_execution_space<Exec>::value, int> = 0,
          std::enable_if_t<impl::is_array<X>::value || impl::is_view<X>::value, int> = 0>
auto roll(const Exec& exec, const X& x, index_t shift, const Axes<1>& ax) {
  constexpr int N = impl::rank_of<X>();
  using T = typename X::value_type;
  using Mem = typename X::memory_space;
  const auto mask = impl::axis_mask<N>("spmd::roll", ax.list, x.shape());
  int axis = 0;
  for (int a = 0; a < N; ++a)
    if (mask[a]) axis = a;
  const index_t n = x.shape()[axis];
  const index_t k = n > 0 ? ((shift % n) + n) % n : 0;
  const auto seq = std::make_index_sequence<N>{};
  Array<T, N, Mem> out;
  // out[k:] = src[:n-k], out[:k] = src[n-k:]. src has no halo, so both operands are moved (a
  // shifted operand of an array with a halo would be read through that halo).
  auto run = [&](const Array<T, N, Mem>& src) {
    assign(exec, impl::axis_slice(out, axis, k, n, seq), impl::axis_slice(src, axis, 0, n - k, seq));
    if (k > 0) assign(exec, impl::axis_slice(out, axis, 0, k, seq), impl::axis_slice(src, axis, n - k, n, seq));
  };
  if constexpr (impl::is_array<X>::value) {
    out = Array<T, N, Mem>(x.distribution(), Label{"spmd::roll"}, Init::zero);
    bool halo = false;
    for (int a = 0; a < N; ++a) halo = halo || x.halo()[a] > 0;
    if (!halo) {
      run(x);
    } else {
      const auto& d = x.distribution();
      Array<T, N, Mem> src(
          Distribution<N>(d.comm(), d.shape(), ProcessGrid{std::vector<int>(d.dims().begin(), d.dims().end())}),
          Label{"spmd::roll::source"}, Init::none);
      copy(exec, src, x);
      run(src);
    }
  } else {
    const auto src = spmd::copy(x);  // a view: its elements on an automatic distribution
    out = Array<T, N, Mem>(src.distribution(), Label{"spmd::roll"}, Init::none);
    run(src);
  }
  return out;
}
template <class X, std::enable_if_t<impl::is_array<X>::value || impl::is_view<X>::value, int> = 0>
auto roll(const X& x, index_t shift, const Axes<1>& ax) {
  return roll(typename X::execution_space(), x, shift, ax);
}

}  // namespace spmd
