#pragma once
/// \file expr.hpp
/// Lazy, fused array expressions with NumPy semantics over Arrays, slices (ArrayView) and
/// scalars:
///
///   center = 0.2 * (center + north + east + west + south);   // ONE kernel; NumPy's result
///   next(c) = where(u(c) > 0.0, sqrt(u(c)), 0.0);
///   double r = spmd::norm2(u(c) - v(c));                      // no temporary array
///
/// Operators + - * / (unary -), comparisons < <= > >= == != (bool expressions), && || !, and
/// the functions abs, sqrt, exp, log, sin, cos, pow, minimum, maximum, where, astype<U> build an
/// expression tree (plain structs holding the operands' handles); nothing runs until the
/// expression is assigned (`view = expr`, `array = expr`, spmd::assign) or reduced (sum, prod,
/// min, max, mean, norm2, norm_inf, dot, count_nonzero, any_of, all_of). Operands must have
/// equal shapes; scalars broadcast. Element types follow NumPy's rules for Python scalars (a
/// scalar takes the array's type unless it is floating and the array integral); `/` between
/// integers divides as doubles.
///
/// Evaluation (spmd::assign, collective over the destination's communicator):
///   1. each rank computes the box J of destination indices whose parent elements it owns;
///   2. every array operand is classified from replicated data only (no communication, the
///      same verdict on every rank and at every rank count):
///        - direct: read in place (it reads the destination's layout at the same positions, or
///          shifted by at most the halo width: a halo read, which sees what the halo holds,
///          so exchange halos first; along a periodic axis the shift counts modulo the axis
///          length, so u[1:-1, 0] read for u[1:-1, -1] is a shift by +1: the periodic halo);
///        - moved: anything else (other process grid, other shape, permuted or strided
///          differently, shifted beyond the halo along an axis without a halo, another plane
///          of a dropped axis) is copied by an impl::RegionPlan into a temporary laid out like
///          the destination, then read in place. Plans and temporaries are cached in the
///          destination array (at most 16 per array, least recently used dropped), so a loop
///          that repeats an assignment builds and allocates nothing after its first pass;
///        - error: a shift along a kept axis wider than a nonzero halo there (the halo was
///          meant for this read and is too narrow) is a collective spmd::Error;
///   3. if the destination's storage is also read at other positions (a stencil update in
///      place), NumPy's as-if-into-a-temporary result needs the old values: host spaces
///      evaluate a few rows behind (LaggedAssign: a ring of rows per thread), devices into a
///      buffer (cached, grown once) that is then copied back. Otherwise the kernel writes the
///      destination directly;
///   4. one kernel over J evaluates the whole tree per point. Each operand's address is
///      base + sum_d coef[d] * j[d], precomputed on the host; when every operand and the
///      destination have unit stride along the last axis, the host kernel's inner loop is
///      contiguous (it vectorises) and on a GPU consecutive threads read consecutive elements.
/// Only owned points of the destination's parent inside the selection are written, never its
/// halo (boundary values kept there persist).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/algorithm.hpp"
#include "spmd/math.hpp"
#include "spmd/reduce.hpp"
#include "spmd/slice.hpp"

namespace spmd {

namespace impl {

// ================================================================================================
// Element operations (device functions)
// ================================================================================================

enum class UnOp { neg, abs, sqrt, exp, log, sin, cos, lnot, cast };
enum class BinOp { add, sub, mul, div, pow, minimum, maximum, lt, le, gt, ge, eq, ne, land, lor };

constexpr bool is_comparison(BinOp op) {
  return op == BinOp::lt || op == BinOp::le || op == BinOp::gt || op == BinOp::ge || op == BinOp::eq ||
         op == BinOp::ne || op == BinOp::land || op == BinOp::lor;
}

/// Unary operation Op on values converted to R.
template <UnOp Op, class R>
struct Un {
  using result = std::conditional_t<Op == UnOp::lnot, bool, R>;
  KOKKOS_FORCEINLINE_FUNCTION static result apply(const R x) {
    if constexpr (Op == UnOp::neg)
      return -x;
    else if constexpr (Op == UnOp::abs)
      return x < R(0) ? -x : x;
    else if constexpr (Op == UnOp::sqrt)
      return math::sqrt(x);
    else if constexpr (Op == UnOp::exp)
      return math::exp(x);
    else if constexpr (Op == UnOp::log)
      return math::log(x);
    else if constexpr (Op == UnOp::sin)
      return math::sin(x);
    else if constexpr (Op == UnOp::cos)
      return math::cos(x);
    else if constexpr (Op == UnOp::lnot)
      return !x;
    else
      return x;  // cast: the conversion to R is the operation
  }
};

/// Binary operation Op on values converted to R.
template <BinOp Op, class R>
struct Bin {
  using result = std::conditional_t<is_comparison(Op), bool, R>;
  KOKKOS_FORCEINLINE_FUNCTION static result apply(const R x, const R y) {
    if constexpr (Op == BinOp::add)
      return x + y;
    else if constexpr (Op == BinOp::sub)
      return x - y;
    else if constexpr (Op == BinOp::mul)
      return x * y;
    else if constexpr (Op == BinOp::div)
      return x / y;
    else if constexpr (Op == BinOp::pow)
      return math::pow(x, y);
    else if constexpr (Op == BinOp::minimum)
      return y < x ? y : x;
    else if constexpr (Op == BinOp::maximum)
      return x < y ? y : x;
    else if constexpr (Op == BinOp::lt)
      return x < y;
    else if constexpr (Op == BinOp::le)
      return x <= y;
    else if constexpr (Op == BinOp::gt)
      return x > y;
    else if constexpr (Op == BinOp::ge)
      return x >= y;
    else if constexpr (Op == BinOp::eq)
      return x == y;
    else if constexpr (Op == BinOp::ne)
      return x != y;
    else if constexpr (Op == BinOp::land)
      return x && y;
    else
      return x || y;
  }
};

inline const char* op_name(BinOp op) {
  constexpr const char* names[] = {"operator+",  "operator-",  "operator*",  "operator/",  "pow",
                                   "minimum",    "maximum",    "operator<",  "operator<=", "operator>",
                                   "operator>=", "operator==", "operator!=", "operator&&", "operator||"};
  return names[static_cast<int>(op)];
}

// ================================================================================================
// Device side of an expression: plain aggregates, copied into the kernel
// ================================================================================================

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
struct ExprConfig {
  bool point_items = false;
  bool lagged = true;
  index_t bands = 0;  // 0: one per thread
};
inline ExprConfig& expr_config() {
  static ExprConfig c;
  return c;
}

/// Points one host work item covers along the last axis (rows longer than this are split, so
/// that 1-D arrays and short grids still spread over threads).
constexpr index_t host_chunk = 4096;

/// The work items of a kernel over a box of extents `ext`: on host spaces one per row chunk (the
/// inner loop runs along the last axis), on devices one per point. A device item's index is split
/// with 32-bit arithmetic when the box has fewer than 2^32 points (a GPU divides 64-bit integers
/// in software: that would cost more than the point's memory traffic).
template <int M>
struct Items {
  Kokkos::Array<index_t, M> ext;
  index_t chunks;  // chunks per row (host) or 0 (device: one item per point)
  index_t chunk;
  bool narrow;  // device: split with 32-bit unsigned arithmetic

  template <class Exec>
  static Items make(const Box<M>& box) {
    Items it{};
    for (int d = 0; d < M; ++d) it.ext[d] = box.extent(d);
    if (host_accessible<typename Exec::memory_space>() && !expr_config().point_items) {
      const index_t n = it.ext[M - 1];
      it.chunk = n < host_chunk ? (n > 0 ? n : 1) : host_chunk;
      it.chunks = (n + it.chunk - 1) / it.chunk;
    }
    it.narrow = it.chunks == 0 && it.count() <= static_cast<index_t>(0xffffffffu);
    return it;
  }
  index_t count() const {
    index_t c = chunks > 0 ? chunks : ext[M - 1];
    for (int d = 0; d < M - 1; ++d) c *= ext[d];
    return c;
  }
  /// The row (k with k[M-1] = 0) and the range [lo, hi) along the last axis of item t.
  KOKKOS_FORCEINLINE_FUNCTION void split(index_t t, Kokkos::Array<index_t, M>& k, index_t& lo, index_t& hi) const {
    if (narrow) {
      unsigned u = static_cast<unsigned>(t);
      const unsigned n = static_cast<unsigned>(ext[M - 1]);
      lo = u % n;
      u /= n;
      hi = lo + 1;
      k[M - 1] = 0;
      for (int d = M - 2; d >= 0; --d) {
        const unsigned e = static_cast<unsigned>(ext[d]);
        k[d] = u % e;
        u /= e;
      }
      return;
    }
    if (chunks > 0) {
      const index_t c = t % chunks;
      t /= chunks;
      lo = c * chunk;
      hi = lo + chunk < ext[M - 1] ? lo + chunk : ext[M - 1];
    } else {
      lo = t % ext[M - 1];
      t /= ext[M - 1];
      hi = lo + 1;
    }
    k[M - 1] = 0;
    for (int d = M - 2; d >= 0; --d) {
      k[d] = t % ext[d];
      t /= ext[d];
    }
  }
};

/// dst(k) = src(k) over the items.
template <class Dst, class Src, int M, bool Contig>
struct AssignKernel {
  Dst dst;
  Src src;
  Items<M> items;
  KOKKOS_INLINE_FUNCTION void operator()(const index_t t) const {
    Kokkos::Array<index_t, M> k;
    index_t lo, hi;
    items.split(t, k, lo, hi);
    const auto out = dst.template row<Contig>(k);
    const auto in = src.template row<Contig>(k);
    using T = std::remove_reference_t<decltype(out(0))>;
    for (index_t i = lo; i < hi; ++i) out(i) = static_cast<T>(in(i));
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
      T* o = buf + off;
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

/// What a reduction folds: the values, their squares, or 1 for each nonzero value.
enum class Map { value, square, nonzero };

/// acc = acc (C) map(src(k)) over the items.
template <Combine C, Map F, class Acc, class Src, int M, bool Contig>
struct ReduceKernel {
  Src src;
  Items<M> items;
  KOKKOS_INLINE_FUNCTION void operator()(const index_t t, Acc& acc) const {
    Kokkos::Array<index_t, M> k;
    index_t lo, hi;
    items.split(t, k, lo, hi);
    const auto in = src.template row<Contig>(k);
    for (index_t i = lo; i < hi; ++i) {
      if constexpr (F == Map::nonzero) {
        combine<C>(acc, static_cast<Acc>(in(i) ? 1 : 0));
      } else {
        const Acc x = static_cast<Acc>(in(i));
        combine<C>(acc, F == Map::square ? x * x : x);
      }
    }
  }
};

// ================================================================================================
// Host side of an expression: the tree of operands
// ================================================================================================

template <class S>
struct ScalarExpr {
  using spmd_expression = void;
  using value_type = S;
  static constexpr int rank = 0;
  S value;
};

template <UnOp Op, class R, class A>
struct UnaryExpr {
  using spmd_expression = void;
  using op = Un<Op, R>;
  using value_type = typename op::result;
  using memory_space = typename A::memory_space;
  static constexpr int rank = A::rank;
  A a;
  Index<rank> shape() const { return a.shape(); }
};

template <BinOp Op, class R, class A, class B>
struct BinaryExpr {
  using spmd_expression = void;
  using op = Bin<Op, R>;
  using value_type = typename op::result;
  using memory_space = typename std::conditional_t<(A::rank > 0), A, B>::memory_space;
  static constexpr int rank = A::rank > B::rank ? A::rank : B::rank;
  A a;
  B b;
  Index<rank> shape_;
  const Index<rank>& shape() const { return shape_; }
};

template <class R, class C, class A, class B>
struct WhereExpr {
  using spmd_expression = void;
  using value_type = R;
  static constexpr int rank = C::rank > A::rank ? (C::rank > B::rank ? C::rank : B::rank)
                                                : (A::rank > B::rank ? A::rank : B::rank);
  using memory_space =
      typename std::conditional_t<(C::rank > 0), C, std::conditional_t<(A::rank > 0), A, B>>::memory_space;
  C c;
  A a;
  B b;
  Index<rank> shape_;
  const Index<rank>& shape() const { return shape_; }
};

template <class X>
struct is_array : std::false_type {};
template <class T, int N, class M>
struct is_array<Array<T, N, M>> : std::true_type {};
template <class X>
struct is_view : std::false_type {};
template <class T, int M, int N, class Mem>
struct is_view<ArrayView<T, M, N, Mem>> : std::true_type {};

/// Arrays, views and expressions (not scalars).
template <class X>
inline constexpr bool is_operand_v = is_expression_v<X> || is_array<std::decay_t<X>>::value;
template <class X>
inline constexpr bool is_scalar_v = std::is_arithmetic_v<std::decay_t<X>>;

/// The tree node of an operand: an Array is its whole view, a scalar a ScalarExpr.
template <class T, int N, class M>
ArrayView<T, N, N, M> as_node(const Array<T, N, M>& a) {
  return view_of(a);
}
template <class X, std::enable_if_t<is_expression_v<X>, int> = 0>
const X& as_node(const X& x) {
  return x;
}
template <class S, std::enable_if_t<std::is_arithmetic_v<S>, int> = 0>
ScalarExpr<S> as_node(const S& s) {
  return ScalarExpr<S>{s};
}
template <class X>
using node_t = std::decay_t<decltype(as_node(std::declval<const X&>()))>;

/// The type two operands are converted to (NumPy's rule for Python scalars: a scalar takes the
/// array's type, unless it is floating and the array integral).
template <class A, class B>
struct promote {
  using VA = typename A::value_type;
  using VB = typename B::value_type;
  using common = decltype(VA() + VB());
  template <class V, class S>
  using with_scalar =
      std::conditional_t<std::is_floating_point_v<V> || (std::is_integral_v<S> && !std::is_same_v<V, bool>), V,
                         decltype(V() + S())>;
  using type = std::conditional_t<A::rank == 0, with_scalar<VB, VA>,
                                  std::conditional_t<B::rank == 0, with_scalar<VA, VB>, common>>;
};
template <class V>
using floating_t = std::conditional_t<std::is_floating_point_v<V>, V, double>;

/// The shape of the operands of rank > 0 (all equal, else a collective spmd::Error naming them;
/// the message is built only then: expressions are built in hot loops).
template <int R, class... X>
Index<R> common_shape(const char* fn, const X&... x) {
  Index<R> shape{};
  bool have = false, bad = false;
  auto one = [&](const auto& e) {
    if constexpr (std::decay_t<decltype(e)>::rank > 0) {
      if (have && !(e.shape() == shape)) bad = true;
      if (!have) shape = e.shape();
      have = true;
    }
  };
  (one(x), ...);
  if (bad) {
    std::string shapes;
    auto name = [&](const auto& e) {
      if constexpr (std::decay_t<decltype(e)>::rank > 0)
        shapes += (shapes.empty() ? "" : " and ") + shape_str(e.shape());
    };
    (name(x), ...);
    throw Error(str("spmd::", fn, ": operand shapes ", shapes,
                    " differ (operands must have equal shapes; only scalars broadcast)"),
                true);
  }
  return shape;
}

/// True when the operands of rank > 0 all have one rank (scalars have rank 0).
template <class... X>
constexpr bool same_ranks() {
  constexpr int ranks[] = {X::rank...};
  int rank = 0;
  for (const int r : ranks) {
    if (r == 0) continue;
    if (rank > 0 && r != rank) return false;
    rank = r;
  }
  return true;
}

template <BinOp Op, class A, class B>
auto make_binary(const A& a, const B& b) {
  using NA = node_t<A>;
  using NB = node_t<B>;
  static_assert(same_ranks<NA, NB>(), "spmd: operands have different numbers of axes (only scalars broadcast)");
  static_assert(std::is_same_v<typename std::conditional_t<(NA::rank > 0), NA, NB>::memory_space,
                               typename std::conditional_t<(NB::rank > 0), NB, NA>::memory_space>,
                "spmd: operands live in different memory spaces");
  using P = typename promote<NA, NB>::type;
  using R = std::conditional_t<Op == BinOp::land || Op == BinOp::lor, bool,
                               std::conditional_t<Op == BinOp::div || Op == BinOp::pow, floating_t<P>, P>>;
  constexpr int rank = NA::rank > NB::rank ? NA::rank : NB::rank;
  const NA x = as_node(a);
  const NB y = as_node(b);
  return BinaryExpr<Op, R, NA, NB>{x, y, common_shape<rank>(op_name(Op), x, y)};
}

template <UnOp Op, class R, class A>
auto make_unary(const A& a) {
  using NA = node_t<A>;
  static_assert(NA::rank > 0, "spmd: expression functions take an array, a view or an expression");
  return UnaryExpr<Op, R, NA>{as_node(a)};
}

template <class A, class B>
using if_binary =
    std::enable_if_t<(is_operand_v<A> && (is_operand_v<B> || is_scalar_v<B>)) || (is_scalar_v<A> && is_operand_v<B>),
                     int>;
template <class A>
using if_operand = std::enable_if_t<is_operand_v<A>, int>;
template <class A>
using value_of = typename node_t<A>::value_type;

// ---- visiting the array operands (the terminals), in tree order --------------------------------

template <class S, class F>
void visit_terminals(const ScalarExpr<S>&, F&) {}
template <class T, int M, int N, class Mem, class F>
void visit_terminals(const ArrayView<T, M, N, Mem>& v, F& f) {
  f(v);
}
template <UnOp Op, class R, class A, class F>
void visit_terminals(const UnaryExpr<Op, R, A>& e, F& f) {
  visit_terminals(e.a, f);
}
template <BinOp Op, class R, class A, class B, class F>
void visit_terminals(const BinaryExpr<Op, R, A, B>& e, F& f) {
  visit_terminals(e.a, f);
  visit_terminals(e.b, f);
}
template <class R, class C, class A, class B, class F>
void visit_terminals(const WhereExpr<R, C, A, B>& e, F& f) {
  visit_terminals(e.c, f);
  visit_terminals(e.a, f);
  visit_terminals(e.b, f);
}

/// The first array operand (the reference layout of a reduction).
template <class T, int M, int N, class Mem>
const ArrayView<T, M, N, Mem>& first_terminal(const ArrayView<T, M, N, Mem>& v) {
  return v;
}
template <UnOp Op, class R, class A>
const auto& first_terminal(const UnaryExpr<Op, R, A>& e) {
  return first_terminal(e.a);
}
template <BinOp Op, class R, class A, class B>
const auto& first_terminal(const BinaryExpr<Op, R, A, B>& e) {
  if constexpr (A::rank > 0)
    return first_terminal(e.a);
  else
    return first_terminal(e.b);
}
template <class R, class C, class A, class B>
const auto& first_terminal(const WhereExpr<R, C, A, B>& e) {
  if constexpr (C::rank > 0)
    return first_terminal(e.c);
  else if constexpr (A::rank > 0)
    return first_terminal(e.a);
  else
    return first_terminal(e.b);
}

// ---- binding: the device tree of an expression on this rank ------------------------------------

/// Where one array operand's elements are read on this rank: address of local point k = 0 and
/// address step per destination axis.
template <int M>
struct Source {
  const void* data = nullptr;
  Kokkos::Array<index_t, M> coef{};
};
/// The sources of an expression's K array operands, in tree order (no heap: hot loops build one
/// per assignment).
template <int M, std::size_t K>
struct Binding {
  std::array<Source<M>, (K > 0 ? K : 1)> sources{};
  std::size_t count = 0;  // filled so far
  std::size_t next = 0;   // bound so far
  void push(const Source<M>& s) { sources[count++] = s; }
};

/// The number of array operands of an expression.
template <class E>
struct terminal_count;
template <class S>
struct terminal_count<ScalarExpr<S>> : std::integral_constant<std::size_t, 0> {};
template <class T, int M, int N, class Mem>
struct terminal_count<ArrayView<T, M, N, Mem>> : std::integral_constant<std::size_t, 1> {};
template <UnOp Op, class R, class A>
struct terminal_count<UnaryExpr<Op, R, A>> : terminal_count<A> {};
template <BinOp Op, class R, class A, class B>
struct terminal_count<BinaryExpr<Op, R, A, B>>
    : std::integral_constant<std::size_t, terminal_count<A>::value + terminal_count<B>::value> {};
template <class R, class C, class A, class B>
struct terminal_count<WhereExpr<R, C, A, B>>
    : std::integral_constant<std::size_t,
                             terminal_count<C>::value + terminal_count<A>::value + terminal_count<B>::value> {};

template <class S, int M, std::size_t K>
ScalarDev<S> bind(const ScalarExpr<S>& e, Binding<M, K>&) {
  return ScalarDev<S>{e.value};
}
template <class T, int M, int N, class Mem, std::size_t K>
TermDev<T, M> bind(const ArrayView<T, M, N, Mem>&, Binding<M, K>& b) {
  const Source<M>& s = b.sources[b.next++];
  return TermDev<T, M>{static_cast<const T*>(s.data), s.coef};
}
template <UnOp Op, class R, class A, int M, std::size_t K>
auto bind(const UnaryExpr<Op, R, A>& e, Binding<M, K>& b) {
  auto a = bind(e.a, b);
  return UnaryDev<Un<Op, R>, decltype(a)>{a};
}
template <BinOp Op, class R, class A, class B, int M, std::size_t K>
auto bind(const BinaryExpr<Op, R, A, B>& e, Binding<M, K>& b) {
  auto x = bind(e.a, b);
  auto y = bind(e.b, b);
  return BinaryDev<Bin<Op, R>, decltype(x), decltype(y)>{x, y};
}
template <class R, class C, class A, class B, int M, std::size_t K>
auto bind(const WhereExpr<R, C, A, B>& e, Binding<M, K>& b) {
  auto c = bind(e.c, b);
  auto x = bind(e.a, b);
  auto y = bind(e.b, b);
  return WhereDev<R, decltype(c), decltype(x), decltype(y)>{c, x, y};
}

/// Where `a`'s elements at parent indices sel(box.lo + k) lie in this rank's storage (LayoutRight,
/// halo included): address of k = 0 and address step per axis of k.
template <class T, int N, int M, class Mem>
Source<M> source_of(const Array<T, N, Mem>& a, const Selection<N, M>& sel, const Box<M>& box) {
  const auto& v = a.local_with_halo();
  index_t stride[N];
  index_t s = 1;
  for (int d = N - 1; d >= 0; --d) {
    stride[d] = s;
    s *= static_cast<index_t>(v.extent(static_cast<unsigned>(d)));
  }
  Source<M> src;
  index_t offset = 0;
  for (int d = 0; d < N; ++d) {
    const int k = sel.map[d];
    const index_t i = sel.start[d] + (k >= 0 ? sel.step[d] * box.lo[k] : 0);
    offset += (i - a.owned().lo[d] + a.halo()[d]) * stride[d];
    if (k >= 0) src.coef[k] += sel.step[d] * stride[d];
  }
  // (an empty box is never read: keep the pointer inside the allocation)
  src.data = v.data() + (box.empty() ? 0 : offset);
  return src;
}

/// Row-major addressing of a compact buffer holding the box `box`.
template <int M>
Kokkos::Array<index_t, M> compact_coef(const Box<M>& box) {
  Kokkos::Array<index_t, M> c;
  index_t s = 1;
  for (int d = M - 1; d >= 0; --d) {
    c[d] = s;
    s *= box.extent(d);
  }
  return c;
}

// ---- launching ----------------------------------------------------------------------------------

template <class Exec, class Dst, class Src, int M>
void launch_assign(const char* label, const Dst& dst, const Src& src, const Box<M>& box, bool contig) {
  if (box.empty()) return;
  const auto items = Items<M>::template make<Exec>(box);
  const auto policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<index_t>>(Exec(), 0, items.count());
  if (contig)
    Kokkos::parallel_for(label, policy, AssignKernel<Dst, Src, M, true>{dst, src, items});
  else
    Kokkos::parallel_for(label, policy, AssignKernel<Dst, Src, M, false>{dst, src, items});
}

template <Combine C, Map F, class Acc, class Exec, class Src, int M>
Acc launch_reduce(const char* label, const Src& src, const Box<M>& box, bool contig) {
  Acc result{};
  const auto items = Items<M>::template make<Exec>(box);
  const auto policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<index_t>>(Exec(), 0, box.empty() ? 0 : items.count());
  if (contig)
    Kokkos::parallel_reduce(label, policy, ReduceKernel<C, F, Acc, Src, M, true>{src, items},
                            reducer_t<C, Acc>(result));
  else
    Kokkos::parallel_reduce(label, policy, ReduceKernel<C, F, Acc, Src, M, false>{src, items},
                            reducer_t<C, Acc>(result));
  return result;
}

// ---- classification and the cache of moves ------------------------------------------------------

/// How an operand is read: in place (its own block and halo) or moved into a temporary.
enum class Access { direct, moved };

/// A cached move: the plan that copies an operand's selection into the target's layout, and the
/// temporary it fills (when the operand is read through one).
struct CachedMove {
  virtual ~CachedMove() = default;
  std::uint64_t used = 0;
};
template <class To, int No, int M, class Mem, int Nd>
struct MoveEntry : CachedMove {
  Distribution<No> from;
  Selection<No, M> sel;
  Selection<Nd, M> dsel;
  Index<M> extent{};
  std::unique_ptr<RegionPlan<To, No, M, Mem, Nd>> plan;
  Array<To, Nd, Mem> temp;       // made on first use as an operand's temporary
  const void* source = nullptr;  // the array the temporary was last filled from (its identity)
};

/// Per-array state of the expression module (Array::impl_expr_state()).
template <class T, class Mem>
struct ExprState {
  static constexpr std::size_t max_moves = 16;
  std::vector<std::unique_ptr<CachedMove>> moves;
  std::uint64_t clock = 0;
  std::uint64_t epoch = 0;        // the clock when the current assignment began: its entries stay
  Kokkos::View<T*, Mem> scratch;  // the aliasing buffer (grows, never shrinks)
  Kokkos::View<T*, Mem> lagged;   // the ring and edge buffers of LaggedAssign (grows, never shrinks)
};

template <class T, int N, class Mem>
ExprState<T, Mem>& expr_state(const Array<T, N, Mem>& a) {
  auto& p = a.impl_expr_state();
  if (!p) p = std::make_shared<ExprState<T, Mem>>();
  return *static_cast<ExprState<T, Mem>*>(p.get());
}

template <int N, int M>
bool same_selection(const Selection<N, M>& a, const Selection<N, M>& b) {
  return a.start == b.start && a.step == b.step && a.map == b.map;
}

/// The cached move of `src` into the layout of `target` at selection dsel (built on first use:
/// collective over the target's communicator; every rank looks up the same entries, because
/// the key holds replicated data only). An entry serves one array per assignment: operands of
/// two arrays with one key (`u[1:-1, 0]` and `p[1:-1, 0]`, arrays on one distribution) get two
/// entries, each with its own temporary; when `source` (the operand's array identity, the same
/// relation on every rank) is given, a repeat of an operand the current assignment has already
/// moved finds its entry again, and `*filled` tells the caller that its temporary is current.
template <class To, int No, int M, class Mem, class Td, int Nd>
MoveEntry<To, No, M, Mem, Nd>& find_move(ExprState<Td, Mem>& st, const Array<Td, Nd, Mem>& target,
                                         const ArrayView<To, M, No, Mem>& src, const Selection<Nd, M>& dsel,
                                         const char* fn, const void* source = nullptr, bool* filled = nullptr) {
  using E = MoveEntry<To, No, M, Mem, Nd>;
  ++st.clock;
  if (filled) *filled = false;
  for (auto& m : st.moves) {
    auto* e = dynamic_cast<E*>(m.get());
    if (!e || !(e->from == src.parent().distribution()) || !same_selection(e->sel, src.selection()) ||
        !same_selection(e->dsel, dsel) || !(e->extent == src.shape()))
      continue;
    const bool claimed = e->used >= st.epoch;  // by an earlier operand of this assignment
    if (claimed && !(source && e->source == source)) continue;
    if (filled) *filled = claimed;
    e->used = st.clock;
    e->source = source;
    return *e;
  }
  auto e = std::make_unique<E>();
  e->source = source;
  e->from = src.parent().distribution();
  e->sel = src.selection();
  e->dsel = dsel;
  e->extent = src.shape();
  e->plan = std::make_unique<RegionPlan<To, No, M, Mem, Nd>>(target.comm(), e->from, e->sel, target.distribution(),
                                                             dsel, e->extent, Backend::automatic, fn);
  e->used = st.clock;
  if (st.moves.size() >= ExprState<Td, Mem>::max_moves) {
    // drop the least recently used entry, never one the current assignment reads
    std::size_t oldest = st.moves.size();
    for (std::size_t i = 0; i < st.moves.size(); ++i)
      if (st.moves[i]->used < st.epoch && (oldest == st.moves.size() || st.moves[i]->used < st.moves[oldest]->used))
        oldest = i;
    if (oldest < st.moves.size()) st.moves.erase(st.moves.begin() + static_cast<std::ptrdiff_t>(oldest));
  }
  st.moves.push_back(std::move(e));
  return static_cast<E&>(*st.moves.back());
}

/// True when the two communicators have the same ranks in the same order (MPI_Comm_compare is
/// local).
inline bool congruent(const Comm& a, const Comm& b) {
  if (a == b) return true;
  int result = MPI_UNEQUAL;
  SPMD_MPI_CHECK(MPI_Comm_compare(a.raw(), b.raw(), &result), "spmd::assign");
  return result == MPI_IDENT || result == MPI_CONGRUENT;
}

/// A shift by `delta` along parent axis a of `d` as a halo read sees it. On a periodic axis the
/// periodic halo holds index i of the axis also at i + n and i - n, so a shift beyond the halo is
/// one by delta - n (or delta + n) when that fits in the halo: column 0 read for column n - 1 (a
/// periodic boundary column of CFD codes) is a shift by +1. Otherwise delta. Local.
template <int N>
index_t halo_shift(const Distribution<N>& d, int a, index_t delta) {
  const index_t h = d.halo()[a], n = d.extent(a);
  if (!d.periodic()[a] || (delta < 0 ? -delta : delta) <= h) return delta;
  const index_t wrapped = delta > 0 ? delta - n : delta + n;
  return (wrapped < 0 ? -wrapped : wrapped) <= h ? wrapped : delta;
}
/// The selection a halo read of an operand (selection s, parent distribution d) reads through:
/// s with each start at the target's start plus halo_shift (s itself unless an axis wraps).
/// Local.
template <int No, int Nd, int M>
Selection<No, M> halo_selection(const Distribution<No>& d, Selection<No, M> s, const Selection<Nd, M>& ts) {
  if constexpr (No == Nd)
    for (int a = 0; a < No; ++a) s.start[a] = ts.start[a] + halo_shift(d, a, s.start[a] - ts.start[a]);
  return s;
}

/// How operand `o` is read when evaluating over the target (parent `tp`, selection `ts`, the
/// view the destination or the reduction's first operand is). From replicated data only. Throws
/// the collective "halo too narrow" error.
template <class To, int No, int M, class Mem, class Td, int Nd, class Name>
Access classify(const char* fn, const ArrayView<To, M, No, Mem>& o, const Array<Td, Nd, Mem>& tp,
                const Selection<Nd, M>& ts, const Name& target_name) {
  const auto& op = o.parent();
  if (op.is_null()) throw Error(str(fn, ": operand is a null array"), true);
  if (!congruent(op.comm(), tp.comm()))
    throw Error(str(fn, ": operand ", o.describe(), " lives on another communicator than ", target_name(),
                    " (use spmd::redistribute to move it first)"),
                true);
  if constexpr (No != Nd) {
    return Access::moved;
  } else {
    const auto& os = o.selection();
    if (op.shape() != tp.shape()) return Access::moved;
    for (int a = 0; a < No; ++a)
      if (os.map[a] != ts.map[a] || (os.map[a] >= 0 && os.step[a] != ts.step[a])) return Access::moved;
    // Co-indexed: operand index = target index + delta along every parent axis (on a periodic
    // axis, modulo its length: see halo_shift).
    bool moved = false;
    for (int a = 0; a < No; ++a) {
      const index_t delta = halo_shift(op.distribution(), a, os.start[a] - ts.start[a]);
      if (delta == 0) continue;
      const index_t reach = delta < 0 ? -delta : delta;
      const int h = op.halo()[a];
      if (os.map[a] >= 0 && h > 0 && reach > h)
        throw Error(str(fn, ": operand ", o.describe(), " reads '", op.label(), "' shifted by ", delta, " along axis ",
                        a, " relative to ", target_name(), ", but the halo of '", op.label(), "' is ", h,
                        " wide there: widen the halo (spmd::halo), or give '", op.label(), "' no halo along axis ", a,
                        " to have the operand moved automatically (halo reads read "
                        "what the halo holds: call exchange_halo() first)"),
                    true);
      if (reach > h) moved = true;  // no halo along a kept axis, or another plane of a dropped axis
    }
    if (moved || !op.distribution().same_layout(tp.distribution()) || !(op.comm() == tp.comm())) return Access::moved;
    return Access::direct;
  }
}

/// The global index range a selection covers along parent axis a, as [lo, hi] (empty: lo > hi).
template <int N, int M>
std::pair<index_t, index_t> covered(const Selection<N, M>& s, const std::common_type_t<Index<M>>& shape, int a) {
  const int k = s.map[a];
  if (k < 0) return {s.start[a], s.start[a]};
  if (shape[k] == 0) return {1, 0};
  const index_t last = s.start[a] + s.step[a] * (shape[k] - 1);
  return {s.start[a] < last ? s.start[a] : last, s.start[a] < last ? last : s.start[a]};
}
/// True when the two selections of one parent may share an element (bounding boxes meet).
template <int N, int M>
bool may_overlap(const Selection<N, M>& a, const std::common_type_t<Index<M>>& sa, const Selection<N, M>& b,
                 const std::common_type_t<Index<M>>& sb) {
  for (int d = 0; d < N; ++d) {
    const auto x = covered(a, sa, d), y = covered(b, sb, d);
    if (x.first > x.second || y.first > y.second || x.second < y.first || y.second < x.first) return false;
  }
  return true;
}

template <class Exec, class T, class Mem, class Src, int M>
void launch_lagged(ExprState<T, Mem>& st, const DstDev<T, M>& dst, const Src& src, const Box<M>& box,
                   const index_t reach, const bool contig) {
  LaggedAssign<DstDev<T, M>, Src, M, false> k{dst, src, {}, 0, 0, 0, 0, nullptr, nullptr, false};
  for (int d = 0; d < M; ++d) k.ext[d] = box.extent(d);
  if constexpr (M == 1) {
    k.unit = host_chunk;
    k.nunits = (k.ext[0] + host_chunk - 1) / host_chunk;
    k.lag = (reach + host_chunk - 1) / host_chunk;
  } else {
    k.unit = box.size() / k.ext[0];
    k.nunits = k.ext[0];
    k.lag = reach;
  }
  const index_t conc = static_cast<index_t>(Exec().concurrency());
  const index_t want = expr_config().bands > 0 ? expr_config().bands : conc;
  k.nbands = std::max<index_t>(1, std::min(want, k.nunits));
  const auto need = static_cast<std::size_t>(k.nbands * (3 * k.lag + 1) * k.unit);
  if (st.lagged.extent(0) < need)
    st.lagged = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::lagged"), need);
  k.ring = st.lagged.data();
  k.edge = k.ring + k.nbands * (k.lag + 1) * k.unit;
  const auto policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<index_t>>(Exec(), 0, k.nbands);
  auto run = [&](auto kernel) {
    Kokkos::parallel_for("spmd::expr::assign_lagged", policy, kernel);
    if (kernel.lag == 0) return;
    kernel.phase2 = true;
    Kokkos::parallel_for("spmd::expr::assign_lagged_edges", policy, kernel);
  };
  if (contig)
    run(LaggedAssign<DstDev<T, M>, Src, M, true>{k.dst, k.src, k.ext, k.unit, k.nunits, k.lag, k.nbands, k.ring, k.edge,
                                                 false});
  else
    run(k);
}

/// Whether an operand read in place also reads the written storage at other positions, and how
/// far along view axis 0 (in view indices).
struct Alias {
  bool aliased = false;
  index_t reach = 0;
};

/// Resolves every array operand of `e` against the target view (parent tp, selection ts, box J
/// of this rank): classification, moves into cached temporaries, and where each is read.
/// Returns the binding and fills `alias` (only meaningful when the target is written).
/// target_name() names the target in errors (called only then).
template <class E, class Td, int Nd, class Mem, int M, class Name>
Binding<M, terminal_count<E>::value> resolve(const char* fn, const E& e, const Array<Td, Nd, Mem>& tp,
                                             const Selection<Nd, M>& ts, const std::common_type_t<Index<M>>& tshape,
                                             const Box<M>& box, ExprState<Td, Mem>& st, const Name& target_name,
                                             Alias& alias) {
  constexpr std::size_t K = terminal_count<E>::value;
  std::array<Access, (K > 0 ? K : 1)> how{};
  std::size_t counted = 0;
  auto classify_one = [&](const auto& o) { how[counted++] = classify(fn, o, tp, ts, target_name); };
  visit_terminals(e, classify_one);  // all verdicts first: an error leaves nothing half done
  Binding<M, K> b;
  alias = Alias{};
  st.epoch = st.clock + 1;
  std::size_t t = 0;
  auto resolve_one = [&](const auto& o) {
    if (how[t++] == Access::direct) {
      b.push(source_of(o.parent(), halo_selection(o.parent().distribution(), o.selection(), ts), box));
      if constexpr (std::is_same_v<std::decay_t<decltype(o.parent())>, Array<Td, Nd, Mem>>) {
        const auto* mine = tp.local_with_halo().data();
        if (mine && o.parent().local_with_halo().data() == mine && !same_selection(o.selection(), ts) &&
            may_overlap(o.selection(), o.shape(), ts, tshape)) {
          // read in place, so co-indexed: a shift of delta along the parent axis of view axis 0
          // reads ceil(|delta| / |step|) view indices away along it
          alias.aliased = true;
          for (int a = 0; a < Nd; ++a)
            if (ts.map[a] == 0) {
              const index_t delta = std::abs(o.selection().start[a] - ts.start[a]), step = std::abs(ts.step[a]);
              alias.reach = std::max(alias.reach, (delta + step - 1) / step);
            }
        }
      }
      return;
    }
    bool filled = false;
    auto& m = find_move(st, tp, o, ts, fn, &o.parent().impl_expr_state(), &filled);
    using Tmp = std::decay_t<decltype(m.temp)>;
    if (m.temp.is_null()) m.temp = Tmp(tp.distribution(), "spmd::expr::moved");
    if (!filled) m.plan->apply(o.parent(), m.temp);
    b.push(source_of(m.temp, ts, box));
  };
  visit_terminals(e, resolve_one);
  return b;
}

template <int M, std::size_t K>
bool contiguous(const Binding<M, K>& b, const std::common_type_t<Kokkos::Array<index_t, M>>& dst_coef) {
  if (dst_coef[M - 1] != 1) return false;
  for (std::size_t t = 0; t < b.count; ++t)
    if (b.sources[t].coef[M - 1] != 1) return false;
  return true;
}

/// dst = e, dst a view. See the file comment.
template <class Td, int M, int Nd, class Mem, class E>
void assign_expr(const ArrayView<Td, M, Nd, Mem>& dst, const E& e, const char* fn,
                 ExprState<Td, Mem>* state = nullptr) {
  using Exec = typename Mem::execution_space;
  static_assert(E::rank == M || E::rank == 0,
                "spmd::assign: the expression has another number of axes than the "
                "destination");
  const auto& tp = dst.parent();
  if (tp.is_null()) throw Error(str(fn, ": the destination is a null array"), true);
  if constexpr (E::rank > 0) {
    if (e.shape() != dst.shape())
      throw Error(str(fn, ": destination ", dst.describe(), " has shape ", shape_str(dst.shape()),
                      " but the expression has shape ", shape_str(e.shape())),
                  true);
  }
  ExprState<Td, Mem>& st = state ? *state : expr_state(tp);
  const Box<M> box = dst.owned();
  // A view of another array that cannot be read in place: one plan straight into the destination.
  auto name = [&] { return "destination " + dst.describe(); };
  if constexpr (is_view<E>::value && std::is_same_v<typename E::value_type, Td>) {
    if (classify(fn, e, tp, dst.selection(), name) == Access::moved) {
      st.epoch = st.clock + 1;
      find_move(st, tp, e, dst.selection(), fn).plan->apply(e.parent(), tp);
      return;
    }
  }
  Alias alias;
  auto b = resolve(fn, e, tp, dst.selection(), dst.shape(), box, st, name, alias);
  const auto src = bind(e, b);
  Source<M> d = source_of(tp, dst.selection(), box);
  DstDev<Td, M> out{static_cast<Td*>(const_cast<void*>(d.data)), d.coef};
  if (!alias.aliased) {
    launch_assign<Exec>("spmd::expr::assign", out, src, box, contiguous(b, d.coef));
    return;
  }
  if (box.empty()) return;
  // The destination's storage is read at other positions. On the host: in place, a few units
  // behind (LaggedAssign); on a device: into a buffer, then copied back.
  if constexpr (host_accessible<typename Exec::memory_space>()) {
    if (expr_config().lagged) {
      launch_lagged<Exec>(st, out, src, box, alias.reach, contiguous(b, d.coef));
      return;
    }
  }
  const auto n = static_cast<std::size_t>(box.size());
  if (st.scratch.extent(0) < n)
    st.scratch = Kokkos::View<Td*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::scratch"), n);
  const Kokkos::Array<index_t, M> cc = compact_coef(box);
  launch_assign<Exec>("spmd::expr::assign_buffered", DstDev<Td, M>{st.scratch.data(), cc}, src, box, contiguous(b, cc));
  launch_assign<Exec>("spmd::expr::copy_back", out, TermDev<Td, M>{st.scratch.data(), cc}, box, d.coef[M - 1] == 1);
}

/// Reduce map(e) with C over its elements (the first operand's layout is the reference). Every
/// rank gets the same result. fn names the public function in errors, label the kernel.
/// Collective.
template <Combine C, Map F, class Acc, class E>
Acc reduce_expr(const char* fn, const char* label, const E& e) {
  static_assert(E::rank > 0, "spmd: reductions take an array, a view or an expression");
  const auto& anchor = first_terminal(e);
  using Anchor = std::decay_t<decltype(anchor)>;
  using Mem = typename Anchor::memory_space;
  using Exec = typename Mem::execution_space;
  const auto& tp = anchor.parent();
  if (tp.is_null()) throw Error(str(fn, ": operand is a null array"), true);
  const Box<Anchor::rank> box = anchor.owned();
  Alias alias;
  auto& st = expr_state(tp);
  auto name = [&] { return "the first operand " + anchor.describe(); };
  auto b = resolve(fn, e, tp, anchor.selection(), anchor.shape(), box, st, name, alias);
  const auto src = bind(e, b);
  Kokkos::Array<index_t, Anchor::rank> unit{};
  unit[Anchor::rank - 1] = 1;
  return combine_ranks<C>(tp.comm(), launch_reduce<C, F, Acc, Exec>(label, src, box, contiguous(b, unit)));
}

template <class E>
index_t expr_size(const E& e) {
  index_t n = 1;
  for (int d = 0; d < E::rank; ++d) n *= e.shape()[d];
  return n;
}

template <class E>
void require_nonempty_expr(const char* fn, const E& e) {
  if (expr_size(e) == 0)
    throw Error(str(fn, ": zero-size operand (shape ", shape_str(e.shape()), ") has no ", fn + 6,
                    " (the reduction has no identity)"),
                true);
}

}  // namespace impl

// ================================================================================================
// Public API
// ================================================================================================

/// dst = src with NumPy semantics: dst is an Array (all of it) or an ArrayView; src a scalar, an
/// Array, an ArrayView or an expression of dst's shape. Writes only dst's owned points (halos
/// untouched). Collective over dst's communicator (see the file comment for what moves).
template <class Dst, class Src>
void assign(const Dst& dst, const Src& src) {
  constexpr const char* fn = "spmd::assign";
  if constexpr (impl::is_array<Dst>::value) {
    assign(view_of(dst), src);
  } else {
    static_assert(impl::is_view<Dst>::value, "spmd::assign: the destination is an Array or an ArrayView");
    if constexpr (std::is_arithmetic_v<Src>) {
      impl::assign_expr(dst, impl::ScalarExpr<typename Dst::value_type>{static_cast<typename Dst::value_type>(src)},
                        fn);
    } else {
      static_assert(impl::is_operand_v<Src>, "spmd::assign: the source is a scalar, an Array, a view or an expression");
      impl::assign_expr(dst, impl::as_node(src), fn);
    }
  }
}

// ---- operators ------------------------------------------------------------------------------------

template <class A, class B, impl::if_binary<A, B> = 0>
auto operator+(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::add>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator-(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::sub>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator*(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::mul>(a, b);
}
/// True division (integers divide as doubles, as NumPy's `/`).
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator/(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::div>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator<(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::lt>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator<=(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::le>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator>(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::gt>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator>=(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::ge>(a, b);
}
/// Element-wise equality (a bool expression), as NumPy's `==`.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator==(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::eq>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator!=(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::ne>(a, b);
}
/// Element-wise logical and/or/not (NumPy's logical_and, logical_or, logical_not).
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator&&(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::land>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator||(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::lor>(a, b);
}
template <class A, impl::if_operand<A> = 0>
auto operator!(const A& a) {
  return impl::make_unary<impl::UnOp::lnot, bool>(a);
}
template <class A, impl::if_operand<A> = 0>
auto operator-(const A& a) {
  using V = impl::value_of<A>;
  return impl::make_unary<impl::UnOp::neg, std::conditional_t<std::is_same_v<V, bool>, int, V>>(a);
}

// ---- functions --------------------------------------------------------------------------------------

template <class A, impl::if_operand<A> = 0>
auto abs(const A& a) {
  using V = impl::value_of<A>;
  return impl::make_unary<impl::UnOp::abs, std::conditional_t<std::is_same_v<V, bool>, int, V>>(a);
}
template <class A, impl::if_operand<A> = 0>
auto sqrt(const A& a) {
  return impl::make_unary<impl::UnOp::sqrt, impl::floating_t<impl::value_of<A>>>(a);
}
template <class A, impl::if_operand<A> = 0>
auto exp(const A& a) {
  return impl::make_unary<impl::UnOp::exp, impl::floating_t<impl::value_of<A>>>(a);
}
template <class A, impl::if_operand<A> = 0>
auto log(const A& a) {
  return impl::make_unary<impl::UnOp::log, impl::floating_t<impl::value_of<A>>>(a);
}
template <class A, impl::if_operand<A> = 0>
auto sin(const A& a) {
  return impl::make_unary<impl::UnOp::sin, impl::floating_t<impl::value_of<A>>>(a);
}
template <class A, impl::if_operand<A> = 0>
auto cos(const A& a) {
  return impl::make_unary<impl::UnOp::cos, impl::floating_t<impl::value_of<A>>>(a);
}
/// The elements converted to U (NumPy's astype, lazily).
template <class U, class A, impl::if_operand<A> = 0>
auto astype(const A& a) {
  return impl::make_unary<impl::UnOp::cast, U>(a);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto pow(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::pow>(a, b);
}
/// Element-wise minimum / maximum (NumPy's minimum, maximum; not the reductions min, max).
template <class A, class B, impl::if_binary<A, B> = 0>
auto minimum(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::minimum>(a, b);
}
template <class A, class B, impl::if_binary<A, B> = 0>
auto maximum(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::maximum>(a, b);
}
/// cond ? a : b element-wise (NumPy's where); a and b may be scalars.
template <class C, class A, class B,
          std::enable_if_t<impl::is_operand_v<C> && (impl::is_operand_v<A> || impl::is_scalar_v<A>)&&(
                                                        impl::is_operand_v<B> || impl::is_scalar_v<B>),
                           int> = 0>
auto where(const C& cond, const A& a, const B& b) {
  using NC = impl::node_t<C>;
  using NA = impl::node_t<A>;
  using NB = impl::node_t<B>;
  static_assert(impl::same_ranks<NC, NA, NB>(), "spmd::where: operands have different numbers of axes");
  using R = typename impl::promote<NA, NB>::type;
  const NC c = impl::as_node(cond);
  const NA x = impl::as_node(a);
  const NB y = impl::as_node(b);
  constexpr int rank = impl::WhereExpr<R, NC, NA, NB>::rank;
  return impl::WhereExpr<R, NC, NA, NB>{c, x, y, impl::common_shape<rank>("where", c, x, y)};
}

// ---- reductions of expressions and views (Collective; the same result on every rank) ------------

template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto sum(const E& e) {
  using V = typename E::value_type;
  using Acc = std::conditional_t<std::is_same_v<V, bool>, index_t, V>;
  return impl::reduce_expr<impl::Combine::sum, impl::Map::value, Acc>("spmd::sum", "spmd::expr::sum", e);
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto prod(const E& e) {
  return impl::reduce_expr<impl::Combine::prod, impl::Map::value, typename E::value_type>("spmd::prod",
                                                                                          "spmd::expr::prod", e);
}
/// Smallest element; throws for a zero-size operand.
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto min(const E& e) {
  impl::require_nonempty_expr("spmd::min", e);
  return impl::reduce_expr<impl::Combine::min, impl::Map::value, typename E::value_type>("spmd::min", "spmd::expr::min",
                                                                                         e);
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto max(const E& e) {
  impl::require_nonempty_expr("spmd::max", e);
  return impl::reduce_expr<impl::Combine::max, impl::Map::value, typename E::value_type>("spmd::max", "spmd::expr::max",
                                                                                         e);
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto mean(const E& e) {
  impl::require_nonempty_expr("spmd::mean", e);
  using R = impl::real_t<typename E::value_type>;
  return impl::reduce_expr<impl::Combine::sum, impl::Map::value, R>("spmd::mean", "spmd::expr::mean", e) /
         static_cast<R>(impl::expr_size(e));
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto norm2(const E& e) {
  using R = impl::real_t<typename E::value_type>;
  return std::sqrt(impl::reduce_expr<impl::Combine::sum, impl::Map::square, R>("spmd::norm2", "spmd::expr::norm2", e));
}
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
auto norm_inf(const E& e) {
  return impl::reduce_expr<impl::Combine::absmax, impl::Map::value, typename E::value_type>("spmd::norm_inf",
                                                                                            "spmd::expr::norm_inf", e);
}
/// Number of elements that are nonzero (true, for a bool expression).
template <class E, impl::if_operand<E> = 0>
index_t count_nonzero(const E& e) {
  return impl::reduce_expr<impl::Combine::sum, impl::Map::nonzero, index_t>(
      "spmd::count_nonzero", "spmd::expr::count_nonzero", impl::as_node(e));
}
/// True when some element is nonzero (false for a zero-size operand).
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
bool any_of(const E& e) {
  return count_nonzero(e) > 0;
}
/// True when every element is nonzero (true for a zero-size operand).
template <class E, std::enable_if_t<impl::is_expression_v<E>, int> = 0>
bool all_of(const E& e) {
  return count_nonzero(e) == impl::expr_size(e);
}
/// Sum of a * b over all elements (a, b arrays, views or expressions of one shape).
template <class A, class B,
          std::enable_if_t<impl::is_operand_v<A> && impl::is_operand_v<B> &&
                               (impl::is_expression_v<A> || impl::is_expression_v<B>),
                           int> = 0>
auto dot(const A& a, const B& b) {
  return sum(a * b);
}

/// A new Array holding the elements of a view or expression, on an automatic distribution of
/// its shape over the first operand's communicator (options: halo, periodic, grid, label).
/// Collective.
template <class E, class... Opts, std::enable_if_t<impl::is_expression_v<E> && impl::are_options_v<Opts...>, int> = 0>
auto copy(const E& e, const Opts&... opts) {
  static_assert(E::rank > 0, "spmd::copy: needs an array operand");
  const auto& anchor = impl::first_terminal(e);
  using Mem = typename std::decay_t<decltype(anchor)>::memory_space;
  using T = typename E::value_type;
  const Distribution<E::rank> d(anchor.comm(), e.shape(), opts...);
  Array<T, E::rank, Mem> out(d, impl::label_or("spmd::copy", opts...));
  impl::ExprState<T, Mem> once;  // plans for a one-off copy are not kept
  impl::assign_expr(view_of(out), e, "spmd::copy", &once);
  return out;
}

// ---- compound assignment of views ----------------------------------------------------------------

template <class T, int M, int N, class Mem>
template <class E>
ArrayView<T, M, N, Mem>& ArrayView<T, M, N, Mem>::operator+=(const E& e) {
  assign(*this, *this + e);
  return *this;
}
template <class T, int M, int N, class Mem>
template <class E>
ArrayView<T, M, N, Mem>& ArrayView<T, M, N, Mem>::operator-=(const E& e) {
  assign(*this, *this - e);
  return *this;
}
template <class T, int M, int N, class Mem>
template <class E>
ArrayView<T, M, N, Mem>& ArrayView<T, M, N, Mem>::operator*=(const E& e) {
  assign(*this, *this * e);
  return *this;
}
template <class T, int M, int N, class Mem>
template <class E>
ArrayView<T, M, N, Mem>& ArrayView<T, M, N, Mem>::operator/=(const E& e) {
  assign(*this, *this / e);
  return *this;
}

}  // namespace spmd
