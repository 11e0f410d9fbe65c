#pragma once
/// \file axis_reduce.hpp
/// Reductions over some axes (NumPy's `axis=` argument): sum, prod, min, max, mean, var, std,
/// any_of, all_of and count_nonzero of an Array, a slice or an expression, and argmin / argmax
/// along one axis, returning a distributed array of the reduced shape:
///
///   auto col = spmd::sum(a, spmd::axis(0));                  // np.sum(a, axis=0): shape (m,)
///   auto m = spmd::mean(u * u, spmd::axes(0, 2));            // np.mean(u * u, axis=(0, 2))
///   auto k = spmd::max(a, spmd::axis(-1), spmd::keepdims);   // keepdims=True: shape (n, 1)
///   auto i = spmd::argmax(a, spmd::axis(0));                 // np.argmax(a, axis=0): index_t
///
/// All Collective over the operand's communicator. Each rank folds its own block along the
/// reduced axes (one kernel of the kernel layer, no temporary for an expression), then the ranks
/// that share the other grid coordinates combine their partial blocks onto the one at grid
/// coordinate 0 along the reduced axes (MPI_Reduce on a sub-communicator made by MPI_Comm_split
/// for the call); never the whole communicator. The keepdims result is laid out on the
/// operand's process grid (that rank owns the result block: nothing moves along the kept axes);
/// without keepdims the reduced axes are dropped by one move onto an automatic distribution of
/// the smaller shape. Reducing over every axis without keepdims gives the scalar (the
/// whole-array reductions of reduce.hpp, which stay as they are). An operand whose first array
/// operand is a slice is copied first (one move). Axes may count from the end (-1: the last);
/// an axis out of range or named twice is an spmd::Error on every rank, naming the shape, as is
/// min or max over a zero-length axis. Element types as in reduce.hpp: sums of bool count
/// (index_t), means of integers are double; any_of / all_of give bool, count_nonzero index_t.
/// argmin / argmax give index_t global indices along the axis, NumPy's first occurrence (and
/// first NaN), combined across ranks as (value, index) pairs. See docs/api/axis-reduce.md.

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <type_traits>

#include "spmd/impl/axis_reduce_impl.hpp"
#include "spmd/reduce.hpp"

namespace spmd {

/// The axes a reduction folds: spmd::axis(0), spmd::axes(0, 2) (the count is part of the type:
/// it fixes the result's number of axes).
template <int K>
struct Axes {
  std::array<int, K> list;  ///< the axes as given (negative ones count from the end)
};
/// One axis (may be negative: -1 is the last). Local.
inline Axes<1> axis(int a) {
  return Axes<1>{{a}};
}
/// Several axes. Local.
template <class... I, std::enable_if_t<(std::is_integral_v<I> && ...), int> = 0>
Axes<static_cast<int>(sizeof...(I))> axes(I... a) {
  return Axes<static_cast<int>(sizeof...(I))>{{static_cast<int>(a)...}};
}
/// The type of spmd::keepdims.
struct KeepDims {};
/// Keep the reduced axes with extent 1 (NumPy's keepdims=True): pass as the argument after the
/// axes.
inline constexpr KeepDims keepdims{};

namespace impl {
/// One per-axis reduction: rule C over map F into Acc, stored as Out, finished as Mo says.
template <Combine C, Map F, class Acc, class Out, Moment Mo, bool Keep, class Exec, class X, int K>
auto axis_reduction(const Exec& exec, const char* fn, const char* label, const X& x, const Axes<K>& ax,
                    index_t ddof = 0) {
  const auto e = as_node(x);
  using E = std::decay_t<decltype(e)>;
  constexpr int N = E::rank;
  static_assert(K >= 1 && K <= N, "spmd: a per-axis reduction names between 1 and N axes");
  const auto mask = axis_mask<N>(fn, ax.list, e.shape());
  auto keep = reduce_axes_keep<C, F, Acc, Out>(exec, fn, label, e, mask, Mo, ddof);
  if constexpr (Keep)
    return keep;
  else
    return drop_axes<K>(keep, mask);
}
template <class V>
using sum_t = std::conditional_t<std::is_same_v<V, bool>, index_t, V>;
}  // namespace impl

namespace impl {
/// The element types of each reduction over the operand's element type V: the fold's and the
/// result's.
template <class V>
struct AxisTypes {
  using sum = sum_t<V>;        // sum
  using same = V;              // prod, min, max
  using real = floating_t<V>;  // mean (complex for complex V)
};
}  // namespace impl

/// Defines one per-axis reduction `name` (rule C of map F into Acc, stored as Out, finished as
/// Mo says): name(exec, x, axes) and name(exec, x, axes, keepdims), and the same on a default
/// instance of the operand's execution space; over every axis without keepdims the scalar of
/// reduce.hpp (the axes still checked). Undefined after use.
#define SPMD_AXIS_REDUCTION(name, C, F, Acc, Out, Mo)                                                                  \
  template <class Exec, class X, int K, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>                            \
  auto name(const Exec& exec, const X& x, const Axes<K>& ax) {                                                         \
    using V = impl::elem_of<X>;                                                                                        \
    (void)sizeof(V);                                                                                                   \
    static_assert(                                                                                                     \
        !impl::is_complex_v<Acc> || impl::Combine::C == impl::Combine::sum || impl::Combine::C == impl::Combine::prod, \
        "spmd::" #name ": complex numbers have no order; reduce abs(z) or real(z) instead");                           \
    if constexpr (K == impl::node_t<X>::rank) {                                                                        \
      impl::axis_mask<K>("spmd::" #name, ax.list, impl::as_node(x).shape());                                           \
      return name(exec, x);                                                                                            \
    } else {                                                                                                           \
      return impl::axis_reduction<impl::Combine::C, impl::Map::F, Acc, Out, impl::Moment::Mo, false>(                  \
          exec, "spmd::" #name, "spmd::reduce::" #name "_axis", x, ax);                                                \
    }                                                                                                                  \
  }                                                                                                                    \
  template <class Exec, class X, int K, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>                            \
  auto name(const Exec& exec, const X& x, const Axes<K>& ax, KeepDims) {                                               \
    using V = impl::elem_of<X>;                                                                                        \
    (void)sizeof(V);                                                                                                   \
    static_assert(                                                                                                     \
        !impl::is_complex_v<Acc> || impl::Combine::C == impl::Combine::sum || impl::Combine::C == impl::Combine::prod, \
        "spmd::" #name ": complex numbers have no order; reduce abs(z) or real(z) instead");                           \
    return impl::axis_reduction<impl::Combine::C, impl::Map::F, Acc, Out, impl::Moment::Mo, true>(                     \
        exec, "spmd::" #name, "spmd::reduce::" #name "_axis", x, ax);                                                  \
  }                                                                                                                    \
  template <class X, int K, impl::if_reducible<X> = 0>                                                                 \
  auto name(const X& x, const Axes<K>& ax) {                                                                           \
    return name(impl::exec_of<X>(), x, ax);                                                                            \
  }                                                                                                                    \
  template <class X, int K, impl::if_reducible<X> = 0>                                                                 \
  auto name(const X& x, const Axes<K>& ax, KeepDims k) {                                                               \
    return name(impl::exec_of<X>(), x, ax, k);                                                                         \
  }

///@{
/// Sum over the axes `ax` (np.sum(x, axis=ax)): 0 along a zero-length axis; sums of bool count
/// (index_t). With `keepdims` the reduced axes stay with extent 1. On `exec` (an instance of x's
/// execution space) or a default instance. Over every axis without keepdims: the scalar sum.
/// Collective.
SPMD_AXIS_REDUCTION(sum, sum, value, typename impl::AxisTypes<V>::sum, typename impl::AxisTypes<V>::sum, none)
///@}
///@{
/// Product over the axes (np.prod(x, axis=ax)): 1 along a zero-length axis; keepdims, exec and
/// the scalar form as for sum. Collective.
SPMD_AXIS_REDUCTION(prod, prod, value, V, V, none)
///@}
///@{
/// Smallest element over the axes (np.min(x, axis=ax)): NaN for a line holding a NaN (NumPy's
/// rule, impl/select.hpp); a zero-length reduced axis is an spmd::Error on every rank;
/// keepdims, exec and the scalar form as for sum. Collective.
SPMD_AXIS_REDUCTION(min, min, value, V, V, none)
///@}
///@{
/// Largest element over the axes (np.max(x, axis=ax)); as min. Collective.
SPMD_AXIS_REDUCTION(max, max, value, V, V, none)
///@}
///@{
/// Mean over the axes (np.mean(x, axis=ax)): double for integer elements; NaN along a
/// zero-length axis (NumPy's value); keepdims, exec and the scalar form as for sum. Collective.
SPMD_AXIS_REDUCTION(mean, sum, value, typename impl::AxisTypes<V>::real, typename impl::AxisTypes<V>::real, mean)
///@}
///@{
/// Number of nonzero (true) elements over the axes (np.count_nonzero(x, axis=ax)), index_t;
/// keepdims, exec and the scalar form as for sum. Collective.
SPMD_AXIS_REDUCTION(count_nonzero, sum, nonzero, index_t, index_t, none)
///@}
///@{
/// np.any(x, axis=ax): bool, false along a zero-length axis; keepdims, exec and the scalar form
/// as for sum. Collective.
SPMD_AXIS_REDUCTION(any_of, sum, nonzero, index_t, bool, none)
///@}
///@{
/// np.all(x, axis=ax): bool, true along a zero-length axis; keepdims, exec and the scalar form
/// as for sum. Collective.
SPMD_AXIS_REDUCTION(all_of, min, nonzero, int, bool, none)
///@}
#undef SPMD_AXIS_REDUCTION

namespace impl {
/// The variance of complex x over the axes, as NumPy's var: the mean of |x - mean(x)|^2 (real),
/// the sum divided by max(count - ddof, 0). Fused expressions: the mean (per axis with keepdims,
/// broadcast back), then one sum of the squared moduli. Collective.
template <bool Keep, class Exec, class X, int K>
auto complex_var(const Exec& exec, const X& x, const Axes<K>& ax, index_t ddof) {
  using R = real_t<elem_of<X>>;
  const auto e = as_node(x);
  constexpr int N = node_t<X>::rank;
  const auto mask = axis_mask<N>("spmd::var", ax.list, e.shape());
  index_t count = 1;
  for (int d = 0; d < N; ++d)
    if (mask[d]) count *= e.shape()[d];
  const R div = static_cast<R>(var_divisor(count, ddof));
  if constexpr (K == N && !Keep) {
    const auto d = x - spmd::mean(exec, x);
    return spmd::sum(exec, spmd::real(d) * spmd::real(d) + spmd::imag(d) * spmd::imag(d)) / div;
  } else {
    const auto m = spmd::mean(exec, x, ax, keepdims);
    const auto d = x - m;
    const auto sq = spmd::real(d) * spmd::real(d) + spmd::imag(d) * spmd::imag(d);
    auto s = [&] {
      if constexpr (Keep)
        return spmd::sum(exec, sq, ax, keepdims);
      else
        return spmd::sum(exec, sq, ax);
    }();
    s = s / div;
    return s;
  }
}
/// sqrt of complex_var (a scalar, or the array in place). Collective.
template <bool Keep, class Exec, class X, int K>
auto complex_std(const Exec& exec, const X& x, const Axes<K>& ax, index_t ddof) {
  auto v = complex_var<Keep>(exec, x, ax, ddof);
  if constexpr (std::is_floating_point_v<decltype(v)>) {
    return static_cast<decltype(v)>(std::sqrt(v));
  } else {
    v = spmd::sqrt(v);
    return v;
  }
}
}  // namespace impl

///@{
/// Variance over the axes: the mean of (x - its mean)^2 with the sum divided by
/// max(count - ddof, 0) (NumPy's var(x, axis, ddof): inf when ddof >= count, NaN for a zero
/// numerator; NumPy also warns, we do not); two passes, the means shared within each group of ranks
/// (MPI_Allreduce on the sub-communicator), then the squares folded and reduced. Floating result
/// (double for integers). With `keepdims` the reduced axes stay with extent 1. Over every axis
/// without keepdims: the scalar, by the whole-array reductions. Complex x: the mean of
/// |x - mean|^2, real (as NumPy). On `exec` or a default instance. Collective.
template <class Exec, class X, int K, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto var(const Exec& exec, const X& x, const Axes<K>& ax, index_t ddof = 0) {
  using R = impl::real_t<impl::elem_of<X>>;
  if constexpr (impl::is_complex_v<impl::elem_of<X>>) {
    return impl::complex_var<false>(exec, x, ax, ddof);
  } else if constexpr (K == impl::node_t<X>::rank) {
    const auto e = impl::as_node(x);
    impl::axis_mask<K>("spmd::var", ax.list, e.shape());
    const R m = mean(exec, x);
    const auto d = impl::make_unary<impl::UnOp::cast, R>(e) - m;
    return sum(exec, d * d) / static_cast<R>(impl::var_divisor(impl::expr_size(e), ddof));
  } else {
    return impl::axis_reduction<impl::Combine::sum, impl::Map::value, R, R, impl::Moment::var, false>(
        exec, "spmd::var", "spmd::reduce::var_axis", x, ax, ddof);
  }
}
template <class Exec, class X, int K, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto var(const Exec& exec, const X& x, const Axes<K>& ax, KeepDims, index_t ddof = 0) {
  using R = impl::real_t<impl::elem_of<X>>;
  if constexpr (impl::is_complex_v<impl::elem_of<X>>)
    return impl::complex_var<true>(exec, x, ax, ddof);
  else
    return impl::axis_reduction<impl::Combine::sum, impl::Map::value, R, R, impl::Moment::var, true>(
        exec, "spmd::var", "spmd::reduce::var_axis", x, ax, ddof);
}
template <class X, int K, impl::if_reducible<X> = 0>
auto var(const X& x, const Axes<K>& ax, index_t ddof = 0) {
  return var(impl::exec_of<X>(), x, ax, ddof);
}
template <class X, int K, impl::if_reducible<X> = 0>
auto var(const X& x, const Axes<K>& ax, KeepDims k, index_t ddof = 0) {
  return var(impl::exec_of<X>(), x, ax, k, ddof);
}
///@}

///@{
/// Standard deviation over the axes: the square root of var (same passes, same ddof, keepdims
/// and exec forms). Collective.
template <class Exec, class X, int K, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto std(const Exec& exec, const X& x, const Axes<K>& ax, index_t ddof = 0) {
  using R = impl::real_t<impl::elem_of<X>>;
  if constexpr (impl::is_complex_v<impl::elem_of<X>>) {
    return impl::complex_std<false>(exec, x, ax, ddof);
  } else if constexpr (K == impl::node_t<X>::rank) {
    return static_cast<R>(std::sqrt(var(exec, x, ax, ddof)));
  } else {
    return impl::axis_reduction<impl::Combine::sum, impl::Map::value, R, R, impl::Moment::std, false>(
        exec, "spmd::std", "spmd::reduce::std_axis", x, ax, ddof);
  }
}
template <class Exec, class X, int K, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto std(const Exec& exec, const X& x, const Axes<K>& ax, KeepDims, index_t ddof = 0) {
  using R = impl::real_t<impl::elem_of<X>>;
  if constexpr (impl::is_complex_v<impl::elem_of<X>>)
    return impl::complex_std<true>(exec, x, ax, ddof);
  else
    return impl::axis_reduction<impl::Combine::sum, impl::Map::value, R, R, impl::Moment::std, true>(
        exec, "spmd::std", "spmd::reduce::std_axis", x, ax, ddof);
}
template <class X, int K, impl::if_reducible<X> = 0>
auto std(const X& x, const Axes<K>& ax, index_t ddof = 0) {
  return std(impl::exec_of<X>(), x, ax, ddof);
}
template <class X, int K, impl::if_reducible<X> = 0>
auto std(const X& x, const Axes<K>& ax, KeepDims k, index_t ddof = 0) {
  return std(impl::exec_of<X>(), x, ax, k, ddof);
}
///@}

namespace impl {
/// argmin (Less) / argmax along one axis: the keepdims array, or the reduced axis dropped (a
/// 1-D operand then gives the index itself, on every rank).
template <bool Less, bool Keep, class Exec, class X>
auto arg_axis(const Exec& exec, const char* fn, const char* label, const X& x, const Axes<1>& ax) {
  const auto e = as_node(x);
  static_assert(!is_complex_v<typename std::decay_t<decltype(e)>::value_type>,
                "spmd::argmin, spmd::argmax: complex numbers have no order; reduce abs(z) or real(z) instead");
  constexpr int N = std::decay_t<decltype(e)>::rank;
  const auto mask = axis_mask<N>(fn, ax.list, e.shape());
  auto keep = arg_axis_keep<Less>(exec, fn, label, e, mask);
  if constexpr (Keep) {
    return keep;
  } else if constexpr (N == 1) {
    // shape {1}: the index is on rank 0 (it owns index 0)
    index_t v = 0;
    if (keep.owned().size() > 0) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), keep.local_with_halo());
      v = h(keep.halo()[0]);
    }
    return keep.comm().bcast(v, 0);
  } else {
    return drop_axes<1>(keep, mask);
  }
}
}  // namespace impl

///@{
/// Index of the smallest element along one axis (np.argmin(x, axis=a)): an index_t array of the
/// shape without that axis (with `keepdims`, extent 1 there; a 1-D operand without keepdims gives
/// the index itself, on every rank), holding global indices along the axis; the first
/// occurrence among equal values, and the first NaN when there is one (NumPy's rules), across
/// rank boundaries too: each rank folds its block, the ranks along the axis gather their
/// partial (value, index) blocks onto the first of them (MPI_Gather on a sub-communicator),
/// which keeps the best. A zero-length axis, or an axis out of range, is an spmd::Error on
/// every rank. On `exec` or a default instance of x's execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto argmin(const Exec& exec, const X& x, const Axes<1>& ax) {
  SPMD_CHECK_REDUCE_EXEC("spmd::argmin");
  return impl::arg_axis<true, false>(exec, "spmd::argmin", "spmd::reduce::argmin_axis", x, ax);
}
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto argmin(const Exec& exec, const X& x, const Axes<1>& ax, KeepDims) {
  SPMD_CHECK_REDUCE_EXEC("spmd::argmin");
  return impl::arg_axis<true, true>(exec, "spmd::argmin", "spmd::reduce::argmin_axis", x, ax);
}
template <class X, impl::if_reducible<X> = 0>
auto argmin(const X& x, const Axes<1>& ax) {
  return argmin(impl::exec_of<X>(), x, ax);
}
template <class X, impl::if_reducible<X> = 0>
auto argmin(const X& x, const Axes<1>& ax, KeepDims k) {
  return argmin(impl::exec_of<X>(), x, ax, k);
}
///@}

///@{
/// Index of the largest element along one axis (np.argmax(x, axis=a)); as argmin (first
/// occurrence, first NaN). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto argmax(const Exec& exec, const X& x, const Axes<1>& ax) {
  SPMD_CHECK_REDUCE_EXEC("spmd::argmax");
  return impl::arg_axis<false, false>(exec, "spmd::argmax", "spmd::reduce::argmax_axis", x, ax);
}
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto argmax(const Exec& exec, const X& x, const Axes<1>& ax, KeepDims) {
  SPMD_CHECK_REDUCE_EXEC("spmd::argmax");
  return impl::arg_axis<false, true>(exec, "spmd::argmax", "spmd::reduce::argmax_axis", x, ax);
}
template <class X, impl::if_reducible<X> = 0>
auto argmax(const X& x, const Axes<1>& ax) {
  return argmax(impl::exec_of<X>(), x, ax);
}
template <class X, impl::if_reducible<X> = 0>
auto argmax(const X& x, const Axes<1>& ax, KeepDims k) {
  return argmax(impl::exec_of<X>(), x, ax, k);
}
///@}

}  // namespace spmd
