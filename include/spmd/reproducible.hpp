#pragma once
/// \file reproducible.hpp
/// Bitwise-reproducible reductions: the policy tag `spmd::reproducible`, given first, selects an
/// exact accumulation for sum, dot, vdot, norm2 and mean:
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
/// everywhere) with real or integer elements (converted to double: exact below 2^53; the result
/// is a double) or complex elements (each part summed exactly: a Kokkos::complex<double>).
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
/// The policy: `spmd::sum(spmd::reproducible, x)`, `dot`, `vdot`, `norm2`, `mean`.
inline constexpr Reproducible reproducible{0};

namespace impl {
/// Whether the operand's elements are complex.
template <class X>
inline constexpr bool complex_operand_v = is_complex_v<elem_of<X>>;

/// The reproducible sum of a complex operand: the real and the imaginary parts each summed
/// exactly and rounded once (two passes over the operand, one MPI_Allreduce). Collective.
template <class Exec, class X>
Kokkos::complex<double> sum_exact_complex(const Exec& exec, const char* fn, const char* label, const X& x,
                                          bool nonempty) {
  const auto r = exact_sums<2>(reduction_comm(fn, as_node(x)), [&](ExactSums<2>& s, std::string& error) {
    exact_fold<ExactMap::value>(s.s[0], error, exec, fn, label, as_node(spmd::real(x)), nonempty);
    exact_fold<ExactMap::value>(s.s[1], error, exec, fn, label, as_node(spmd::imag(x)), nonempty);
  });
  return {r[0], r[1]};
}
}  // namespace impl

///@{
/// The exact sum of all elements of `x` (an array, view or expression of real, integer or complex
/// elements), rounded once to nearest (ties to even): the same bits at any rank count, process
/// grid, thread count and on any device; 0 for an empty operand. A double, or for complex
/// elements a Kokkos::complex<double> whose real and imaginary parts are each the exact sum of
/// the elements' parts rounded once (two passes over the operand). On `exec`, or on a default
/// instance of the operand's execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto sum(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::sum(reproducible)");
  const char* fn = "spmd::sum(reproducible)";
  if constexpr (impl::complex_operand_v<X>)
    return impl::sum_exact_complex(exec, fn, "spmd::reduce::sum_reproducible", x, false);
  else
    return impl::reduce_exact<impl::ExactMap::value>(exec, fn, "spmd::reduce::sum_reproducible", impl::as_node(x));
}
template <class X, impl::if_reducible<X> = 0>
auto sum(Reproducible r, const X& x) {
  return sum(r, impl::exec_of<X>(), x);
}
///@}

///@{
/// The exact sum of the exact products a_i b_i (a, b: arrays, views or expressions of one shape),
/// rounded once to nearest (ties to even); a product below 2^-969 in magnitude keeps its rounded
/// value and as much of its error as a double holds. Complex operands (either or both) are not
/// conjugated, as np.dot (see vdot): the real part is the exact sum of the exact products
/// re(a) re(b) and -im(a) im(b), the imaginary part of re(a) im(b) and im(a) re(b), each rounded
/// once (four passes over the operands; a Kokkos::complex<double>). On `exec`, or on a default
/// instance of a's execution space. Collective.
template <class Exec, class A, class B, impl::if_exec<Exec> = 0, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto dot(Reproducible, const Exec& exec, const A& a, const B& b) {
  using X = A;
  SPMD_CHECK_REDUCE_EXEC("spmd::dot(reproducible)");
  const char* fn = "spmd::dot(reproducible)";
  const char* label = "spmd::reduce::dot_reproducible";
  constexpr bool cplx = impl::complex_operand_v<A> || impl::complex_operand_v<B>;
  constexpr int K = cplx ? 2 : 1;
  const auto na = impl::as_node(a);  // the node whose array's communicator the folds combine over
  const auto comm = [&]() -> const Comm& { return impl::reduction_comm(fn, na); };
  return impl::with_product(
      fn, a, b,
      [&](const std::string& error) {  // the same MPI_Allreduce as the folds', with the error
        impl::ExactSums<K> none;
        impl::ExactRule<K>::init(none);
        impl::exact_allreduce(comm(), none, error);
      },
      [&](const auto& e) {
        if constexpr (cplx) {
          const auto r = impl::exact_sums<2>(comm(), [&](impl::ExactSums<2>& s, std::string& error) {
            using impl::ExactMap, impl::as_node, impl::exact_fold;
            exact_fold<ExactMap::product>(s.s[0], error, exec, fn, label, as_node(spmd::real(a) * spmd::real(b)));
            exact_fold<ExactMap::product>(s.s[0], error, exec, fn, label, as_node(-spmd::imag(a) * spmd::imag(b)));
            exact_fold<ExactMap::product>(s.s[1], error, exec, fn, label, as_node(spmd::real(a) * spmd::imag(b)));
            exact_fold<ExactMap::product>(s.s[1], error, exec, fn, label, as_node(spmd::imag(a) * spmd::real(b)));
          });
          (void)e;
          return Kokkos::complex<double>(r[0], r[1]);
        } else {
          return impl::reduce_exact<impl::ExactMap::product>(exec, fn, label, e);
        }
      });
}
template <class A, class B, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto dot(Reproducible r, const A& a, const B& b) {
  return dot(r, impl::exec_of<A>(), a, b);
}
///@}

///@{
/// The reproducible dot of conj(a) and b (np.vdot: the first operand conjugated; dot for real
/// operands). On `exec`, or on a default instance of a's execution space. Collective.
template <class Exec, class A, class B, impl::if_exec<Exec> = 0, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto vdot(Reproducible r, const Exec& exec, const A& a, const B& b) {
  if constexpr (impl::complex_operand_v<A>)
    return dot(r, exec, conj(a), b);
  else
    return dot(r, exec, a, b);
}
template <class A, class B, impl::if_reducible<A> = 0, impl::if_reducible<B> = 0>
auto vdot(Reproducible r, const A& a, const B& b) {
  return vdot(r, impl::exec_of<A>(), a, b);
}
///@}

///@{
/// sqrt of the reproducible dot(x, x), for complex x of the exact sum of re^2 + im^2 (one more
/// rounding, the same everywhere); a double. On `exec`, or on a default instance of the operand's
/// execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
double norm2(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::norm2(reproducible)");
  const char* fn = "spmd::norm2(reproducible)";
  const char* label = "spmd::reduce::norm2_reproducible";
  if constexpr (impl::complex_operand_v<X>) {
    return std::sqrt(
        impl::exact_sums<1>(impl::reduction_comm(fn, impl::as_node(x)), [&](impl::ExactSums<1>& s, std::string& error) {
          using impl::ExactMap, impl::as_node, impl::exact_fold;
          exact_fold<ExactMap::square>(s.s[0], error, exec, fn, label, as_node(spmd::real(x)));
          exact_fold<ExactMap::square>(s.s[0], error, exec, fn, label, as_node(spmd::imag(x)));
        })[0]);
  } else {
    return std::sqrt(impl::reduce_exact<impl::ExactMap::square>(exec, fn, label, impl::as_node(x)));
  }
}
template <class X, impl::if_reducible<X> = 0>
double norm2(Reproducible r, const X& x) {
  return norm2(r, impl::exec_of<X>(), x);
}
///@}

///@{
/// The reproducible sum divided by the number of elements (one more rounding, the same
/// everywhere; complex: each part); throws the same spmd::Error on every rank for a zero-size
/// operand. On `exec`, or on a default instance of the operand's execution space. Collective.
template <class Exec, class X, impl::if_exec<Exec> = 0, impl::if_reducible<X> = 0>
auto mean(Reproducible, const Exec& exec, const X& x) {
  SPMD_CHECK_REDUCE_EXEC("spmd::mean(reproducible)");
  const char* fn = "spmd::mean(reproducible)";
  const char* label = "spmd::reduce::mean_reproducible";
  const auto e = impl::as_node(x);
  const double n = static_cast<double>(impl::expr_size(e));
  if constexpr (impl::complex_operand_v<X>) {
    const Kokkos::complex<double> s = impl::sum_exact_complex(exec, fn, label, x, true);
    return Kokkos::complex<double>(s.real() / n, s.imag() / n);
  } else {
    return impl::reduce_exact<impl::ExactMap::value>(exec, fn, label, e, true) / n;
  }
}
template <class X, impl::if_reducible<X> = 0>
auto mean(Reproducible r, const X& x) {
  return mean(r, impl::exec_of<X>(), x);
}
///@}

}  // namespace spmd
