#pragma once
/// \file shape.hpp
/// Shape functions (NumPy's flip, roll, reshape, ravel, transpose, concatenate, stack, squeeze,
/// expand_dims):
///
///   auto r = spmd::flip(a, spmd::axis(1));               // np.flip(a, axis=1): a view, no copy
///   auto s = spmd::roll(a, 3, spmd::axis(0));            // np.roll(a, 3, axis=0): a new array
///   auto b = spmd::reshape(a, {4, -1});                  // np.reshape(a, (4, -1)): C order
///   auto f = spmd::ravel(a);                             // np.ravel(a): 1-D, C order
///   auto t = spmd::transpose(u, spmd::axes(2, 0, 1));    // np.transpose(u, (2, 0, 1))
///   auto c = spmd::concatenate({a, b}, spmd::axis(0));   // np.concatenate((a, b), axis=0)
///   auto k = spmd::stack(std::tie(a, v), spmd::axis(1)); // np.stack((a, v), axis=1)
///   auto q = spmd::squeeze(w, spmd::axis(0));            // np.squeeze(w, axis=0): a view
///   auto e = spmd::expand_dims(a, spmd::axis(0));        // np.expand_dims(a, 0): a new array
///
/// flip and squeeze are views (selections of the operand's storage, slice.hpp): making them is
/// Local and moves nothing; writing through them writes the array. Every other function returns
/// a new Array, on an automatic distribution of the result's shape over the operand's
/// communicator unless said otherwise (options halo, grid, periodic, label where a function takes
/// them), and is Collective: roll is two slice assignments; transpose is one redistribution
/// (impl::RegionPlan with permuted axes); concatenate, stack and expand_dims are one slice
/// assignment per operand; reshape and ravel are one exchange of C-order runs
/// (impl/reshape_plan.hpp). All messages go through the one communication engine; nothing is
/// gathered to one rank. Bad arguments (an axis out of range, shapes that do not fit) are one
/// spmd::Error on every rank naming the shapes (agreed first for the collective functions, so
/// bad input on one rank only still throws everywhere). See docs/api/shape.md.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/axis_reduce.hpp"
#include "spmd/expr.hpp"
#include "spmd/impl/shape_impl.hpp"
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

///@{
/// A new array holding `x` (an Array or a view) rolled by `shift` along the axis: element i goes
/// to (i + shift) mod n (np.roll(x, shift, axis)), on `exec` or a default instance. Laid out like
/// x when x is an Array (its distribution, its halo zero), else on an automatic distribution.
/// Collective.
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
      copyto(exec, src, x);
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
///@}

// ---- reshape, ravel -------------------------------------------------------------------------

///@{
/// A new array of shape `shape` holding the elements of `x` (an Array or a view) in C order
/// (np.reshape(x, shape)); one entry of `shape` may be -1 (inferred from the size), on `exec`
/// or a default instance. The result is on an automatic distribution of the new shape over x's
/// communicator (options: halo, grid, periodic, label); its halo, if any, is zero. Where the old
/// and new blocks do not line up, each rank receives its new block's elements from the ranks
/// that own them, in one exchange (nothing gathers on one rank). A size that differs, a second
/// -1 or a negative extent is an spmd::Error on every rank naming both shapes. Collective.
template <class Exec, class X, std::size_t R, class... Opts, impl::if_exec_space<Exec> = 0,
          impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto reshape(const Exec& exec, const X& x, const index_t (&shape)[R], const Opts&... opts) {
  return reshape(exec, x, impl::to_index(shape), opts...);
}
template <class Exec, class X, std::size_t R, class... Opts, impl::if_exec_space<Exec> = 0,
          impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto reshape(const Exec& exec, const X& x, const std::array<index_t, R>& shape, const Opts&... opts) {
  constexpr int M = static_cast<int>(R);
  Index<M> s{};
  impl::agree(x.comm(), [&] { s = impl::reshape_shape<impl::rank_of<X>(), M>("spmd::reshape", x.shape(), shape); });
  const Distribution<M> to(x.comm(), s, opts...);
  return impl::reshape_onto(exec, x, to, impl::label_or("spmd::reshape", opts...).name);
}
template <class X, std::size_t R, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto reshape(const X& x, const index_t (&shape)[R], const Opts&... opts) {
  return reshape(typename X::execution_space(), x, impl::to_index(shape), opts...);
}
template <class X, std::size_t R, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto reshape(const X& x, const std::array<index_t, R>& shape, const Opts&... opts) {
  return reshape(typename X::execution_space(), x, shape, opts...);
}
///@}

///@{
/// A new array on the given distribution `to` (its shape must hold x's size; no -1) holding the
/// elements of `x` in C order, on `exec` or a default instance. `to` must live on x's
/// communicator or one with the same ranks. A null `to`, another communicator or another size is
/// an spmd::Error on every rank. Collective.
template <class Exec, class X, int M, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0>
auto reshape(const Exec& exec, const X& x, const Distribution<M>& to) {
  impl::agree(x.comm(), [&] {
    if (to.is_null()) throw Error("spmd::reshape: the destination distribution is null");
    if (to.comm().size() != x.comm().size() || to.comm().rank() != x.comm().rank())
      throw Error(impl::str("spmd::reshape: the destination distribution's communicator (", to.comm().size(),
                            " ranks) does not have the operand's ranks (", x.comm().size(), ")"));
    impl::reshape_shape<impl::rank_of<X>(), M>("spmd::reshape", x.shape(), to.shape());
  });
  return impl::reshape_onto(exec, x, to, "spmd::reshape");
}
template <class X, int M, impl::if_shape_operand<X> = 0>
auto reshape(const X& x, const Distribution<M>& to) {
  return reshape(typename X::execution_space(), x, to);
}
///@}

///@{
/// A new 1-D array of x's elements in C order (np.ravel(x), as a copy): reshape(x, {x.size()}),
/// on `exec` or a default instance; options as reshape's. Collective.
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto ravel(const Exec& exec, const X& x, const Opts&... opts) {
  return reshape(exec, x, Index<1>{x.size()}, opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto ravel(const X& x, const Opts&... opts) {
  return ravel(typename X::execution_space(), x, opts...);
}
///@}

// ---- transpose --------------------------------------------------------------------------------

///@{
/// A new array with the axes of `x` (an Array or a view) permuted: result axis k is x's axis
/// order[k] (np.transpose(x, order); spmd::axes(...) names every axis once, negative counting
/// from the end). Without an order the axes are reversed (np.transpose(x), x.T; for 2-D the
/// matrix transpose). On `exec` or a default instance. The result is on an automatic
/// distribution of the new shape over x's communicator (options: halo, grid, periodic, label);
/// an Array's halo widths are permuted with its axes unless a halo option is given (halos zero).
/// One redistribution (a view is read in place, no temporary). An order that is not a
/// permutation is an spmd::Error on every rank naming the shape. Collective.
template <class Exec, class X, int K, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto transpose(const Exec& exec, const X& x, const Axes<K>& order, const Opts&... opts) {
  static_assert(K == impl::rank_of<X>(), "spmd::transpose: the order names every axis of the operand once");
  return impl::permute_axes(exec, x, order.list, opts...);
}
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto transpose(const Exec& exec, const X& x, const Opts&... opts) {
  constexpr int N = impl::rank_of<X>();
  std::array<int, N> order{};
  for (int k = 0; k < N; ++k) order[k] = N - 1 - k;
  return impl::permute_axes(exec, x, order, opts...);
}
template <class X, int K, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto transpose(const X& x, const Axes<K>& order, const Opts&... opts) {
  return transpose(typename X::execution_space(), x, order, opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto transpose(const X& x, const Opts&... opts) {
  return transpose(typename X::execution_space(), x, opts...);
}
///@}

// ---- concatenate, stack, expand_dims ---------------------------------------------------------

///@{
/// A new array joining the operands along an existing axis (np.concatenate((a, b, ...), axis)):
/// `{a, b}` (operands of one type: Arrays, or views of one type; C++ copies the Arrays of a
/// braced list, locally), a std::vector of them, or `std::tie(a, v, ...)` (Arrays and views
/// mixed, not copied). Every axis but `ax` must agree; same element type. On `exec` or a default
/// instance; the result is on an automatic distribution over the first operand's communicator
/// (options: halo, grid, periodic, label). One slice assignment (one exchange) per operand.
/// Shapes that do not fit or a bad axis are an spmd::Error on every rank naming the shapes and
/// the axis. Collective.
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto concatenate(const Exec& exec, std::initializer_list<X> xs, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_list<0>(exec, "spmd::concatenate", xs.begin(), xs.size(), ax.list[0], opts...);
}
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto concatenate(const Exec& exec, const std::vector<X>& xs, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_list<0>(exec, "spmd::concatenate", xs.data(), xs.size(), ax.list[0], opts...);
}
template <class Exec, class... Xs, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_options<Opts...> = 0>
auto concatenate(const Exec& exec, const std::tuple<Xs...>& xs, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_tuple<0>(exec, "spmd::concatenate", xs, ax.list[0], opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto concatenate(std::initializer_list<X> xs, const Axes<1>& ax, const Opts&... opts) {
  return concatenate(typename X::execution_space(), xs, ax, opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto concatenate(const std::vector<X>& xs, const Axes<1>& ax, const Opts&... opts) {
  return concatenate(typename X::execution_space(), xs, ax, opts...);
}
template <class... Xs, class... Opts, impl::if_options<Opts...> = 0>
auto concatenate(const std::tuple<Xs...>& xs, const Axes<1>& ax, const Opts&... opts) {
  return concatenate(impl::first_exec_t<Xs...>(), xs, ax, opts...);
}
///@}

///@{
/// A new array of one more axis stacking operands of one shape along the new axis `ax`
/// (np.stack((a, b, ...), axis); `ax` in [-(N+1), N]): operands as concatenate's; result shape
/// the operands' with the operand count inserted at `ax`. On `exec` or a default instance; an
/// automatic distribution (options: halo, grid, periodic, label). One slice assignment per
/// operand. Operands of different shapes or a bad axis are an spmd::Error on every rank naming
/// the shapes and the axis. Collective.
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto stack(const Exec& exec, std::initializer_list<X> xs, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_list<1>(exec, "spmd::stack", xs.begin(), xs.size(), ax.list[0], opts...);
}
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto stack(const Exec& exec, const std::vector<X>& xs, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_list<1>(exec, "spmd::stack", xs.data(), xs.size(), ax.list[0], opts...);
}
template <class Exec, class... Xs, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_options<Opts...> = 0>
auto stack(const Exec& exec, const std::tuple<Xs...>& xs, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_tuple<1>(exec, "spmd::stack", xs, ax.list[0], opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto stack(std::initializer_list<X> xs, const Axes<1>& ax, const Opts&... opts) {
  return stack(typename X::execution_space(), xs, ax, opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto stack(const std::vector<X>& xs, const Axes<1>& ax, const Opts&... opts) {
  return stack(typename X::execution_space(), xs, ax, opts...);
}
template <class... Xs, class... Opts, impl::if_options<Opts...> = 0>
auto stack(const std::tuple<Xs...>& xs, const Axes<1>& ax, const Opts&... opts) {
  return stack(impl::first_exec_t<Xs...>(), xs, ax, opts...);
}
///@}

///@{
/// A new array of x's elements with an axis of extent 1 inserted at `ax` (np.expand_dims(x,
/// axis); `ax` in [-(N+1), N]), on `exec` or a default instance; an automatic distribution
/// (options: halo, grid, periodic, label). A new array, not a view: a view cannot have more axes
/// than its array. A bad axis is an spmd::Error on every rank. Collective.
template <class Exec, class X, class... Opts, impl::if_exec_space<Exec> = 0, impl::if_shape_operand<X> = 0,
          impl::if_options<Opts...> = 0>
auto expand_dims(const Exec& exec, const X& x, const Axes<1>& ax, const Opts&... opts) {
  return impl::join_list<1>(exec, "spmd::expand_dims", &x, 1, ax.list[0], opts...);
}
template <class X, class... Opts, impl::if_shape_operand<X> = 0, impl::if_options<Opts...> = 0>
auto expand_dims(const X& x, const Axes<1>& ax, const Opts&... opts) {
  return expand_dims(typename X::execution_space(), x, ax, opts...);
}
///@}

// ---- squeeze ------------------------------------------------------------------------------------

/// A view of `x` (an Array or a view) without the named axes, each of extent 1 (np.squeeze(x,
/// axis)): shares x's storage, moves nothing; writing through it writes x. At least one axis must
/// remain (a 0-d result is not an array here). An axis out of range, named twice, or of another
/// extent than 1 is an spmd::Error (on every rank: shapes are replicated). Local.
template <class X, int K, impl::if_shape_operand<X> = 0>
auto squeeze(const X& x, const Axes<K>& ax) {
  constexpr int N = impl::rank_of<X>();
  static_assert(K < N, "spmd::squeeze: at least one axis must remain");
  const auto mask = impl::axis_mask<N>("spmd::squeeze", ax.list, x.shape());
  for (int k = 0; k < N; ++k)
    if (mask[k] && x.shape()[k] != 1)
      throw Error::replicated(impl::str("spmd::squeeze: cannot squeeze axis ", k, " of shape ",
                                        impl::shape_str(x.shape()), ": its extent is ", x.shape()[k], ", not 1"));
  return impl::squeeze_view<N - K>(x, mask);
}

/// A view of `x` without every axis of extent 1 (np.squeeze(x)); the result's number of axes M
/// is part of its type, so it is named: `spmd::squeeze<1>(x)` for x of shape (1, n, 1). A shape
/// with another number of axes of extent other than 1 is an spmd::Error naming it. Local.
template <int M, class X, impl::if_shape_operand<X> = 0>
auto squeeze(const X& x) {
  constexpr int N = impl::rank_of<X>();
  static_assert(M >= 1 && M <= N, "spmd::squeeze<M>: M must lie in [1, N]");
  std::array<bool, N> mask{};
  int kept = 0;
  for (int k = 0; k < N; ++k) {
    mask[k] = x.shape()[k] == 1;
    if (!mask[k]) ++kept;
  }
  if (kept != M)
    throw Error::replicated(impl::str("spmd::squeeze<", M, ">: shape ", impl::shape_str(x.shape()), " has ", kept,
                                      " axes of extent other than 1, not ", M));
  return impl::squeeze_view<M>(x, mask);
}

}  // namespace spmd
