#pragma once
/// \file sort.hpp
/// Sorting a 1-D distributed array (NumPy's sort, argsort, unique):
///
///   auto s = spmd::sort(x);      // np.sort(x, kind="stable"): a new array of x's length
///   auto i = spmd::argsort(x);   // np.argsort(x, kind="stable"): global indices (index_t)
///   auto u = spmd::unique(x);    // np.unique(x): the sorted distinct values
///
/// All Collective over the operand's communicator. A parallel sample sort: each rank sorts its
/// block of (key, global index) pairs, splitters are chosen from a regular sample (p pairs per
/// rank, gathered on every rank), the pairs move to the ranks of their buckets in one exchange
/// on the communication engine, each rank merges the runs it received, and the result is moved
/// onto balanced blocks (x's block sizes; unique: an automatic distribution of its length).
/// Stable: equal keys keep the order of their global indices (the index breaks ties), so
/// argsort(x) is NumPy's `argsort(x, kind="stable")` exactly and sort(x) is its value order.
/// NaNs go last, as in NumPy; unique gives one NaN for all of them (np.unique's default
/// equal_nan=True); -0.0 and 0.0 are equal keys. Keys: arithmetic element types other than
/// bool, and complex ones in NumPy's order: by real part, then imaginary part, with those that
/// have NaN parts last in the classes R + Rj < R + nanj < nan + Rj < nan + nanj (each class by
/// its parts that are numbers; unique gives one for all of them, as NumPy). The local sort and the merge run on the
/// host on every build (Kokkos 3.4 has no comparison sort): on a GPU the block is copied to a host mirror and the
/// result back (see docs/api/sort.md). An operand that is a view or an expression is copied into a new array first.
/// Errors (a null array, host memory exhausted on some rank, a bucket larger than an MPI message) are agreed: the same
/// spmd::Error on every rank.

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "spmd/expr.hpp"
#include "spmd/impl/sort_impl.hpp"

namespace spmd {

/// The keys of `x` in ascending order (NaNs last; stable), as a new 1-D array of x's length laid
/// out in x's balanced blocks, on `exec` (an instance of x's execution space). Collective.
template <class T, class Mem>
Array<T, 1, Mem> sort(const typename Mem::execution_space& exec, const Array<T, 1, Mem>& x) {
  return impl::sort_array<true>(exec, "spmd::sort", "spmd::sort::sort", x);
}
/// The global indices that sort `x` (stable: equal keys in index order; NaNs last), as a new
/// 1-D array of index_t of x's length laid out in x's balanced blocks, on `exec`. Collective.
template <class T, class Mem>
Array<index_t, 1, Mem> argsort(const typename Mem::execution_space& exec, const Array<T, 1, Mem>& x) {
  return impl::sort_array<false>(exec, "spmd::argsort", "spmd::sort::argsort", x);
}
/// The sorted distinct keys of `x` (one NaN for all NaNs, last), as a new 1-D array on an
/// automatic distribution of its length over x's communicator, on `exec`. Collective.
template <class T, class Mem>
Array<T, 1, Mem> unique(const typename Mem::execution_space& exec, const Array<T, 1, Mem>& x) {
  return impl::unique_array(exec, "spmd::unique", x);
}

///@{
/// sort, argsort and unique on a default instance of x's execution space. Collective.
template <class T, class Mem>
Array<T, 1, Mem> sort(const Array<T, 1, Mem>& x) {
  return sort(typename Mem::execution_space(), x);
}
template <class T, class Mem>
Array<index_t, 1, Mem> argsort(const Array<T, 1, Mem>& x) {
  return argsort(typename Mem::execution_space(), x);
}
template <class T, class Mem>
Array<T, 1, Mem> unique(const Array<T, 1, Mem>& x) {
  return unique(typename Mem::execution_space(), x);
}
///@}

///@{
/// sort, argsort and unique of a 1-D view or expression: evaluated into a new array on an
/// automatic distribution of its shape first (spmd::copy), then sorted; argsort's indices are
/// the view's (0 .. size-1). Collective.
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto sort(const E& e) {
  static_assert(E::rank == 1, "spmd::sort: sorts 1-D operands only");
  return sort(spmd::copy(e));
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto argsort(const E& e) {
  static_assert(E::rank == 1, "spmd::argsort: sorts 1-D operands only");
  return argsort(spmd::copy(e));
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto unique(const E& e) {
  static_assert(E::rank == 1, "spmd::unique: takes 1-D operands only");
  return unique(spmd::copy(e));
}
///@}

}  // namespace spmd
