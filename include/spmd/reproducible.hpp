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
/// How: each thread or work item adds its values into a fixed-point superaccumulator (67 int64
/// chunks covering every double; impl/exact_sum.hpp), accumulators are joined exactly (a Kokkos
/// reduction of that fixed-size struct), one MPI_Allreduce of int64 chunks combines the ranks,
/// and one correctly rounded conversion gives the double. Cost: about 2 integer deposits per
/// element (dot: 2 per product), against one fused multiply-add for the fast mode; see
/// docs/reliability.md for the guarantee and how it is tested, docs/performance.md for the
/// overhead. All Collective, like the fast reductions (reduce.hpp).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <type_traits>

#include "spmd/impl/exact_sum.hpp"
#include "spmd/reduce.hpp"

namespace spmd {

/// The policy tag of bitwise-reproducible reductions (pass `spmd::reproducible` first).
struct Reproducible {
  explicit constexpr Reproducible(int) {}
};
inline constexpr Reproducible reproducible{0};

namespace impl {

/// What an exact reduction adds per element: the value, its square, or the product of the two
/// operands of a binary expression (dot).
enum class ExactMap { value, square, product };

/// The exact fold of one row: body(k, lo, hi, acc) of reduce_box with ExactRule<1>.
template <ExactMap F, class Src, int M, bool Contig>
struct ExactRows {
  Src src;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              ExactSums<1>& acc) const {
    const auto in = src.template row<Contig>(k);
    // In blocks whose deposits fit the accumulator's budget: one check per block, not per value.
    constexpr index_t per = F == ExactMap::value ? 1 : 2;  // deposits per element
    constexpr index_t block = exact_budget / per;
    for (index_t b = lo; b < hi; b += block) {
      const index_t e = hi - b < block ? hi : b + block;
      auto& s = acc.s[0];
      exact_reserve(s, static_cast<int>((e - b) * per));
      for (index_t i = b; i < e; ++i) {
        if constexpr (F == ExactMap::product) {
          exact_deposit_product(s, static_cast<double>(in.a(i)), static_cast<double>(in.b(i)));
        } else if constexpr (F == ExactMap::square) {
          const double x = static_cast<double>(in(i));
          exact_deposit_product(s, x, x);
        } else {
          exact_deposit(s, static_cast<double>(in(i)));
        }
      }
    }
  }
};

/// The exactly summed map F of e's elements, rounded once; the same on every rank. Collective.
/// `nonempty`: a zero-size operand is an error. An argument error met on some ranks only is
/// agreed in the exact all-reduce (exact_allreduce). Collective.
template <ExactMap F, class Exec, class E>
double reduce_exact(const Exec& exec, const char* fn, const char* label, const E& e, bool nonempty = false) {
  static_assert(std::is_arithmetic_v<typename E::value_type>,
                "spmd::reproducible: reproducible reductions take real or integer elements");
  constexpr int M = E::rank;
  const Comm& comm = reduction_comm(fn, e);
  std::string error;
  ExactSums<1> local = local_part<ExactRule<1>>(error, [&] {
    if (nonempty) require_nonempty_expr(fn, e);
    return bind_for_reduction(exec, fn, e, [&](const auto& src, const Box<M>& box, bool contig, const auto&) {
      using Src = std::decay_t<decltype(src)>;
      const auto items = BoxItems<M>::template make<Exec>(box.extents());
      if (contig) return reduce_box<ExactRule<1>>(exec, label, items, ExactRows<F, Src, M, true>{src});
      return reduce_box<ExactRule<1>>(exec, label, items, ExactRows<F, Src, M, false>{src});
    });
  });
  exact_allreduce(comm, local, error);
  return exact_round(local.s[0]);
}

}  // namespace impl

/// The exact sum of all elements, rounded once (0 for an empty operand). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double sum(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::sum(reproducible)");
  return impl::reduce_exact<impl::ExactMap::value>(exec, "spmd::sum(reproducible)", "spmd::reduce::sum_reproducible",
                                                   impl::as_node(x));
}
/// The exact sum of a_i b_i (a, b: arrays, views or expressions of one shape), rounded once.
/// Collective.
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
/// sqrt of the reproducible dot(x, x). Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double norm2(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::norm2(reproducible)");
  return std::sqrt(impl::reduce_exact<impl::ExactMap::square>(exec, "spmd::norm2(reproducible)",
                                                              "spmd::reduce::norm2_reproducible", impl::as_node(x)));
}
/// The reproducible sum divided by the number of elements; throws the same spmd::Error on every
/// rank for a zero-size operand. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double mean(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::mean(reproducible)");
  const auto e = impl::as_node(x);
  return impl::reduce_exact<impl::ExactMap::value>(exec, "spmd::mean(reproducible)", "spmd::reduce::mean_reproducible",
                                                   e, true) /
         static_cast<double>(impl::expr_size(e));
}

// ---- the same on a default instance of the operand's execution space ---------------------------

template <class X, impl::if_reducible<X> = 0>
double sum(Reproducible r, const X& x) {
  return sum(r, impl::exec_of<X>(), x);
}
template <class A, class B, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
double dot(Reproducible r, const A& a, const B& b) {
  return dot(r, impl::exec_of<A>(), a, b);
}
template <class X, impl::if_reducible<X> = 0>
double norm2(Reproducible r, const X& x) {
  return norm2(r, impl::exec_of<X>(), x);
}
template <class X, impl::if_reducible<X> = 0>
double mean(Reproducible r, const X& x) {
  return mean(r, impl::exec_of<X>(), x);
}

}  // namespace spmd
