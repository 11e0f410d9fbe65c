#pragma once
// The kernel layer: the one way the library iterates over a box of points (a rank's owned block,
// a slice of it, a halo segment's interior) in a Kokkos kernel. Algorithms, expressions,
// reductions and the solvers' vector kernels all run on it, so a change of how work maps onto a
// GPU or a CPU is made here once.
//
// Work items (BoxItems):
//   host execution spaces   one item per chunk of a row (at most host_chunk points along the last
//                           axis): the body gets the row and a range [lo, hi) along the last axis
//                           and loops over it itself, so the inner loop is contiguous and
//                           vectorises, and reductions keep their partial result in locals;
//   devices                 one item per point (consecutive threads take consecutive points of
//                           a row: coalesced); the item's index is split with 32-bit arithmetic
//                           when the box has fewer than 2^32 points (a GPU divides 64-bit
//                           integers in software, which would cost more than the point's memory
//                           traffic). Large boxes take several points per item, a stride of
//                           count() apart (still coalesced: consecutive threads, consecutive
//                           points): a quarter of the threads and blocks to schedule, and a body
//                           that can evaluate apart from storing (eval/store, see TwoPhase) loads
//                           all its points before it stores any, so each thread keeps several
//                           loads in flight. A plain Kokkos range kernel of one point per thread
//                           reached 86% of the copy bandwidth on an H100; four per thread, 99%.
//                           Large boxes of two or more axes whose rows are at least a warp wide
//                           take the column form instead: an item is per_column consecutive
//                           points along axis M-2 (a column of a band of rows) at one position
//                           of the last axis, consecutive items consecutive positions of a row
//                           (coalesced). The item's index is split once (not per point), and a
//                           body with a column method (ColumnBody) addresses its points by one
//                           address step per operand: a 5-point stencil spent most of its
//                           instructions splitting indices and forming addresses per point
//                           (Nsight Compute, H100: SM 72%, DRAM 50%). The rows a column reads
//                           again (a stencil's north and south) stay in L1.
// Bodies:
//   loops       body(k, lo, hi)        k: the row (k[M-1] = 0), [lo, hi) along the last axis
//   reductions  body(k, lo, hi, acc)   acc: a local partial result, folded by a Rule
//   optionally  body.template column<P>(k, c) / column<P>(k, c, acc): the column form's item,
//               points k + u e_{M-2} for u < c <= P (k[M-1]: the position along the last axis);
//               bodies without it are called once per point as body(row, i, i + 1)
// PointLoop / PointReduce adapt a per-point body f(i...) / f(acc, i...) (int coordinates).

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/impl/forms.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/select.hpp"
#include "spmd/types.hpp"

namespace spmd::impl {

/// Points one host work item covers along the last axis (rows longer than this are split, so
/// that 1-D arrays and short grids still spread over threads).
constexpr index_t host_chunk = 4096;

/// The work items of a kernel over a box of extents `ext` (see the file comment).
template <int M>
struct BoxItems {
  static_assert(M >= 1, "spmd::impl::BoxItems: needs at least one axis");
  /// Points one device item covers in a large box (see the file comment). (16 was tried on an
  /// H100 as well: the kernels' register count rose for every form, and reductions, which
  /// Kokkos 3.4 launches with at most 256 blocks of 256 threads, did not get faster.)
  static constexpr int per_item = 4;
  /// Points of one column-form item along axis M-2 (see the file comment).
  static constexpr int per_column = 4;
  /// Boxes of at least this many points take several points per device item.
  static constexpr index_t multi_min = index_t(1) << 18;
  /// Rows at least this long (a warp's 32 threads on 32 consecutive points) take the column form
  /// in a box of several points per item.
  static constexpr index_t column_min = 32;

  Kokkos::Array<index_t, M> ext;
  index_t chunks;  // host: chunks per row; 0: points
  index_t chunk;
  index_t points;  // points in the box
  index_t step;    // > 0: per_item points per item, `step` (= count()) apart; 0: one point per item
  index_t blocks;  // > 0: the column form, `blocks` bands of per_column along axis M-2
  bool narrow;     // items split with 32-bit unsigned arithmetic

  /// Items over extents `e` for execution space Exec; `multi`: allow several points per device
  /// item (a body that already covers several points itself passes false). Local.
  template <class Exec, class Extents>
  static BoxItems make(const Extents& e, const bool multi = true) {
    BoxItems it{};
    it.points = 1;
    for (int d = 0; d < M; ++d) {
      it.ext[d] = e[d] > 0 ? static_cast<index_t>(e[d]) : 0;
      it.points *= it.ext[d];
    }
    it.chunk = 1;
    const Forms forms_here = forms<typename Exec::memory_space>();
    if (!forms_here.point_items) {
      const index_t n = it.ext[M - 1];
      it.chunk = n < host_chunk ? (n > 0 ? n : 1) : host_chunk;
      it.chunks = (n + it.chunk - 1) / it.chunk;
    } else if (multi && it.points >= (forms_here.multi_points > 0 ? forms_here.multi_points : multi_min)) {
      if (M >= 2 && it.ext[M - 1] >= (forms_here.column_min > 0 ? forms_here.column_min : column_min))
        it.blocks = (it.ext[M < 2 ? 0 : M - 2] + per_column - 1) / per_column;
      else
        it.step = (it.points + per_item - 1) / per_item;
    }
    it.narrow = it.chunks == 0 && it.points <= static_cast<index_t>(0xffffffffu);
    return it;
  }
  /// Number of work items (0 for an empty box). Local.
  index_t count() const {
    if (step > 0) return step;
    index_t c = chunks > 0 ? chunks : ext[M - 1];
    for (int d = 0; d < M - 1; ++d) c *= (blocks > 0 && d == M - 2) ? blocks : ext[d];
    return c;
  }
  /// Splits q (< the product of the extents of axes [0, last]) row-major over those axes into k:
  /// the outermost axis takes what is left (no division). U: the integer type of the arithmetic.
  template <class U>
  KOKKOS_FORCEINLINE_FUNCTION void unravel(U q, const int last, Kokkos::Array<index_t, M>& k) const {
    for (int d = last; d >= 1; --d) {
      const U e = static_cast<U>(ext[d]);
      k[d] = static_cast<index_t>(q % e);
      q /= e;
    }
    if (last >= 0) k[0] = static_cast<index_t>(q);
  }
  /// The row (k with k[M-1] = 0) and the position i along the last axis of point p (row-major).
  KOKKOS_FORCEINLINE_FUNCTION void point(index_t p, Kokkos::Array<index_t, M>& k, index_t& i) const {
    k[M - 1] = 0;
    if constexpr (M == 1) {
      i = p;
    } else if (narrow) {
      unsigned u = static_cast<unsigned>(p);
      const unsigned n = static_cast<unsigned>(ext[M - 1]);
      i = u % n;
      unravel<unsigned>(u / n, M - 2, k);
    } else {
      i = p % ext[M - 1];
      unravel<index_t>(p / ext[M - 1], M - 2, k);
    }
  }
  /// Column-form item t: its first point k (k[M-1]: the position along the last axis, k[M-2]:
  /// the band's first row) and the number of its points (1 to per_column) along axis M-2.
  template <class U>
  KOKKOS_FORCEINLINE_FUNCTION int column_split(U t, Kokkos::Array<index_t, M>& k) const {
    constexpr int R = M < 2 ? 0 : M - 2;
    const U n = static_cast<U>(ext[M - 1]);
    k[M - 1] = static_cast<index_t>(t % n);
    t /= n;
    if constexpr (M == 2) {
      k[0] = static_cast<index_t>(t) * per_column;
    } else {
      const U b = static_cast<U>(blocks);
      k[R] = static_cast<index_t>(t % b) * per_column;
      unravel<U>(t / b, M - 3, k);
    }
    const index_t left = ext[R] - k[R];
    return left < per_column ? static_cast<int>(left) : per_column;
  }
  KOKKOS_FORCEINLINE_FUNCTION int column(const index_t t, Kokkos::Array<index_t, M>& k) const {
    if (narrow) return column_split<unsigned>(static_cast<unsigned>(t), k);
    return column_split<index_t>(t, k);
  }
  /// f(k, i) for each of item t's points t + u * step (u < P, inside the box): several points
  /// per item.
  template <int P, class F>
  KOKKOS_FORCEINLINE_FUNCTION void each(const index_t t, const F& f) const {
    for (int u = 0; u < P; ++u) {
      const index_t p = t + u * step;
      if (p < points) {
        Kokkos::Array<index_t, M> k;
        index_t i;
        point(p, k, i);
        f(k, i);
      }
    }
  }
  /// Item t's row (k with k[M-1] = 0) and its range [lo, hi) along the last axis (items of one
  /// point or one host chunk; step == 0).
  KOKKOS_FORCEINLINE_FUNCTION void split(index_t t, Kokkos::Array<index_t, M>& k, index_t& lo, index_t& hi) const {
    if (chunks == 0) {
      point(t, k, lo);
      hi = lo + 1;
      return;
    }
    k[M - 1] = 0;
    const index_t c = t % chunks;
    t /= chunks;
    lo = c * chunk;
    hi = lo + chunk < ext[M - 1] ? lo + chunk : ext[M - 1];
    unravel<index_t>(t, M - 2, k);
  }
};

/// Whether a loop body can evaluate a point apart from storing it: eval(k, i) returns the value,
/// store(k, i, v) writes it (then a device item loads all its points before it stores any).
template <class Body, class = void>
struct TwoPhase : std::false_type {};
template <class Body>
struct TwoPhase<Body, std::void_t<typename Body::point_value>> : std::true_type {};

/// Whether a body handles a column-form item itself (body.template column<P>(k, c[, acc])); it
/// says so with `static constexpr bool column_body = true`.
template <class Body, class = void>
struct ColumnBody : std::false_type {};
template <class Body>
struct ColumnBody<Body, std::enable_if_t<Body::column_body>> : std::true_type {};

/// Whether a TwoPhase body evaluates an item's points of one row together
/// (body.template eval_points<P>(k, i0, di, v)); it says so with `many_points = true`.
template <class Body, class = void>
struct ManyPoints : std::false_type {};
template <class Body>
struct ManyPoints<Body, std::enable_if_t<Body::many_points>> : std::true_type {};

/// The row through point k (k[M-1] set to 0) and k's position along the last axis, for calling
/// a row body on one point of a column. Local.
template <std::size_t M>
KOKKOS_FORCEINLINE_FUNCTION Kokkos::Array<index_t, M> row_of_point(const Kokkos::Array<index_t, M>& k, const int u) {
  Kokkos::Array<index_t, M> r = k;
  if constexpr (M >= 2) r[M - 2] += u;
  r[M - 1] = 0;
  return r;
}

template <class Exec>
using ItemPolicy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<index_t>>;

/// `label` as the std::string Kokkos' parallel_for and parallel_reduce take, kept from the last
/// call on this thread: a repeated label costs a comparison instead of a heap allocation and a
/// free per launch (the library's labels are longer than std::string's small-string buffer).
/// Valid until the next call on this thread. Local.
inline const std::string& kernel_label(const char* label) {
  thread_local std::string last;
  if (last != label) last = label;
  return last;
}

// ---- loops ---------------------------------------------------------------------------------------

template <int M, class Body>
struct ForItems {
  Body body;
  BoxItems<M> items;
  KOKKOS_INLINE_FUNCTION void operator()(const index_t t) const {
    if (items.blocks > 0) {
      column<BoxItems<M>::per_column>(t);
    } else if (items.step == 0) {
      Kokkos::Array<index_t, M> k;
      index_t lo, hi;
      items.split(t, k, lo, hi);
      body(k, lo, hi);
    } else {
      points<BoxItems<M>::per_item>(t);
    }
  }
  /// Item t's P points t + u * step; all of them loaded before any is stored (TwoPhase bodies).
  template <int P>
  KOKKOS_INLINE_FUNCTION void points(const index_t t) const {
    if constexpr (TwoPhase<Body>::value) {
      if constexpr (M == 1 && ManyPoints<Body>::value) {
        if (t + (P - 1) * items.step < items.points) {  // a whole item: one row, points step apart
          const Kokkos::Array<index_t, M> k0{};
          typename Body::point_value w[P];
          body.template eval_points<P>(k0, t, items.step, w);
          for (int u = 0; u < P; ++u) body.store(k0, t + u * items.step, w[u]);
          return;
        }
      }
      Kokkos::Array<index_t, M> k[P] = {};
      index_t i[P] = {};
      typename Body::point_value v[P] = {};
      for (int u = 0; u < P; ++u) {
        const index_t p = t + u * items.step;
        if (p < items.points) {
          items.point(p, k[u], i[u]);
          v[u] = body.eval(k[u], i[u]);
        }
      }
      for (int u = 0; u < P; ++u)
        if (t + u * items.step < items.points) body.store(k[u], i[u], v[u]);
    } else {
      items.template each<P>(t, [&](const Kokkos::Array<index_t, M>& k, const index_t i) { body(k, i, i + 1); });
    }
  }
  /// Column-form item t: the body's own column method, else its points one by one (TwoPhase
  /// bodies: all loaded before any is stored).
  template <int P>
  KOKKOS_INLINE_FUNCTION void column(const index_t t) const {
    Kokkos::Array<index_t, M> k;
    const int c = items.column(t, k);
    const index_t i = k[M - 1];
    if constexpr (ColumnBody<Body>::value) {
      body.template column<P>(k, c);
    } else if constexpr (TwoPhase<Body>::value) {
      typename Body::point_value v[P] = {};
      if (c == P) {  // a whole item: straight-line code, every load issued before the first use
        for (int u = 0; u < P; ++u) v[u] = body.eval(row_of_point(k, u), i);
        for (int u = 0; u < P; ++u) body.store(row_of_point(k, u), i, v[u]);
        return;
      }
      for (int u = 0; u < P; ++u)
        if (u < c) v[u] = body.eval(row_of_point(k, u), i);
      for (int u = 0; u < P; ++u)
        if (u < c) body.store(row_of_point(k, u), i, v[u]);
    } else if (c == P) {
      for (int u = 0; u < P; ++u) body(row_of_point(k, u), i, i + 1);
    } else {
      for (int u = 0; u < P; ++u)
        if (u < c) body(row_of_point(k, u), i, i + 1);
    }
  }
};

/// body(k, lo, hi) over the items, on `exec`. Asynchronous (a Kokkos kernel). Local.
template <class Exec, int M, class Body>
void for_box(const Exec& exec, const char* label, const BoxItems<M>& items, const Body& body) {
  const index_t n = items.count();
  if (n == 0) return;
  Kokkos::parallel_for(kernel_label(label), ItemPolicy<Exec>(exec, 0, n), ForItems<M, Body>{body, items});
}

// ---- reductions ----------------------------------------------------------------------------------

/// How values fold: sum, prod, min, max, and max of |x| (identity 0). min, max and absmax
/// follow NumPy's NaN rule (impl/select.hpp): a NaN among the values gives NaN.
enum class Combine { sum, prod, min, max, absmax };

/// A reduction rule: the type of a partial result, its identity, how two fold, how a value
/// enters. join is written for any reference type (Kokkos before 3.7 joins volatile ones).
template <Combine C, class T>
struct Rule {
  using value_type = T;
  KOKKOS_FORCEINLINE_FUNCTION static void init(T& v) {
    if constexpr (C == Combine::sum || C == Combine::absmax)
      v = T(0);
    else if constexpr (C == Combine::prod)
      v = T(1);
    else
      v = select_identity<T, C == Combine::min>::value;
  }
  /// acc = acc (C) x for one value.
  KOKKOS_FORCEINLINE_FUNCTION static void add(T& acc, const T x) {
    if constexpr (C == Combine::sum)
      acc += x;
    else if constexpr (C == Combine::prod)
      acc *= x;
    else if constexpr (C == Combine::min)
      acc = np_minimum(x, acc);  // NumPy's fold: NaN when any value is NaN (impl/select.hpp)
    else if constexpr (C == Combine::max)
      acc = np_maximum(x, acc);
    else
      acc = np_maximum(x < T(0) ? -x : x, acc);
  }
  template <class A, class B>
  KOKKOS_FORCEINLINE_FUNCTION static void join(A& a, const B& b) {
    if constexpr (C == Combine::sum)
      a += b;
    else if constexpr (C == Combine::prod)
      a *= b;
    else if constexpr (C == Combine::min)
      a = np_minimum(static_cast<T>(a), static_cast<T>(b));
    else  // max, absmax (partial results are already >= 0, or NaN)
      a = np_maximum(static_cast<T>(a), static_cast<T>(b));
  }
};

/// K sums folded together (one kernel, then one MPI_Allreduce of K numbers).
template <class T, int K>
struct Sums {
  T v[K];
};
template <class T, int K>
struct SumsRule {
  using value_type = Sums<T, K>;
  KOKKOS_FORCEINLINE_FUNCTION static void init(value_type& s) {
    for (int k = 0; k < K; ++k) s.v[k] = T(0);
  }
  template <class A, class B>
  KOKKOS_FORCEINLINE_FUNCTION static void join(A& a, const B& b) {
    for (int k = 0; k < K; ++k) a.v[k] += b.v[k];
  }
};

/// A rule with `static constexpr bool fold_in_place = true` has its items fold straight into the
/// thread's partial result instead of a local copy (for large partial results).
template <class R, class = void>
struct folds_in_place : std::false_type {};
template <class R>
struct folds_in_place<R, std::enable_if_t<R::fold_in_place>> : std::true_type {};

template <int M, class Body, class R>
struct ReduceItems {
  using value_type = typename R::value_type;
  Body body;
  BoxItems<M> items;
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { R::init(v); }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, const value_type& b) const { R::join(a, b); }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, const volatile value_type& b) const { R::join(a, b); }
  KOKKOS_INLINE_FUNCTION void operator()(const index_t t, value_type& v) const {
    if constexpr (folds_in_place<R>::value) {  // the partial result is large: fold into v
      fold(t, v);
    } else {
      value_type local;  // the item's partial result in locals (see the file comment)
      R::init(local);
      fold(t, local);
      R::join(v, local);
    }
  }
  /// acc (rule R) the values of item t.
  KOKKOS_INLINE_FUNCTION void fold(const index_t t, value_type& acc) const {
    if (items.blocks > 0) {
      column<BoxItems<M>::per_column>(t, acc);
    } else if (items.step == 0) {
      Kokkos::Array<index_t, M> k;
      index_t lo, hi;
      items.split(t, k, lo, hi);
      body(k, lo, hi, acc);
    } else {
      points<BoxItems<M>::per_item>(t, acc);
    }
  }
  template <int P>
  KOKKOS_INLINE_FUNCTION void points(const index_t t, value_type& local) const {
    items.template each<P>(t, [&](const Kokkos::Array<index_t, M>& k, const index_t i) { body(k, i, i + 1, local); });
  }
  /// Column-form item t: the body's own column method, else its points one by one.
  template <int P>
  KOKKOS_INLINE_FUNCTION void column(const index_t t, value_type& acc) const {
    Kokkos::Array<index_t, M> k;
    const int c = items.column(t, k);
    if constexpr (ColumnBody<Body>::value) {
      body.template column<P>(k, c, acc);
    } else {
      const index_t i = k[M - 1];
      if (c == P) {  // a whole item: straight-line code
        for (int u = 0; u < P; ++u) body(row_of_point(k, u), i, i + 1, acc);
        return;
      }
      for (int u = 0; u < P; ++u)
        if (u < c) body(row_of_point(k, u), i, i + 1, acc);
    }
  }
};

/// The fold of body(k, lo, hi, acc) over the items, on `exec`, by rule R; R's identity for an
/// empty box. Waits for the kernel (the result is a host value). Local.
template <class R, class Exec, int M, class Body>
typename R::value_type reduce_box(const Exec& exec, const char* label, const BoxItems<M>& items, const Body& body) {
  typename R::value_type result;
  R::init(result);
  const index_t n = items.count();
  if (n == 0) return result;
  Kokkos::parallel_reduce(kernel_label(label), ItemPolicy<Exec>(exec, 0, n), ReduceItems<M, Body, R>{body, items},
                          result);
  return result;
}

// ---- per-point bodies ----------------------------------------------------------------------------

/// Adapts f(i0, ..., iM-1) (int coordinates relative to the box's first point) to a loop body.
template <int M, class F, class Seq = std::make_index_sequence<M - 1>>
struct PointLoop;
template <int M, class F, std::size_t... D>
struct PointLoop<M, F, std::index_sequence<D...>> {
  F f;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo,
                                              const index_t hi) const {
    // int coordinates and an int loop counter, as the bodies index with int: a 64-bit counter
    // cast per point kept GCC from vectorising the CG vector kernels (1.2x slower in cache).
    const int h = static_cast<int>(hi);
    for (int i = static_cast<int>(lo); i < h; ++i) f(static_cast<int>(k[D])..., i);
  }
};
/// Adapts f(acc, i0, ..., iM-1) to a reduction body.
template <int M, class F, class Seq = std::make_index_sequence<M - 1>>
struct PointReduce;
template <int M, class F, std::size_t... D>
struct PointReduce<M, F, std::index_sequence<D...>> {
  F f;
  template <class Acc>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, M>& k, const index_t lo, const index_t hi,
                                              Acc& acc) const {
    const int h = static_cast<int>(hi);
    for (int i = static_cast<int>(lo); i < h; ++i) f(acc, static_cast<int>(k[D])..., i);
  }
};

/// f(i...) at every point of the box [0, ext) (int coordinates), on `exec`. Local.
template <class Exec, std::size_t R, class F>
void for_points(const Exec& exec, const char* label, const std::array<int, R>& ext, const F& f) {
  constexpr int M = static_cast<int>(R);
  for_box(exec, label, BoxItems<M>::template make<Exec>(ext), PointLoop<M, F>{f});
}
/// The fold of f(acc, i...) over the box [0, ext), by rule Rl. Waits. Local.
template <class Rl, class Exec, std::size_t R, class F>
typename Rl::value_type reduce_points(const Exec& exec, const char* label, const std::array<int, R>& ext, const F& f) {
  constexpr int M = static_cast<int>(R);
  return reduce_box<Rl>(exec, label, BoxItems<M>::template make<Exec>(ext), PointReduce<M, F>{f});
}

}  // namespace spmd::impl
