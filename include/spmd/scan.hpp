#pragma once
/// \file scan.hpp
/// Cumulative sums and products along an axis (NumPy's cumsum, cumprod):
///
///   auto c = spmd::cumsum(a, spmd::axis(1));       // np.cumsum(a, axis=1): a's shape
///   auto p = spmd::cumprod(x);                     // 1-D: np.cumprod(x)
///   auto s = spmd::cumsum(u * dx, spmd::axis(0));  // of an expression (no temporary)
///
/// Collective over the operand's communicator. The result is a new array of the operand's shape
/// laid out on its first array operand's process grid (the operand is evaluated into it: a
/// whole-array operand is read in place, a slice moved). Each rank scans the lines of its block
/// along the axis (one kernel), the ranks along the axis exchange their lines' totals by an
/// exclusive scan (MPI_Exscan on the sub-communicator of the ranks that share the other grid
/// coordinates), and each adds (multiplies by) its offset (a second kernel). At one rank, or
/// when the axis is not cut, the sums are NumPy's sequential ones bit for bit; across ranks a
/// block's values are (offset + local partial sums): equal to roundoff. Element types follow
/// NumPy: bool and integers narrower than 64 bits accumulate in index_t. Without an axis an N-d
/// operand is flattened in C order first (spmd::ravel, one exchange), as NumPy does. A bad axis
/// is an spmd::Error on every rank, naming the shape. See docs/api/scan.md.

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "spmd/axis_reduce.hpp"
#include "spmd/impl/scan_impl.hpp"
#include "spmd/shape.hpp"

namespace spmd {

/// Cumulative sum along one axis, on `exec`. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto cumsum(const Exec& exec, const X& x, const Axes<1>& ax) {
  SPMD_CHECK_REDUCE_EXEC("spmd::cumsum");
  return impl::scan_axis<false>(exec, "spmd::cumsum", impl::as_node(x), ax.list[0]);
}
/// Cumulative product along one axis, on `exec`. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto cumprod(const Exec& exec, const X& x, const Axes<1>& ax) {
  SPMD_CHECK_REDUCE_EXEC("spmd::cumprod");
  return impl::scan_axis<true>(exec, "spmd::cumprod", impl::as_node(x), ax.list[0]);
}
namespace impl {
/// x flattened in C order for a scan without an axis: x itself when 1-D, else ravel(x) (an
/// expression is evaluated into an array first). Collective.
template <class Exec, class X>
decltype(auto) flat_operand(const Exec& exec, const X& x) {
  if constexpr (node_t<X>::rank == 1)
    return (x);
  else if constexpr (is_array<X>::value || is_view<X>::value)
    return ravel(exec, x);
  else
    return ravel(exec, spmd::copy(x));
}
}  // namespace impl
/// The cumulative sum / product of the operand's elements in C order (np.cumsum(x)): of a 1-D
/// operand along its axis; of an N-d one, of ravel(x) (one reshape exchange first; an expression
/// is evaluated into an array first). A 1-D result. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto cumsum(const Exec& exec, const X& x) {
  return cumsum(exec, impl::flat_operand(exec, x), axis(0));
}
/// The cumulative product of the operand's elements in C order (np.cumprod(x)), on `exec`, as
/// cumsum. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto cumprod(const Exec& exec, const X& x) {
  return cumprod(exec, impl::flat_operand(exec, x), axis(0));
}
/// Cumulative sum along one axis, on the operand's execution space. Collective.
template <class X, impl::if_reducible<X> = 0>
auto cumsum(const X& x, const Axes<1>& ax) {
  return cumsum(impl::exec_of<X>(), x, ax);
}
/// Cumulative product along one axis, on the operand's execution space. Collective.
template <class X, impl::if_reducible<X> = 0>
auto cumprod(const X& x, const Axes<1>& ax) {
  return cumprod(impl::exec_of<X>(), x, ax);
}
/// The cumulative sum of the operand's elements in C order, on its execution space. Collective.
template <class X, impl::if_reducible<X> = 0>
auto cumsum(const X& x) {
  return cumsum(impl::exec_of<X>(), x);
}
/// The cumulative product of the operand's elements in C order, on its execution space.
/// Collective.
template <class X, impl::if_reducible<X> = 0>
auto cumprod(const X& x) {
  return cumprod(impl::exec_of<X>(), x);
}

}  // namespace spmd
