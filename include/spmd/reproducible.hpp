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

#include "spmd/impl/exact_sum.hpp"
#include "spmd/reduce.hpp"

namespace spmd {

/// The policy tag of bitwise-reproducible reductions (pass `spmd::reproducible` first).
struct Reproducible {
  /// Made only as `spmd::reproducible` (explicit: `{}` does not select the policy). Local.
  explicit constexpr Reproducible(int) {}
};
/// The policy: `spmd::sum(spmd::reproducible, x)`, `dot`, `norm2`, `mean`.
inline constexpr Reproducible reproducible{0};

namespace impl {

/// What an exact reduction adds per element: the value, its square, or the product of the two
/// operands of a binary expression (dot).
enum class ExactMap { value, square, product };

/// The exact fold of one row: body(k, lo, hi, acc) of reduce_box with ExactRule<1> (devices,
/// and hosts in the GPU's item form) or ExactHostRule (host spaces).
template <ExactMap F, class Src, int M, bool Contig>
struct ExactRows {
  Src src;
  /// The small accumulator (every space).
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              ExactSums<1>& acc) const {
    const auto in = row_at<Contig>(src, k);
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
  /// The large accumulator (host spaces only; see impl/exact_sum.hpp).
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              ExactHostSum& acc) const {
#if !defined(__CUDA_ARCH__)
    const auto in = row_at<Contig>(src, k);
    if constexpr (F == ExactMap::value) {
      for (index_t i = lo; i < hi; ++i) exact_large_add(acc, static_cast<double>(in(i)));
    } else {
#if defined(SPMD_IMPL_EXACT_FMA_CLONE)
      if (exact_host_fma())
        products_fma(in, lo, hi, acc);
      else
#endif
        products(in, lo, hi, acc);
    }
    if (exact_large_specials(acc))  // NaNs or infinities: count them as the small accumulator does
      for (index_t i = lo; i < hi; ++i) exact_count_special(acc.small, element(in, i));
#else
    (void)k, (void)lo, (void)hi, (void)acc;
#endif
  }

 private:
  /// The value F adds for element i (for products: the rounded product). Local.
  template <class In>
  KOKKOS_FORCEINLINE_FUNCTION static double element(const In& in, const index_t i) {
    if constexpr (F == ExactMap::product) {
      return static_cast<double>(in.a(i)) * static_cast<double>(in.b(i));
    } else if constexpr (F == ExactMap::square) {
      const double x = static_cast<double>(in(i));
      return x * x;
    } else {
      return static_cast<double>(in(i));
    }
  }
  /// Each product as p + e into the large accumulator, in blocks: first the block's p and e
  /// (a short streaming loop that keeps many loads of the operands in flight, as the fast dot
  /// does), then their deposits from that local buffer (a loop of integer work on cached data).
  /// Interleaved in one loop, the deposits' instructions fill the CPU's window and the operand
  /// loads wait on memory (measured: about twice as slow). A non-finite p makes e non-finite
  /// too: both only mark the 0x7ff chunks (the row's specials are then counted from p alone, as
  /// exact_deposit_product does).
  template <class In>
  KOKKOS_FORCEINLINE_FUNCTION static void products(const In& in, const index_t lo, const index_t hi,
                                                   ExactHostSum& acc) {
    constexpr index_t block = 64;  // measured: 64 better than 128, 256 or 1024 (buffers in L1)
    double pe[2 * block];
    for (index_t b0 = lo; b0 < hi; b0 += block) {
      const int n = static_cast<int>(hi - b0 < block ? hi - b0 : block);
      for (int k = 0; k < n; ++k) {
        double a, b;
        if constexpr (F == ExactMap::product) {
          a = static_cast<double>(in.a(b0 + k));
          b = static_cast<double>(in.b(b0 + k));
        } else {
          a = b = static_cast<double>(in(b0 + k));
        }
        const double p = a * b;
        pe[k] = p;
        pe[block + k] = exact_product_error(a, b, p);
      }
      // the chunks and mantissas of the block's values (a loop the compiler vectorises), then
      // one addition each
      std::uint64_t chunk[2 * block], mant[2 * block];
      for (int k = 0; k < n; ++k) exact_large_split(pe[k], chunk[k], mant[k]);
      for (int k = block; k < block + n; ++k) exact_large_split(pe[k], chunk[k], mant[k]);
      for (int k = 0; k < n; ++k) {
        exact_large_chunk_add(acc, static_cast<int>(chunk[k]), mant[k]);
        exact_large_chunk_add(acc, static_cast<int>(chunk[block + k]), mant[block + k]);
      }
    }
  }
#if defined(SPMD_IMPL_EXACT_FMA_CLONE)
  /// products() compiled for CPUs with FMA (see impl/exact_sum.hpp). Host only.
  template <class In>
  SPMD_IMPL_EXACT_FMA_TARGET static void products_fma(const In& in, const index_t lo, const index_t hi,
                                                      ExactHostSum& acc) {
    products(in, lo, hi, acc);
  }
#endif
};

/// Whether Exec runs on the host (its exact reductions then use the large accumulator).
template <class Exec>
constexpr bool exact_on_host() {
  return Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible;
}

/// The exactly summed map F of e's elements, rounded once; the same on every rank. Collective.
/// `nonempty`: a zero-size operand is an error. An argument error met on some ranks only is
/// agreed in the exact all-reduce (exact_allreduce). Host spaces fold into large accumulators
/// (ExactHostRule), devices and the GPU's item form (impl::Forms::point_items) into small
/// ones (ExactRule): the same exact integers either way. Collective.
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
      auto fold = [&](auto rule) {
        using Rule = decltype(rule);
        if (contig) return reduce_box<Rule>(exec, label, items, ExactRows<F, Src, M, true>{src});
        return reduce_box<Rule>(exec, label, items, ExactRows<F, Src, M, false>{src});
      };
      if constexpr (exact_on_host<Exec>()) {
        if (!forms<typename Exec::memory_space>().point_items) {
          ExactSums<1> s;
          s.s[0] = exact_large_finish(fold(ExactHostRule{}));
          return s;
        }
      }
      return fold(ExactRule<1>{});
    });
  });
  exact_allreduce(comm, local, error);
  return exact_round(local.s[0]);
}

}  // namespace impl

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
