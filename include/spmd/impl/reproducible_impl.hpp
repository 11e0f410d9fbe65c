#pragma once
// Bitwise-reproducible reductions, implementation (reproducible.hpp checks and dispatches): each
// rank folds its elements into an exact accumulator (impl/exact_sum.hpp) on the kernel layer, the
// ranks combine the accumulators exactly, and the result is rounded once.

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <string>
#include <type_traits>

#include "spmd/impl/exact_sum.hpp"
#include "spmd/impl/expr_eval.hpp"
#include "spmd/impl/forms.hpp"
#include "spmd/impl/kernels.hpp"

namespace spmd::impl {

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

/// This rank's exact fold of map F of e's elements, added into `acc` (exactly). An argument error
/// met here (`nonempty`: a zero-size operand is one) leaves acc as it was and is kept in `error`
/// (the first one), to be agreed in exact_allreduce. Host spaces fold into large accumulators
/// (ExactHostRule), devices and the GPU's item form (impl::Forms::point_items) into small ones
/// (ExactRule): the same exact integers either way. Local.
template <ExactMap F, class Exec, class E>
void exact_fold(ExactSum& acc, std::string& error, const Exec& exec, const char* fn, const char* label, const E& e,
                bool nonempty = false) {
  static_assert(std::is_arithmetic_v<typename E::value_type>,
                "spmd::reproducible: reproducible reductions take real, integer or complex elements");
  constexpr int M = E::rank;
  std::string mine;
  const ExactSums<1> local = local_part<ExactRule<1>>(mine, [&] {
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
  if (!mine.empty() && error.empty()) error = mine;
  exact_join(acc, local.s[0]);
}

/// K exact sums, each the exact folds that `folds(sums, error)` adds into sums.s[k], combined
/// over the ranks of `comm` (one MPI_Allreduce; an error met on some ranks is agreed there) and
/// rounded once each: the same bits on every rank. Collective.
template <int K, class Folds>
std::array<double, K> exact_sums(const Comm& comm, const Folds& folds) {
  ExactSums<K> sums;
  ExactRule<K>::init(sums);
  std::string error;
  folds(sums, error);
  exact_allreduce(comm, sums, error);
  std::array<double, K> r{};
  for (int k = 0; k < K; ++k) r[k] = exact_round(sums.s[k]);
  return r;
}

/// The exactly summed map F of e's elements, rounded once; the same on every rank. Collective.
template <ExactMap F, class Exec, class E>
double reduce_exact(const Exec& exec, const char* fn, const char* label, const E& e, bool nonempty = false) {
  return exact_sums<1>(reduction_comm(fn, e), [&](ExactSums<1>& s, std::string& error) {
    exact_fold<F>(s.s[0], error, exec, fn, label, e, nonempty);
  })[0];
}

}  // namespace spmd::impl
