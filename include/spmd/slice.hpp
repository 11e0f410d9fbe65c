#pragma once
/// \file slice.hpp
/// NumPy-style slices of distributed arrays: spmd::slice, spmd::all, spmd::none and the view they
/// make, spmd::ArrayView<T, M, N, MemorySpace>.
///
///   auto u = spmd::zeros<double>(comm, {n, n}, spmd::halo(1));
///   auto center = u(spmd::slice(1, -1), spmd::slice(1, -1));   // u[1:-1, 1:-1]
///   auto row = u(0);                                           // u[0] (1-D: the axis is dropped)
///   auto rev = u(spmd::all, spmd::slice(spmd::none, spmd::none, -1));   // u[:, ::-1]
///   u(spmd::all, 0) = -273.15;                                 // u[:, 0] = -273.15
///
/// Rules (NumPy's): a slice's start and stop count from the end when negative and are clamped
/// to the axis as Python's `slice.indices` does (so out-of-range slices are empty, never an
/// error); `spmd::none` is an omitted start or stop (needed for negative steps: `a[::-1]`,
/// `a[5::-2]`); a step may be any nonzero integer; an integer index drops its axis (negative
/// counts from the end; out of range is an error); omitted trailing axes are `all`.
///
/// A view is a handle: the parent Array's storage (shared, unlike copies of an Array) plus an affine
/// impl::Selection from the view's indices to the parent's global indices. Slicing a view
/// composes the selections. Nothing moves when a view is made (Local). Assigning to a view
/// writes the parent's owned points inside the selection (never its halo), with NumPy's
/// semantics, and is collective (its body is in expr.hpp: include <spmd.hpp> or <spmd/expr.hpp>).
/// spmd::copy(view) makes a new Array.
///
/// A view is copied as a handle (`auto v2 = v;` shares the storage) and written only through
/// assignment from something else: `v = scalar`, `v = array`, `v = expression`, or a view of
/// another type. Assigning a view to a view of the same type (`v = w`, also `v = u(...)`) does
/// not compile (the operators are deleted), because it would have to mean either "write the
/// elements" or "rebind the handle", and std::swap, std::vector and the standard algorithms
/// assume the second: write `spmd::assign(v, w)` to copy w's elements into v's (NumPy's `v[...]
/// = w`, also when they overlap). std::swap of two views therefore does not compile either; swap
/// the Arrays (`std::swap(u, next)`, `spmd::swap`: moves, nothing is copied).
///
/// A view holds the parent's storage, not the parent's name: after `spmd::swap(u, next)` (or
/// `u = std::move(next)`) a view made from u before reads and writes the storage that is now
/// next's, as a NumPy view made before `u, nxt = nxt, u` does. Make the views of a double-buffer
/// loop inside the loop (Local, no allocation), or make one set per buffer.

#include <Kokkos_Core.hpp>

#include <array>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/impl/selection.hpp"

namespace spmd {

/// An omitted slice start or stop (Python's None): `spmd::slice(spmd::none, spmd::none, -1)`.
struct None {};
inline constexpr None none{};  ///< the omitted start or stop

/// A whole axis (Python's `:`).
struct All {};
inline constexpr All all{};  ///< a whole axis

/// start:stop:step of one axis, before normalisation against the axis length.
struct Slice {
  index_t start = 0;       ///< first index (negative: from the end)
  index_t stop = 0;        ///< one past the last (negative: from the end)
  index_t step = 1;        ///< stride (negative: backwards)
  bool has_start = false;  ///< false: start omitted (Python's None)
  bool has_stop = false;   ///< false: stop omitted
};

/// `spmd::slice(start, stop, step)` is Python's `start:stop:step`; pass spmd::none for an omitted
/// start or stop. Local.
inline Slice slice(index_t start, index_t stop, index_t step = 1) {
  return Slice{start, stop, step, true, true};
}
/// `:stop:step` (an omitted start). Local.
inline Slice slice(None, index_t stop, index_t step = 1) {
  return Slice{0, stop, step, false, true};
}
/// An omitted stop (Python's `start:` with a step). Local.
inline Slice slice(index_t start, None, index_t step = 1) {
  return Slice{start, 0, step, true, false};
}
/// Start and stop omitted: only a step. Local.
inline Slice slice(None, None, index_t step = 1) {
  return Slice{0, 0, step, false, false};
}

namespace impl {

/// A slice normalised against an axis of length n, as Python's slice.indices(n) does it: the
/// first index, the step and the number of indices (0 for an empty slice).
struct SliceIndices {
  index_t start;
  index_t step;
  index_t count;
};

/// Python's slice.indices(n) (clamping, empty results), and the slice's length. step must not be
/// 0 (checked by the caller). Local.
inline SliceIndices normalize(const Slice& s, index_t n) {
  const index_t step = s.step;
  const index_t lower = step < 0 ? -1 : 0;
  const index_t upper = step < 0 ? n - 1 : n;
  auto clamp = [&](index_t v) {
    if (v < 0) {
      v += n;
      return v < lower ? lower : v;
    }
    return v > upper ? upper : v;
  };
  const index_t start = s.has_start ? clamp(s.start) : (step < 0 ? upper : lower);
  const index_t stop = s.has_stop ? clamp(s.stop) : (step < 0 ? lower : upper);
  index_t count = 0;
  if (step > 0 && start < stop) count = (stop - start - 1) / step + 1;
  if (step < 0 && stop < start) count = (start - stop - 1) / (-step) + 1;
  return SliceIndices{start, step, count};
}

template <class S>
inline constexpr bool is_index_arg_v = std::is_integral_v<S> && !std::is_same_v<S, bool>;
template <class S>
inline constexpr bool is_range_arg_v = std::is_same_v<S, Slice> || std::is_same_v<S, All>;

/// The rank of a view of an M-d array (or view) sliced with arguments S...: one axis fewer per
/// integer index.
template <int M, class... S>
inline constexpr int sliced_rank_v = M - static_cast<int>((0 + ... + (is_index_arg_v<S> ? 1 : 0)));

/// One view axis after slicing: dropped at `index`, or kept as start + step * j' on new axis
/// `axis`.
struct AxisPick {
  bool drop = false;
  index_t start = 0;  // or the index, when dropped
  index_t step = 1;
  int axis = 0;       // the new axis (kept only)
  index_t count = 0;  // the new extent (kept only)
};

/// The pick for argument `arg` on an axis of length n (axis d of `shape`). Throws spmd::Error
/// (collective: the arguments and shapes are the same on every rank) for step 0 or an integer
/// index out of range.
template <class S, std::size_t R>
AxisPick pick(const char* fn, const S& arg, int d, const std::array<index_t, R>& shape) {
  const index_t n = shape[static_cast<std::size_t>(d)];
  AxisPick p;
  if constexpr (std::is_same_v<S, All>) {
    p.count = n;
  } else if constexpr (std::is_same_v<S, Slice>) {
    if (arg.step == 0)
      throw Error::replicated(
          str(fn, ": slice step 0 on axis ", d, " of shape ", shape_str(shape), " (slice step cannot be zero)"));
    const SliceIndices s = normalize(arg, n);
    p.start = s.start;
    p.step = s.step;
    p.count = s.count;
  } else {
    static_assert(is_index_arg_v<S>, "spmd: a slice argument is an integer, spmd::slice(...) or spmd::all");
    const index_t i = static_cast<index_t>(arg);
    const index_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n)
      throw Error::replicated(
          str(fn, ": index ", i, " is out of range for axis ", d, " with size ", n, " (shape ", shape_str(shape), ")"));
    p.drop = true;
    p.start = k;
  }
  return p;
}

/// Slices the view (base, shape) of an N-d parent with args...: the composed selection and the
/// new shape. fn names the caller in errors.
template <int N, int M, class... S>
auto slice_selection(const char* fn, const Selection<N, M>& base, const std::common_type_t<Index<M>>& shape,
                     const S&... args) {
  constexpr int M2 = sliced_rank_v<M, S...>;
  static_assert(sizeof...(S) <= static_cast<std::size_t>(M), "spmd: more slice arguments than axes");
  static_assert(M2 >= 1, "spmd: an integer index on every axis selects one element; use a.get(i, ...) and a.set(...)");
  std::array<AxisPick, M> picks{};
  int d = 0;
  ((picks[static_cast<std::size_t>(d)] = pick(fn, args, d, shape), ++d), ...);
  for (; d < M; ++d) picks[static_cast<std::size_t>(d)] = pick(fn, all, d, shape);
  Index<M2> out_shape{};
  int k2 = 0;
  for (auto& p : picks) {
    if (p.drop || k2 >= M2) continue;  // (k2 < M2 always: M2 counts the kept axes)
    p.axis = k2;
    out_shape[static_cast<std::size_t>(k2++)] = p.count;
  }
  // Compose: parent index i[a] = base.start[a] + base.step[a] * j[k], j[k] = the pick of view
  // axis k (its index, or start + step * j'[axis]).
  Selection<N, M2> out;
  for (int a = 0; a < N; ++a) {
    const int k = base.map[a];
    out.start[a] = base.start[a];
    out.step[a] = base.step[a];
    out.map[a] = -1;
    if (k < 0) continue;
    const AxisPick& p = picks[static_cast<std::size_t>(k)];
    out.start[a] = base.start[a] + base.step[a] * p.start;
    if (p.drop) {
      out.step[a] = 1;
    } else {
      out.step[a] = base.step[a] * p.step;
      out.map[a] = p.axis;
    }
  }
  return std::make_pair(out, out_shape);
}

}  // namespace impl

/// A distributed view: an M-d selection (NumPy slice) of an N-d Array's global index space,
/// sharing the Array's storage. Made by Array::operator() or ArrayView::operator(); operand and
/// destination of expressions (expr.hpp).
template <class T, int M, int N, class MemorySpace>
class ArrayView {
 public:
  /// The element type.
  using value_type = T;
  /// The parent's memory space.
  using memory_space = MemorySpace;
  /// The parent's execution space.
  using execution_space = typename MemorySpace::execution_space;
  /// The parent array's type.
  using parent_type = Array<T, N, MemorySpace>;
  /// The affine selection of the parent's indices.
  using selection_type = impl::Selection<N, M>;
  /// The view's (global) index type.
  using index_type = Index<M>;
  /// Marks views as expression operands.
  using spmd_expression = void;
  /// Number of axes of the view.
  static constexpr int rank = M;

  /// The view of `parent` whose index j is parent index sel(j), j in [0, shape). Local.
  ArrayView(const parent_type& parent, const selection_type& sel, const index_type& shape)
      : parent_(impl::share(parent)), sel_(sel), shape_(shape) {}
  /// Another handle on the same view (the parent's storage stays shared). Local.
  ArrayView(const ArrayView& o) : parent_(impl::share(o.parent_)), sel_(o.sel_), shape_(o.shape_) {}
  /// Moves the handle (no elements are written). Local.
  ArrayView(ArrayView&&) = default;

  // ---- queries (all Local) --------------------------------------------------------------------
  /// The array whose storage the view shares. Local.
  const parent_type& parent() const { return parent_; }
  /// The selection of the parent's indices. Local.
  const selection_type& selection() const { return sel_; }
  /// The view's shape. Local.
  const index_type& shape() const { return shape_; }
  /// The view's extent along axis d. Local.
  index_t extent(int d) const { return shape_[d]; }
  /// Number of elements of the view. Local.
  index_t size() const { return Box<M>{index_type{}, shape_}.size(); }
  /// The parent's communicator. Local.
  const Comm& comm() const { return parent_.comm(); }
  /// The parent's label. Local.
  std::string label() const { return parent_.label(); }
  /// "label[start:stop:step, index, ...]" in Python notation (for error messages). Local.
  std::string describe() const;
  /// The view indices whose parent elements this rank owns (a box: the selection is affine). Local.
  Box<M> owned() const { return impl::selection_intersect(sel_, parent_.owned(), Box<M>{index_type{}, shape_}); }

  /// A view of this view (selections compose). Local.
  template <class... S, class = std::enable_if_t<(sizeof...(S) >= 1 && sizeof...(S) <= static_cast<std::size_t>(M))>>
  auto operator()(const S&... s) const {
    const auto r = impl::slice_selection("spmd::ArrayView::operator()", sel_, shape_, s...);
    return ArrayView<T, impl::sliced_rank_v<M, S...>, N, MemorySpace>(parent_, r.first, r.second);
  }

  // ---- assignment: writes elements (bodies in expr.hpp). All Collective. ------------------------
  /// Deleted on a named view: `v = w` between two named views of one type would be an element
  /// write that std::swap and the standard algorithms take for a handle copy. Copy elements with
  /// `spmd::assign(v, w)`; copy the handle with `auto v2 = w;`.
  ArrayView& operator=(const ArrayView& w) & = delete;
  /// Deleted on a named view, as the copy assignment.
  ArrayView& operator=(ArrayView&& w) & = delete;
  /// A view made in the statement takes another view's elements, as NumPy's
  /// `z[1:4, :] = big[2:8:2, 1:9]` and `u[1:] = u[:-1]` do (writes z's elements; aliasing as for
  /// any assignment). Collective.
  ArrayView& operator=(const ArrayView& w) && {
    assign(*this, w);
    return *this;
  }
  /// As above, for a view made in the statement on the right too.
  ArrayView& operator=(ArrayView&& w) && {
    assign(*this, w);
    return *this;
  }
  /// v = scalar, v = array, v = expression, v = a view of another type (expr.hpp): writes v's
  /// elements (NumPy's `v[...] = e`).
  template <class E, class = std::enable_if_t<!std::is_same_v<std::decay_t<E>, ArrayView>>>
  ArrayView& operator=(const E& e) {
    assign(*this, e);
    return *this;
  }
  /// v += e, v -= e, v *= e, v /= e: one fused kernel each, in place.
  template <class E>
  ArrayView& operator+=(const E& e) {
    assign(*this, *this + e);
    return *this;
  }
  /// v = v - e, one fused kernel. Collective.
  template <class E>
  ArrayView& operator-=(const E& e) {
    assign(*this, *this - e);
    return *this;
  }
  /// v = v * e, one fused kernel. Collective.
  template <class E>
  ArrayView& operator*=(const E& e) {
    assign(*this, *this * e);
    return *this;
  }
  /// v = v / e, one fused kernel. Collective.
  template <class E>
  ArrayView& operator/=(const E& e) {
    assign(*this, *this / e);
    return *this;
  }

 private:
  parent_type parent_;
  selection_type sel_;
  index_type shape_;
};

/// `a(args...)`: Array::operator() forwards here. Local.
template <class T, int N, class Mem, class... S>
auto view_of(const Array<T, N, Mem>& a, const S&... s) {
  if (a.is_null()) throw Error::replicated("spmd::Array::operator(): slicing a null array");
  const auto r = impl::slice_selection("spmd::Array::operator()", impl::Selection<N, N>::identity(), a.shape(), s...);
  return ArrayView<T, impl::sliced_rank_v<N, S...>, N, Mem>(a, r.first, r.second);
}

/// The whole of `a` as a view (the identity selection). Local.
template <class T, int N, class Mem>
ArrayView<T, N, N, Mem> view_of(const Array<T, N, Mem>& a) {
  if (a.is_null()) throw Error::replicated("spmd::view_of: a null array (assigned to, or used in an expression)");
  return ArrayView<T, N, N, Mem>(a, impl::Selection<N, N>::identity(), a.shape());
}

template <class T, int M, int N, class Mem>
std::string ArrayView<T, M, N, Mem>::describe() const {
  std::string s = parent_.label() + "[";
  for (int a = 0; a < N; ++a) {
    if (a) s += ", ";
    const int k = sel_.map[a];
    if (k < 0) {
      s += std::to_string(sel_.start[a]);
      continue;
    }
    const index_t n = shape_[k], st = sel_.step[a], first = sel_.start[a];
    if (n == 0) {
      s += impl::str(first, ":", first, st == 1 ? "" : ":" + std::to_string(st));
      continue;
    }
    const index_t stop = first + st * n;  // one step past the last index
    s += std::to_string(first) + ":" + (stop < 0 ? std::string() : std::to_string(stop));
    if (st != 1) s += ":" + std::to_string(st);
  }
  return s + "]";
}

/// Swap two arrays (the double-buffer idiom: `next(...) = f(u(...)); spmd::swap(u, next);`): their
/// storage changes hands, nothing is copied. Views keep the storage they were made from: a view
/// made from u before the swap now reads and writes next's storage (see the file comment). Local.
template <class T, int N, class Mem>
void swap(Array<T, N, Mem>& a, Array<T, N, Mem>& b) noexcept {
  Array<T, N, Mem> t = std::move(a);
  a = std::move(b);
  b = std::move(t);
}

}  // namespace spmd
