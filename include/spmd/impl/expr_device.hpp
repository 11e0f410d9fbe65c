#pragma once
// Expressions, device side: the tree an expression is bound into for a kernel (plain aggregates
// of raw pointers and address steps, copied into the kernel; every node compiles for CUDA), and
// the bodies the kernel layer (impl/kernels.hpp) runs: assignment rows, reduction rows, and the
// lagged in-place assignment of host spaces.

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

#include "spmd/impl/kernels.hpp"
#include "spmd/types.hpp"

namespace spmd::impl {

/// One row of an operand (P = const T*) or of the destination (P = T*): element i is p[i * c]
/// (p[i] when Contig).
template <class P, bool Contig>
struct RowAccess {
  P p;
  index_t c;
  KOKKOS_FORCEINLINE_FUNCTION std::remove_pointer_t<P>& operator()(const index_t i) const {
    if constexpr (Contig)
      return p[i];
    else
      return p[i * c];
  }
};

/// An array operand (P = const T*) or the destination (P = T*) on this rank: the element at
/// local point k (0-based in the box J) is p[sum_d coef[d] * k[d]].
template <class P, int M>
struct BlockAccess {
  P p;
  Kokkos::Array<index_t, M> coef;
  template <bool Contig>
  KOKKOS_FORCEINLINE_FUNCTION RowAccess<P, Contig> row(const Kokkos::Array<index_t, M>& k) const {
    index_t off = 0;
    for (int d = 0; d < M - 1; ++d) off += coef[d] * k[d];
    return RowAccess<P, Contig>{p + off, coef[M - 1]};
  }
};
template <class T, int M>
using TermDev = BlockAccess<const T*, M>;
template <class T, int M>
using DstDev = BlockAccess<T*, M>;

template <class S>
struct ScalarDev {
  S v;
  template <bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION ScalarDev row(const K&) const {
    return *this;
  }
  KOKKOS_FORCEINLINE_FUNCTION S operator()(const index_t) const { return v; }
};

template <class Op, class A>
struct UnaryDev {
  A a;
  template <bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto row(const K& k) const {
    using Row = decltype(a.template row<Contig>(k));
    return UnaryDev<Op, Row>{a.template row<Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION typename Op::result operator()(const index_t i) const { return Op::apply(a(i)); }
};

template <class Op, class A, class B>
struct BinaryDev {
  A a;
  B b;
  template <bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto row(const K& k) const {
    using RA = decltype(a.template row<Contig>(k));
    using RB = decltype(b.template row<Contig>(k));
    return BinaryDev<Op, RA, RB>{a.template row<Contig>(k), b.template row<Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION typename Op::result operator()(const index_t i) const { return Op::apply(a(i), b(i)); }
};

template <class R, class C, class A, class B>
struct WhereDev {
  C c;
  A a;
  B b;
  template <bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto row(const K& k) const {
    using RC = decltype(c.template row<Contig>(k));
    using RA = decltype(a.template row<Contig>(k));
    using RB = decltype(b.template row<Contig>(k));
    return WhereDev<R, RC, RA, RB>{c.template row<Contig>(k), a.template row<Contig>(k), b.template row<Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION R operator()(const index_t i) const {
    const R x = static_cast<R>(a(i));  // both sides evaluated, as NumPy does (and branch-free)
    const R y = static_cast<R>(b(i));
    return c(i) ? x : y;
  }
};

/// Knobs for tests, so that CPU builds cover the paths a GPU takes: one work item per point
/// (the device form) instead of per row, the buffered in-place update instead of the lagged one,
/// a fixed number of lagged bands (band edges covered with one thread). Local.

template <class F, class A>
struct MapDev {
  F f;
  A a;
  template <bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto row(const K& k) const {
    using Row = decltype(a.template row<Contig>(k));
    return MapDev<F, Row>{f, a.template row<Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION auto operator()(const index_t i) const { return f(a(i)); }
};

/// A generator (GenExpr, N axes) on this rank, in an expression of M >= N axes: the value at
/// local point k is f(origin + keep * k'), k' the last N axes of k (a generator's axes align with
/// the expression's last ones), origin the generator index of the box's first point, and keep 0
/// along a generator axis of extent 1 (broadcast: index 0 throughout), 1 otherwise.
template <class F, int N, int M>
struct GenDev {
  F f;
  Kokkos::Array<index_t, N> origin;
  Kokkos::Array<index_t, N> keep;
  template <bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION GenDev row(const K& k) const {
    GenDev r{f, origin, keep};
    for (int i = 0; i < N - 1; ++i) r.origin[i] += keep[i] * k[M - N + i];
    return r;
  }
  KOKKOS_FORCEINLINE_FUNCTION auto operator()(const index_t i) const {
    Kokkos::Array<index_t, N> g = origin;
    g[N - 1] += keep[N - 1] * i;
    return f(g);
  }
};

// ---- bodies for the kernel layer -----------------------------------------------------------------

// Before a loop whose iterations are independent: GCC then vectorises it without run-time
// checks that the store overlaps none of the loads, which it makes for at most 10 pointers
// (--param=vect-max-version-for-alias-checks) and otherwise leaves the loop scalar. Host GCC
// only (nvcc, clang and the other compilers that define __GNUC__ ignore or warn on it).
#if defined(__GNUC__) && !defined(__clang__) && !defined(__NVCC__) && !defined(__CUDA_ARCH__) && \
    !defined(__NVCOMPILER) && !defined(__INTEL_COMPILER)
#define SPMD_IMPL_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define SPMD_IMPL_INDEPENDENT_ITERATIONS
#endif

/// dst = src along a row: body(k, lo, hi) of for_box. The destination is never read at another
/// position of the row than the one written (assign_expr sends a destination read at other
/// positions to LaggedAssign or a buffer), so the iterations are independent.
template <class Dst, class Src, int M, bool Contig>
struct AssignRows {
  Dst dst;
  Src src;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo,
                                              const index_t hi) const {
    const auto out = dst.template row<Contig>(k);
    const auto in = src.template row<Contig>(k);
    using T = std::remove_reference_t<decltype(out(0))>;
    SPMD_IMPL_INDEPENDENT_ITERATIONS
    for (index_t i = lo; i < hi; ++i) out(i) = static_cast<T>(in(i));
  }
  // Two-phase form (see impl::TwoPhase): a device item evaluates all its points, then stores.
  using point_value = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<const Dst&>().template row<Contig>(
      std::declval<const Kokkos::Array<index_t, M>&>())(index_t{}))>>;
  KOKKOS_FORCEINLINE_FUNCTION point_value eval(const Kokkos::Array<index_t, M>& k, const index_t i) const {
    return static_cast<point_value>(src.template row<Contig>(k)(i));
  }
  KOKKOS_FORCEINLINE_FUNCTION void store(const Kokkos::Array<index_t, M>& k, const index_t i,
                                         const point_value v) const {
    dst.template row<Contig>(k)(i) = v;
  }
};

/// What a reduction folds: the values, their squares, or 1 for each nonzero value.
enum class Map { value, square, nonzero };

/// acc = acc (rule R) map(src) along a row: body(k, lo, hi, acc) of reduce_box.
template <class R, Map F, class Src, int M, bool Contig>
struct ReduceRows {
  Src src;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              typename R::value_type& acc) const {
    using Acc = typename R::value_type;
    const auto in = src.template row<Contig>(k);
    for (index_t i = lo; i < hi; ++i) {
      if constexpr (F == Map::nonzero) {
        R::add(acc, static_cast<Acc>(in(i) ? 1 : 0));
      } else {
        const Acc x = static_cast<Acc>(in(i));
        R::add(acc, F == Map::square ? x * x : x);
      }
    }
  }
};

/// The smallest (Less) or largest value and the lowest row-major index holding it.
template <class T>
struct ValueIndex {
  T value;
  index_t index;
};
template <class T, bool Less>
struct ArgRule {
  using value_type = ValueIndex<T>;
  KOKKOS_FORCEINLINE_FUNCTION static void init(value_type& v) {
    v.value = Less ? Kokkos::reduction_identity<T>::min() : Kokkos::reduction_identity<T>::max();
    v.index = Kokkos::reduction_identity<index_t>::min();
  }
  KOKKOS_FORCEINLINE_FUNCTION static bool better(const T x, const index_t i, const T v, const index_t j) {
    return (Less ? x < v : x > v) || (x == v && i < j);
  }
  template <class A, class B>
  KOKKOS_FORCEINLINE_FUNCTION static void join(A& a, const B& b) {
    if (better(b.value, b.index, a.value, a.index)) {
      a.value = b.value;
      a.index = b.index;
    }
  }
};
/// argmin/argmax along a row: the view's row-major index of point k is base + coef . k.
template <class R, class Src, int M, bool Contig>
struct ArgRows {
  Src src;
  index_t base;
  Kokkos::Array<index_t, M> coef;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              typename R::value_type& acc) const {
    using V = decltype(acc.value);
    const auto in = src.template row<Contig>(k);
    index_t at = base;
    for (int d = 0; d < M - 1; ++d) at += coef[d] * k[d];
    for (index_t i = lo; i < hi; ++i) {
      const V x = static_cast<V>(in(i));
      const index_t j = at + coef[M - 1] * i;
      if (R::better(x, j, acc.value, acc.index)) {
        acc.value = x;
        acc.index = j;
      }
    }
  }
};

/// dst = src in place when src reads dst's storage at most `lag` units away along view axis 0
/// (a unit: one index of axis 0, i.e. a row or plane; in 1-D a run of `unit` elements), on host
/// execution spaces. The units are cut into bands, one per work item; a band evaluates its units
/// in order into a ring of lag + 1 unit buffers and stores unit j - lag once unit j is done (no
/// later unit of the band reads it). The first and last `lag` units of a band, which the
/// neighbouring bands read, go to an edge buffer stored by a second pass (phase 2) after every
/// band has finished. NumPy's result with buffers of (3 lag + 1) units per band, not a copy of
/// the whole destination: the traffic of the double-buffered form.
template <class Dst, class Src, int M, bool Contig>
struct LaggedAssign {
  using T = std::remove_pointer_t<decltype(Dst::p)>;
  Dst dst;
  Src src;
  Kokkos::Array<index_t, M> ext;
  index_t unit;    // elements per unit
  index_t nunits;  // units in the box
  index_t lag;     // in units
  index_t nbands;
  T* ring;  // nbands * (lag + 1) * unit
  T* edge;  // nbands * 2 * lag * unit
  bool phase2;

  KOKKOS_INLINE_FUNCTION void operator()(const index_t b) const {
    const index_t b0 = b * nunits / nbands, b1 = (b + 1) * nunits / nbands;
    T* my_ring = ring + b * (lag + 1) * unit;
    T* my_edge = edge + b * 2 * lag * unit;
    if (phase2) {
      for (index_t j = b0; j < b1; ++j) {
        const index_t e = edge_slot(j, b0, b1);
        if (e >= 0) store(j, my_edge + e * unit);
      }
      return;
    }
    for (index_t j = b0; j < b1; ++j) {
      const index_t e = edge_slot(j, b0, b1);
      compute(j, e >= 0 ? my_edge + e * unit : my_ring + (j % (lag + 1)) * unit);
      const index_t w = j - lag;
      if (w >= b0 && edge_slot(w, b0, b1) < 0) store(w, my_ring + (w % (lag + 1)) * unit);
    }
  }
  /// The edge-buffer slot of unit j of band [b0, b1), or -1 for a unit inside the band.
  KOKKOS_FORCEINLINE_FUNCTION index_t edge_slot(const index_t j, const index_t b0, const index_t b1) const {
    if (j < b0 + lag) return j - b0;
    if (j >= b1 - lag) return lag + (j - (b1 - lag));
    return -1;
  }
  /// The rows of unit j: (k, first, last) along the last axis for each, as f(k, lo, hi, offset).
  template <class F>
  KOKKOS_FORCEINLINE_FUNCTION void rows(const index_t j, const F& f) const {
    Kokkos::Array<index_t, M> k;
    k[M - 1] = 0;
    if constexpr (M == 1) {
      const index_t lo = j * unit, hi = lo + unit < ext[0] ? lo + unit : ext[0];
      f(k, lo, hi, -lo);
    } else {
      const index_t n = ext[M - 1];
      for (index_t r = 0; r < unit / n; ++r) {
        k[0] = j;
        index_t t = r;
        for (int d = M - 2; d >= 1; --d) {
          k[d] = t % ext[d];
          t /= ext[d];
        }
        f(k, index_t(0), n, r * n);
      }
    }
  }
  struct Compute {
    const LaggedAssign& self;
    T* buf;
    KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, index_t lo, index_t hi,
                                                index_t off) const {
      const auto in = self.src.template row<Contig>(k);
      T* o = buf + off;  // the lag buffer: never one of src's operands
      SPMD_IMPL_INDEPENDENT_ITERATIONS
      for (index_t i = lo; i < hi; ++i) o[i] = static_cast<T>(in(i));
    }
  };
  struct Store {
    const LaggedAssign& self;
    const T* buf;
    KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, index_t lo, index_t hi,
                                                index_t off) const {
      const auto out = self.dst.template row<Contig>(k);
      const T* o = buf + off;
      for (index_t i = lo; i < hi; ++i) out(i) = o[i];
    }
  };
  KOKKOS_FORCEINLINE_FUNCTION void compute(const index_t j, T* buf) const { rows(j, Compute{*this, buf}); }
  KOKKOS_FORCEINLINE_FUNCTION void store(const index_t j, const T* buf) const { rows(j, Store{*this, buf}); }
};

}  // namespace spmd::impl
