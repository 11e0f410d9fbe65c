#pragma once
// Expressions, device side: the tree an expression is bound into for a kernel (plain aggregates
// of raw pointers and address steps, copied into the kernel; every node compiles for CUDA), and
// the bodies the kernel layer (impl/kernels.hpp) runs: assignment rows, reduction rows, and the
// lagged in-place assignment of host spaces.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "spmd/impl/complex.hpp"
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

// Every node of the device tree gives the line through a local point k along an axis A,
// line<A, Contig>(k): a node of the same shape whose operator()(u) is the node's value at
// k + u e_A (Contig: unit address steps along A). Rows are the lines along the last axis
// (row_at); the kernel layer's column form walks lines along axis M-2.

/// An array operand (P = const T*) or the destination (P = T*) on this rank: the element at
/// local point k (0-based in the box J) is p[sum_d coef[d] * k[d]].
template <class P, int M>
struct BlockAccess {
  P p;
  Kokkos::Array<index_t, M> coef;
  template <int A, bool Contig>
  KOKKOS_FORCEINLINE_FUNCTION RowAccess<P, Contig> line(const Kokkos::Array<index_t, M>& k) const {
    index_t off = 0;
    for (int d = 0; d < M; ++d) off += coef[d] * k[d];
    return RowAccess<P, Contig>{p + off, coef[A]};
  }
};

/// The row of device node `n` through local point k (k[M-1] = 0): element i is the value at
/// (k[0], ..., k[M-2], i).
template <bool Contig, class Node, std::size_t M>
KOKKOS_FORCEINLINE_FUNCTION auto row_at(const Node& n, const Kokkos::Array<index_t, M>& k) {
  return n.template line<static_cast<int>(M) - 1, Contig>(k);
}
template <class T, int M>
using TermDev = BlockAccess<const T*, M>;
template <class T, int M>
using DstDev = BlockAccess<T*, M>;

template <class S>
struct ScalarDev {
  S v;
  template <int A, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION ScalarDev line(const K&) const {
    return *this;
  }
  KOKKOS_FORCEINLINE_FUNCTION S operator()(const index_t) const { return v; }
};

template <class Op, class A>
struct UnaryDev {
  A a;
  template <int L, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto line(const K& k) const {
    using Line = decltype(a.template line<L, Contig>(k));
    return UnaryDev<Op, Line>{a.template line<L, Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION typename Op::result operator()(const index_t i) const { return Op::apply(a(i)); }
};

template <class Op, class A, class B>
struct BinaryDev {
  A a;
  B b;
  template <int L, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto line(const K& k) const {
    using RA = decltype(a.template line<L, Contig>(k));
    using RB = decltype(b.template line<L, Contig>(k));
    return BinaryDev<Op, RA, RB>{a.template line<L, Contig>(k), b.template line<L, Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION typename Op::result operator()(const index_t i) const { return Op::apply(a(i), b(i)); }
};

template <class R, class C, class A, class B>
struct WhereDev {
  C c;
  A a;
  B b;
  template <int L, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto line(const K& k) const {
    using RC = decltype(c.template line<L, Contig>(k));
    using RA = decltype(a.template line<L, Contig>(k));
    using RB = decltype(b.template line<L, Contig>(k));
    return WhereDev<R, RC, RA, RB>{c.template line<L, Contig>(k), a.template line<L, Contig>(k),
                                   b.template line<L, Contig>(k)};
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
  template <int L, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION auto line(const K& k) const {
    using Line = decltype(a.template line<L, Contig>(k));
    return MapDev<F, Line>{f, a.template line<L, Contig>(k)};
  }
  KOKKOS_FORCEINLINE_FUNCTION auto operator()(const index_t i) const { return f(a(i)); }
};

/// A generator (GenExpr, N axes) on this rank, in an expression of M >= N axes: the value at
/// local point k is f(origin + keep * k'), k' the last N axes of k (a generator's axes align with
/// the expression's last ones), origin the generator index of the box's first point, and keep 0
/// along a generator axis of extent 1 (broadcast: index 0 throughout), 1 otherwise. As a line
/// along expression axis A (operator()(u): the value u steps along A from origin), constant
/// when A is none of the generator's axes.
template <class F, int N, int M, int A = M - 1>
struct GenDev {
  F f;
  Kokkos::Array<index_t, N> origin;
  Kokkos::Array<index_t, N> keep;
  template <int L, bool Contig, class K>
  KOKKOS_FORCEINLINE_FUNCTION GenDev<F, N, M, L> line(const K& k) const {
    GenDev<F, N, M, L> r{f, origin, keep};
    for (int i = 0; i < N; ++i) r.origin[i] += keep[i] * k[M - N + i];
    return r;
  }
  KOKKOS_FORCEINLINE_FUNCTION auto operator()(const index_t u) const {
    Kokkos::Array<index_t, N> g = origin;
    if constexpr (A >= M - N) g[A - (M - N)] += keep[A - (M - N)] * u;
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

/// A row whose values come in runs (a host interpreter's line, python/src/program.hpp): it says
/// `static constexpr bool spmd_runs = true` and has `const V* run(index_t i, index_t& n) const`,
/// the values of points [i, i + n) (n >= 1; it may reach past the range asked for). The row loops
/// below then store or fold run by run, a plain loop over an array the compiler vectorises,
/// instead of asking for the points one at a time.
template <class L, class = void>
struct has_runs : std::false_type {};
template <class L>
struct has_runs<L, std::enable_if_t<L::spmd_runs>> : std::true_type {};

/// A device row that evaluates several points together (the device interpreter's,
/// python/src/program.hpp): it says `static constexpr bool spmd_points = true` and has
/// `template <int P> void values(index_t i0, index_t di, V (&v)[P]) const`, the values of points
/// i0 + u di (u < P, all inside the box). A whole device item asks for its points so: the row
/// then issues the loads of an instruction for all P points at once, where P interpreted points
/// one after the other keep one load in flight per thread.
template <class L, class = void>
struct has_points : std::false_type {};
template <class L>
struct has_points<L, std::enable_if_t<L::spmd_points>> : std::true_type {};

/// dst = src along a row: body(k, lo, hi) of for_box. The destination is never read at another
/// position of the row than the one written (assign_expr sends a destination read at other
/// positions to LaggedAssign or a buffer), so the iterations are independent.
template <class Dst, class Src, int M, bool Contig>
struct AssignRows {
  Dst dst;
  Src src;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo,
                                              const index_t hi) const {
    const auto out = row_at<Contig>(dst, k);
    const auto in = row_at<Contig>(src, k);
    using T = std::remove_reference_t<decltype(out(0))>;
    if constexpr (has_runs<std::decay_t<decltype(in)>>::value) {
      for (index_t i = lo; i < hi;) {
        index_t n = 0;
        const auto* v = in.run(i, n);
        if (n > hi - i) n = hi - i;
        SPMD_IMPL_INDEPENDENT_ITERATIONS
        for (index_t j = 0; j < n; ++j) out(i + j) = static_cast<T>(v[j]);
        i += n;
      }
    } else {
      SPMD_IMPL_INDEPENDENT_ITERATIONS
      for (index_t i = lo; i < hi; ++i) out(i) = static_cast<T>(in(i));
    }
  }
  // Two-phase form (see impl::TwoPhase): a device item evaluates all its points, then stores.
  using point_value = std::remove_cv_t<std::remove_reference_t<decltype(row_at<Contig>(
      std::declval<const Dst&>(), std::declval<const Kokkos::Array<index_t, M>&>())(index_t{}))>>;
  KOKKOS_FORCEINLINE_FUNCTION point_value eval(const Kokkos::Array<index_t, M>& k, const index_t i) const {
    return static_cast<point_value>(row_at<Contig>(src, k)(i));
  }
  KOKKOS_FORCEINLINE_FUNCTION void store(const Kokkos::Array<index_t, M>& k, const index_t i,
                                         const point_value v) const {
    row_at<Contig>(dst, k)(i) = v;
  }
  // Several points of one row together (see has_points): ForItems' items of P points.
  using Line = decltype(row_at<Contig>(std::declval<const Src&>(), std::declval<const Kokkos::Array<index_t, M>&>()));
  static constexpr bool many_points = has_points<std::decay_t<Line>>::value;
  template <int P>
  KOKKOS_FORCEINLINE_FUNCTION void eval_points(const Kokkos::Array<index_t, M>& k, const index_t i0, const index_t di,
                                               point_value (&v)[P]) const {
    if constexpr (many_points) {
      std::decay_t<decltype(std::declval<const Line&>()(index_t{}))> w[P];
      row_at<Contig>(src, k).template values<P>(i0, di, w);
      for (int u = 0; u < P; ++u) v[u] = static_cast<point_value>(w[u]);
    }
  }
  // Column form (see impl::ColumnBody): the c <= P points k + u e_{M-2} through one address per
  // operand and a step; all evaluated before any is stored. The points form stores straight from
  // the line's values: routing them through v (one helper shared with eval_points and ReduceRows,
  // ee8c4ad) ran the Python front's 2-D stencil 18% slower on an H200 (docs/python.md).
  static constexpr bool column_body = M >= 2;
  template <int P>
  KOKKOS_FORCEINLINE_FUNCTION void column(const Kokkos::Array<index_t, M>& k, const int c) const {
    constexpr int A = M >= 2 ? M - 2 : 0;
    const auto out = dst.template line<A, false>(k);
    const auto in = src.template line<A, false>(k);
    point_value v[P] = {};
    if (c == P) {  // a whole item: straight-line code, every load issued before the first use
      if constexpr (has_points<std::decay_t<decltype(in)>>::value) {
        std::decay_t<decltype(in(0))> w[P];
        in.template values<P>(0, 1, w);
        for (int u = 0; u < P; ++u) out(u) = static_cast<point_value>(w[u]);
      } else {
        for (int u = 0; u < P; ++u) v[u] = static_cast<point_value>(in(u));
        for (int u = 0; u < P; ++u) out(u) = v[u];
      }
      return;
    }
    for (int u = 0; u < P; ++u)
      if (u < c) v[u] = static_cast<point_value>(in(u));
    for (int u = 0; u < P; ++u)
      if (u < c) out(u) = v[u];
  }
};

/// What a reduction folds: the values, their squares, or 1 for each nonzero value.
enum class Map { value, square, nonzero };

/// acc = acc (rule R) map(src) along a row: body(k, lo, hi, acc) of reduce_box.
template <class R, Map F, class Src, int M, bool Contig>
struct ReduceRows {
  using Acc = typename R::value_type;
  Src src;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              Acc& acc) const {
    const auto in = row_at<Contig>(src, k);
    if constexpr (has_runs<std::decay_t<decltype(in)>>::value) {
      for (index_t i = lo; i < hi;) {
        index_t n = 0;
        const auto* v = in.run(i, n);
        if (n > hi - i) n = hi - i;
        const Values<std::remove_cv_t<std::remove_reference_t<decltype(*v)>>> run{v};
        for (index_t j = 0; j < n; ++j) add(acc, run, j);
        i += n;
      }
    } else {
      for (index_t i = lo; i < hi; ++i) add(acc, in, i);
    }
  }
  template <class V>
  struct Values {  // a run's values as a line
    const V* p;
    KOKKOS_FORCEINLINE_FUNCTION V operator()(const index_t j) const { return p[j]; }
  };
  // Column form (see impl::ColumnBody): the c <= P points k + u e_{M-2}.
  static constexpr bool column_body = M >= 2;
  template <int P>
  KOKKOS_FORCEINLINE_FUNCTION void column(const Kokkos::Array<index_t, M>& k, const int c, Acc& acc) const {
    const auto in = src.template line<(M >= 2 ? M - 2 : 0), false>(k);
    if (c == P) {  // a whole item: straight-line code
      if constexpr (has_points<std::decay_t<decltype(in)>>::value) {
        std::decay_t<decltype(in(0))> w[P];
        in.template values<P>(0, 1, w);
        const Values<std::decay_t<decltype(in(0))>> run{w};
        for (int u = 0; u < P; ++u) add(acc, run, u);
      } else {
        for (int u = 0; u < P; ++u) add(acc, in, u);
      }
      return;
    }
    for (int u = 0; u < P; ++u)
      if (u < c) add(acc, in, u);
  }
  /// acc (rule R) map(line(i)).
  template <class Line>
  KOKKOS_FORCEINLINE_FUNCTION static void add(Acc& acc, const Line& line, const index_t i) {
    if constexpr (F == Map::nonzero && is_complex_v<std::decay_t<decltype(line(i))>>) {
      R::add(acc, static_cast<Acc>(line(i) == std::decay_t<decltype(line(i))>(0) ? 0 : 1));
    } else if constexpr (F == Map::nonzero) {
      R::add(acc, static_cast<Acc>(line(i) ? 1 : 0));
    } else if constexpr (F == Map::square && is_complex_v<std::decay_t<decltype(line(i))>>) {
      R::add(acc, static_cast<Acc>(abs2_of(line(i))));  // |z|^2 (norm2 of complex values)
    } else {
      const Acc x = static_cast<Acc>(line(i));
      R::add(acc, F == Map::square ? x * x : x);
    }
  }
};

/// The smallest (Less) or largest value and the lowest row-major index holding it, the first
/// NaN when there is one (NumPy's argmin / argmax, impl/select.hpp); index -1: none yet.
template <class T>
struct ValueIndex {
  T value;
  index_t index;
};
template <class T, bool Less>
struct ArgRule {
  using value_type = ValueIndex<T>;
  KOKKOS_FORCEINLINE_FUNCTION static void init(value_type& v) {
    v.value = select_identity<T, Less>::value;
    v.index = -1;
  }
  KOKKOS_FORCEINLINE_FUNCTION static bool better(const T x, const index_t i, const T v, const index_t j) {
    return arg_beats<Less>(x, i, v, j);
  }
  template <class A, class B>
  KOKKOS_FORCEINLINE_FUNCTION static void join(A& a, const B& b) {
    if (b.index >= 0 && better(b.value, b.index, a.value, a.index)) {
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
    const auto in = row_at<Contig>(src, k);
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
      const auto in = row_at<Contig>(self.src, k);
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
      const auto out = row_at<Contig>(self.dst, k);
      const T* o = buf + off;
      // A contiguous row by the C library's copy: a loop of a few instructions here runs at a
      // speed that depends on where the linker puts it (on AMD Zen 3 the in-place stencil of
      // perf/bench_stencil ran 25% slower with the same machine code at another address).
      if constexpr (Contig && std::is_trivially_copyable_v<T>) {
        if (hi > lo) std::memcpy(static_cast<void*>(&out(lo)), o + lo, sizeof(T) * static_cast<std::size_t>(hi - lo));
      } else {
        for (index_t i = lo; i < hi; ++i) out(i) = o[i];
      }
    }
  };
  KOKKOS_FORCEINLINE_FUNCTION void compute(const index_t j, T* buf) const { rows(j, Compute{*this, buf}); }
  KOKKOS_FORCEINLINE_FUNCTION void store(const index_t j, const T* buf) const { rows(j, Store{*this, buf}); }
};

/// dst = src in place on a 2-D box when src reads dst's storage at most `lag` rows and `creach`
/// columns away: the one-pass device form of the lagged update (LaggedAssign does it on host
/// spaces with bands of whole rows; a GPU needs the rows cut into tiles as well). A team takes a
/// tile of `band` rows by `width` columns, each thread a column of it (several on a host team of
/// one thread), and walks the band's rows `step` at a time: it evaluates the rows, keeps the
/// values in a team ring of (step + lag) rows, and after a team barrier (every thread of the
/// tile has evaluated those rows) stores the rows that no row still to come reads, `lag` behind.
/// The tile's edge (its first and last `lag` rows and `creach` columns, which neighbouring tiles
/// read) goes to an edge buffer instead and is stored by a second pass (phase2) once every tile
/// has finished. NumPy's result at the traffic of the double-buffered form plus the edges (a
/// few percent of the points), instead of a whole temporary and a copy back.
template <class Dst, class Src>
struct TiledAssign {
  using T = std::remove_pointer_t<decltype(Dst::p)>;
  static constexpr int step = 4;  // rows per team barrier (one load each in flight per thread)
  Dst dst;
  Src src;
  index_t rows, cols;
  index_t lag, creach;
  index_t band, width;  // a tile's rows and columns
  index_t tiles;        // tiles per band
  index_t edge_size;    // edge values per tile
  T* edge;              // tiles * bands * edge_size
  bool phase2;

  /// Bytes of team scratch (the ring).
  KOKKOS_INLINE_FUNCTION std::size_t ring_bytes() const {
    return static_cast<std::size_t>((step + lag) * width) * sizeof(T);
  }
  /// Edge values one tile keeps: its first and last lag rows whole, the first and last creach
  /// columns of the rows between.
  static index_t edge_values(const index_t lag, const index_t creach, const index_t band, const index_t width) {
    return 2 * lag * width + (band > 2 * lag ? band - 2 * lag : 0) * 2 * creach;
  }

  template <class Member>
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const index_t id = team.league_rank();
    const index_t b0 = (id / tiles) * band, b1 = b0 + band < rows ? b0 + band : rows;
    const index_t c0 = (id % tiles) * width, c1 = c0 + width < cols ? c0 + width : cols;
    const index_t t0 = team.team_rank(), ts = team.team_size();
    T* my_edge = edge + id * edge_size;
    if (phase2) {
      for (index_t i = c0 + t0; i < c1; i += ts)
        for (index_t j = b0; j < b1; ++j) {
          const index_t e = edge_slot(j, i, b0, b1, c0, c1);
          if (e >= 0) dst.template line<0, false>(point(j, i))(0) = my_edge[e];
        }
      return;
    }
    T* ring = static_cast<T*>(team.team_scratch(0).get_shmem(ring_bytes()));
    // Row r of the band keeps its value in ring slot (r - b0) modulo (step + lag), kept by
    // additions (a GPU divides 64-bit integers in software).
    const index_t slots = step + lag;
    index_t sj = 0;  // the slot of row j
    for (index_t j = b0; j < b1; j += step) {
      for (index_t i = c0 + t0; i < c1; i += ts) {
        const auto in = src.template line<0, false>(point(j, i));
        T v[step] = {};
        if (j + step <= b1) {  // whole steps: straight-line loads
          for (int u = 0; u < step; ++u) v[u] = static_cast<T>(in(u));
        } else {
          for (int u = 0; u < step; ++u)
            if (j + u < b1) v[u] = static_cast<T>(in(u));
        }
        for (int u = 0; u < step; ++u) {
          if (j + u >= b1) continue;
          const index_t e = edge_slot(j + u, i, b0, b1, c0, c1);
          const index_t su = sj + u < slots ? sj + u : sj + u - slots;
          if (e >= 0)
            my_edge[e] = v[u];
          else
            ring[su * width + (i - c0)] = v[u];
        }
      }
      team.team_barrier();  // rows up to j + step - 1 evaluated by every thread of the tile
      // Rows j - lag to j + step - 1 - lag: no row still to come reads them (the band's first and
      // last lag rows and the edge columns wait for phase 2).
      for (index_t i = c0 + t0; i < c1; i += ts) {
        if (i < c0 + creach || i >= c1 - creach) continue;
        const auto out = dst.template line<0, false>(point(0, i));
        for (int u = 0; u < step; ++u) {
          const index_t r = j - lag + u;
          if (r < b0 + lag || r >= b1 - lag) continue;
          index_t su = sj - lag + u;
          su = su < 0 ? su + slots : (su >= slots ? su - slots : su);
          out(r) = ring[su * width + (i - c0)];
        }
      }
      sj = sj + step < slots ? sj + step : sj + step - slots;
    }
  }
  KOKKOS_FORCEINLINE_FUNCTION static Kokkos::Array<index_t, 2> point(const index_t j, const index_t i) {
    Kokkos::Array<index_t, 2> k;
    k[0] = j;
    k[1] = i;
    return k;
  }
  /// The edge-buffer slot of point (j, i) of the tile [b0, b1) x [c0, c1), or -1 inside it.
  KOKKOS_FORCEINLINE_FUNCTION index_t edge_slot(const index_t j, const index_t i, const index_t b0, const index_t b1,
                                                const index_t c0, const index_t c1) const {
    const index_t t = i - c0;
    if (j < b0 + lag) return (j - b0) * width + t;
    if (j >= b1 - lag) return (lag + j - (b1 - lag)) * width + t;
    if (i >= c0 + creach && i < c1 - creach) return -1;
    const index_t e = i < c0 + creach ? t : creach + (i - (c1 - creach));
    return 2 * lag * width + (j - b0 - lag) * 2 * creach + e;
  }
};

}  // namespace spmd::impl
