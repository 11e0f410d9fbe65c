#pragma once
/// \file reproducible.hpp
/// Bitwise-reproducible reductions: the policy tag `spmd::reproducible`, given first, selects an
/// exact accumulation for sum, dot, norm2 and mean:
///
///   double s = spmd::sum(spmd::reproducible, x);            // or (spmd::reproducible, exec, x)
///   double d = spmd::dot(spmd::reproducible, exec, a, b);
///   double n = spmd::norm2(spmd::reproducible, x);
///   double m = spmd::mean(spmd::reproducible, x);
///
/// The result is the exact sum of the elements (dot: of the exact products a_i b_i) rounded once,
/// to nearest: the same bits for every number of ranks, every process grid, every number of
/// threads and on CPUs and GPUs alike, and the same bits a serial exact summation gives. norm2 is
/// sqrt of the reproducible dot(x, x), mean the reproducible sum divided by the element count (one
/// more rounding, the same everywhere). Operands are what the fast reductions take (arrays, views,
/// expressions; an expression's elements are computed per element, so they too are the same
/// everywhere) with real or integer elements (converted to double: exact below 2^53); the result
/// is a double.
///
/// Infinities and NaNs: the result is NaN when an element (dot: a product) is NaN or both +inf
/// and -inf occur, else that infinity; a finite exact sum beyond the double range rounds to an
/// infinity. An exact zero is +0. A product that underflows (|a_i b_i| < 2^-969) keeps its
/// rounded value and as much of its error as a double holds (still reproducible).
///
/// How: on host execution spaces each thread adds its values into R. M. Neal's large
/// superaccumulator (one unsigned integer addition per value, to a chunk chosen by the value's
/// sign and exponent) in front of a small fixed-point one (67 int64 chunks covering every
/// double); on devices each work item adds into the small one directly (impl/exact_sum.hpp).
/// Accumulators are joined exactly (a Kokkos reduction), one MPI_Allreduce of int64 chunks
/// combines the ranks, and one correctly rounded conversion gives the double. Cost on a CPU: one
/// integer addition per element for sum, two (plus a fused multiply-add for the product's
/// error) for dot, against one floating-point addition for the fast mode; see
/// docs/reliability.md for the guarantee and how it is tested, docs/performance.md for the
/// overhead. All Collective, like the fast reductions (reduce.hpp).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <type_traits>

#include "spmd/impl/reproducible_impl.hpp"
#include "spmd/reduce.hpp"

namespace spmd {

/// The policy tag of bitwise-reproducible reductions (pass `spmd::reproducible` first).
struct Reproducible {
  /// Made only as `spmd::reproducible` (explicit: `{}` does not select the policy). Local.
  explicit constexpr Reproducible(int) {}
};
/// The policy: `spmd::sum(spmd::reproducible, x)`, `dot`, `norm2`, `mean`.
inline constexpr Reproducible reproducible{0};

///@{
/// The exact sum of all elements of `x` (an array, view or expression of real or integer
/// elements), rounded once to nearest (ties to even): the same bits at any rank count, process
/// grid, thread count and on any device; 0 for an empty operand. On `exec`, or on a default
/// instance of the operand's execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double sum(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::sum(reproducible)");
  return impl::reduce_exact<impl::ExactMap::value>(exec, "spmd::sum(reproducible)", "spmd::reduce::sum_reproducible",
                                                   impl::as_node(x));
}
template <class X, impl::if_reducible<X> = 0>
double sum(Reproducible r, const X& x) {
  return sum(r, impl::exec_of<X>(), x);
}
///@}

///@{
/// The exact sum of the exact products a_i b_i (a, b: arrays, views or expressions of one shape),
/// rounded once to nearest (ties to even); a product below 2^-969 in magnitude keeps its rounded
/// value and as much of its error as a double holds. On `exec`, or on a default instance of a's
/// execution space. Collective.
template <class Exec, class A, class B, impl::if_exec<Exec> = 0, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
double dot(Reproducible, const Exec& exec, const A& a, const B& b) {
  using X = A;
  SPMD_CHECK_REDUCE_EXEC("spmd::dot(reproducible)");
  const char* fn = "spmd::dot(reproducible)";
  return impl::with_product(
      fn, a, b,
      [&](const std::string& error) {
        impl::ExactSums<1> none;
        impl::ExactRule<1>::init(none);
        impl::exact_allreduce(impl::reduction_comm(fn, impl::as_node(a)), none, error);
      },
      [&](const auto& e) {
        return impl::reduce_exact<impl::ExactMap::product>(exec, fn, "spmd::reduce::dot_reproducible", e);
      });
}
template <class A, class B, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
double dot(Reproducible r, const A& a, const B& b) {
  return dot(r, impl::exec_of<A>(), a, b);
}
///@}

///@{
/// sqrt of the reproducible dot(x, x) (one more rounding, the same everywhere). On `exec`, or on
/// a default instance of the operand's execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double norm2(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::norm2(reproducible)");
  return std::sqrt(impl::reduce_exact<impl::ExactMap::square>(exec, "spmd::norm2(reproducible)",
                                                              "spmd::reduce::norm2_reproducible", impl::as_node(x)));
}
template <class X, impl::if_reducible<X> = 0>
double norm2(Reproducible r, const X& x) {
  return norm2(r, impl::exec_of<X>(), x);
}
///@}

///@{
/// The reproducible sum divided by the number of elements (one more rounding, the same
/// everywhere); throws the same spmd::Error on every rank for a zero-size operand. On `exec`, or
/// on a default instance of the operand's execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double mean(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::mean(reproducible)");
  const auto e = impl::as_node(x);
  return impl::reduce_exact<impl::ExactMap::value>(exec, "spmd::mean(reproducible)", "spmd::reduce::mean_reproducible",
                                                   e, true) /
         static_cast<double>(impl::expr_size(e));
}
template <class X, impl::if_reducible<X> = 0>
double mean(Reproducible r, const X& x) {
  return mean(r, impl::exec_of<X>(), x);
}
///@}

}  // namespace spmd
