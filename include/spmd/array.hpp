#pragma once
/// \file array.hpp
/// spmd::Array<T, N, MemorySpace>: a distributed N-d array.
///
/// Each rank stores its owned block plus a halo in one Kokkos::View (LayoutRight, so a rank's
/// block, an HDF5 dataset and a NumPy array agree on element order), together with the shared,
/// replicated Distribution.
///
/// An Array is a value, like std::vector (and unlike Kokkos::View): `auto p = r;` makes p an
/// independent copy of r (same distribution, same values, halo included), so code ported line by
/// line from NumPy (`p = r` ... `p = r + beta * p`) never writes into r. One rule for `=`: `b =
/// rhs` (rhs an Array, a view, an expression or a scalar) writes b's owned elements in b's own
/// layout (NumPy's `b[...] = rhs`), never its halo, and never changes b's distribution; only a
/// null b becomes a new array. Moves (`b = std::move(a)`, `std::swap(u, next)`, returning
/// arrays) hand the storage over. Storage is shared only through slices (`auto v =
/// a(spmd::all)`, slice.hpp), which see every later write to a. See docs/api/array.md.
///
/// Indices: global indices are index_t (int64); indices into a rank's storage are int.
/// Slicing (`a(spmd::slice(1, -1), 0)`) needs slice.hpp, assignment from expressions expr.hpp
/// and halo exchange (`spmd::exchange_halo(a)`) halo.hpp; <spmd.hpp> includes them all. An Array
/// is a plain container: the modules above keep their per-array state (halo plans, expression
/// caches) in its opaque slots (impl::slot), and this header pulls in no communication engine.

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/box.hpp"
#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/array_impl.hpp"
#include "spmd/impl/complex.hpp"
#include "spmd/impl/kernels.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd {

/// Device-side access by local owned index: o(0, ..., 0) is the first owned element, wherever
/// the halo puts it. Obtain with Array::owned_access(); capture by value in kernels.
template <class View, int N>
using OwnedAccess = impl::OwnedAccess<View, N>;

/// Device-side access by global index: a(i, j) with global i, j inside this rank's owned block
/// or its halo. Obtain with Array::accessor(); capture by value in kernels.
template <class View, int N>
struct GlobalAccess {
  View view;                         ///< the rank's storage (owned block and halo)
  Kokkos::Array<index_t, N> origin;  ///< global index of storage element (0, ..., 0)
  /// The element at global index (i...) (in the owned block or its halo). Device-callable.
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION typename View::reference_type operator()(I... i) const {
    static_assert(sizeof...(I) == N, "spmd::GlobalAccess: wrong number of indices");
    return at(std::make_index_sequence<N>{}, static_cast<index_t>(i)...);
  }

 private:
  template <std::size_t... D, class... I>
  KOKKOS_FORCEINLINE_FUNCTION typename View::reference_type at(std::index_sequence<D...>, I... i) const {
    return view(static_cast<int>(i - origin[D])...);
  }
};

/// A distributed N-d array: one Kokkos::View (LayoutRight) of this rank's block plus halo on a
/// shared Distribution (see the file comment). A value: copies are deep, moves cheap.
template <class T, int N, class MemorySpace>
class Array {
  static_assert(Kokkos::is_memory_space<MemorySpace>::value, "spmd::Array: MemorySpace must be a Kokkos memory space");

 public:
  /// The element type.
  using value_type = T;
  /// The storage's memory space.
  using memory_space = MemorySpace;
  /// The execution space of the array's kernels.
  using execution_space = typename MemorySpace::execution_space;
  /// The View of a rank's storage (halo included).
  using view_type = Kokkos::View<typename impl::add_stars<T, N>::type, Kokkos::LayoutRight, MemorySpace>;
  /// The distribution's type.
  using distribution_type = Distribution<N>;
  /// Global indices and shapes.
  using index_type = Index<N>;
  /// Number of axes.
  static constexpr int rank = N;

  /// A null array. Local.
  Array() = default;
  /// Storage for `dist` (Init::zero: zeros, halo included; Init::none: uninitialised), its View
  /// labelled `label`. Local; throws spmd::Error naming the bytes this rank asked for when the
  /// allocation fails (the creation functions that take a shape agree on that error first).
  explicit Array(const Distribution<N>& dist, const Label& label = Label{"spmd::Array"}, Init init = Init::zero)
      : dist_(dist) {
    try {
      if (init == Init::zero)
        view_ = make_view(Kokkos::view_alloc(label.name), std::make_index_sequence<N>{});
      else
        view_ = make_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, label.name), std::make_index_sequence<N>{});
    } catch (const std::exception& e) {
      const std::string what = impl::allocation_message<T, MemorySpace>("spmd::Array", dist, label.name, e);
      throw Error(what);  // local: one rank may fail alone (impl::make_array agrees)
    }
  }
  /// A new array holding the values of an expression or a slice (NumPy's `r = b - A.dot(x)`:
  /// `Array<double, 1> r(b - Ax);`). It is laid out like the expression's first operand when
  /// that is a whole array of this rank (same distribution, halo included: halo zero), else on
  /// an automatic distribution of the expression's shape. Collective. Explicit, so an
  /// expression never turns into an Array (an allocation and a collective) by passing it to a
  /// `const Array&` parameter: write `Array<double, 1> r(b - Ax);` or `auto r = spmd::copy(b -
  /// Ax);` (`auto r = b - Ax;` keeps the unevaluated expression).
  template <class E, class = std::enable_if_t<impl::is_expression_v<E>>>
  explicit Array(const E& e);  // body in expr.hpp
  /// A copy: same distribution, same values (halo included), its own storage. Local. It waits
  /// for all work queued before it (on any instance) and completes before it returns, as
  /// Kokkos::deep_copy without an instance does: `spmd::copy(exec, a)` is the asynchronous form.
  /// Counted in the profiling region `spmd::Array::copy` (--spmd-log-view lists every copy).
  Array(const Array& o) : dist_(o.dist_) {
    if (o.is_null()) return;
    const impl::Region region("spmd::Array::copy");
    view_ = make_view(Kokkos::view_alloc(Kokkos::WithoutInitializing, o.label()), std::make_index_sequence<N>{});
    Kokkos::deep_copy(view_, o.view_);  // fences before and after
  }
  /// `b = a` writes a's values into b's owned elements, in b's layout (NumPy's `b[...] = a`):
  /// the same as `b = a(spmd::all)` and spmd::assign(b, a). b keeps its distribution, storage
  /// and label (slices of b see the new values); a of another distribution is redistributed
  /// into it, a of another shape broadcast as NumPy does (or a collective spmd::Error). A null
  /// b becomes a copy of a (as `Array b = a;`). Collective (no communication when a and b are
  /// distributed alike). Needs expr.hpp (<spmd.hpp> includes it).
  Array& operator=(const Array& o) {
    if (is_null()) return *this = Array(o);
    assign(*this, o);
    return *this;
  }
  /// Takes over `o`'s storage (o becomes null). Local.
  Array(Array&&) = default;
  /// Takes over `o`'s storage. Local.
  Array& operator=(Array&&) = default;

  // ---- queries (all Local) --------------------------------------------------------------------
  /// The distribution.
  const Distribution<N>& distribution() const { return dist_; }
  /// The distribution's communicator.
  const Comm& comm() const { return dist_.comm(); }
  /// The global shape.
  const index_type& shape() const { return dist_.shape(); }
  /// The global extent along axis d.
  index_t extent(int d) const { return dist_.extent(d); }
  /// Number of global elements.
  index_t size() const { return dist_.size(); }
  /// The box of global indices this rank owns.
  const Box<N>& owned() const { return dist_.owned(); }
  /// The halo widths.
  const std::array<int, N>& halo() const { return dist_.halo(); }
  /// The storage's label.
  std::string label() const { return view_.label(); }
  /// True for a default-constructed or moved-from array.
  bool is_null() const { return dist_.is_null(); }

  /// This rank's storage, halo included. Local.
  const view_type& local_with_halo() const { return view_; }
  /// This rank's owned block (a subview of the storage). Local.
  auto local() const { return owned_subview(std::make_index_sequence<N>{}); }
  /// Kernel-side access to the owned block by local owned coordinates (0-based). Local.
  OwnedAccess<view_type, N> owned_access() const {
    OwnedAccess<view_type, N> a{view_, {}};
    for (int d = 0; d < N; ++d) a.shift[d] = dist_.halo()[d];
    return a;
  }
  /// Kernel-side access by global index (owned block and halo). Local.
  GlobalAccess<view_type, N> accessor() const {
    GlobalAccess<view_type, N> a{view_, {}};
    for (int d = 0; d < N; ++d) a.origin[d] = dist_.owned().lo[d] - dist_.halo()[d];
    return a;
  }
  /// Storage index of global index g (which must lie in the owned block or its halo). Local.
  std::array<int, N> local_index(const index_type& g) const {
    std::array<int, N> l{};
    for (int d = 0; d < N; ++d) {
      const index_t v = g[d] - dist_.owned().lo[d] + dist_.halo()[d];
      if (v < 0 || v >= static_cast<index_t>(view_.extent(d)))
        throw Error(impl::str("spmd::Array::local_index: global index ", impl::shape_str(g), " is outside rank ",
                              comm().rank(), "'s block ", dist_.owned(), " and halo ", impl::shape_str(dist_.halo())));
      l[d] = static_cast<int>(v);
    }
    return l;
  }

  // ---- element access -------------------------------------------------------------------------
  /// Set every owned element to v, on `exec` (NumPy's `a.fill(v)`; the same elements as `a =
  /// v`: the halo is not written). Local.
  void fill(const execution_space& exec, const T& v) const {
    if (is_null()) return;
    bool halo = false;
    for (int d = 0; d < N; ++d) halo = halo || dist_.halo()[d] > 0;
    if (!halo) return fill_with_halo(exec, v);  // the owned block is the whole storage
    std::array<int, N> ext{};
    for (int d = 0; d < N; ++d) ext[d] = static_cast<int>(dist_.owned().extent(d));
    impl::for_points(exec, "spmd::Array::fill", ext, impl::OwnedFill<OwnedAccess<view_type, N>, T>{owned_access(), v});
  }
  /// fill() on a default instance. Local.
  void fill(const T& v) const { fill(execution_space(), v); }
  /// Set every element of this rank's storage, owned block and halo, to v, on `exec` (what
  /// spmd::zeros, ones and full do; for boundary values kept in the halo). Local.
  void fill_with_halo(const execution_space& exec, const T& v) const {
    // One flat range over the storage. Kokkos 3.4 fills a rank-N view with an N-d MDRangePolicy,
    // which on an H100 left a 16 x 2^20 array unfilled without an error (2^20 x 16 and 4096 x
    // 4096 were filled; test_creation's Creation.FullOfLongRows).
    if (view_.span_is_contiguous()) {
      const Kokkos::View<T*, memory_space, Kokkos::MemoryUnmanaged> flat(view_.data(), view_.span());
      Kokkos::deep_copy(exec, flat, v);
    } else {
      Kokkos::deep_copy(exec, view_, v);
    }
  }
  /// fill_with_halo() on a default instance. Local.
  void fill_with_halo(const T& v) const { fill_with_halo(execution_space(), v); }
  /// The element at global index g, on every rank: the owner reads it and broadcasts it.
  /// Collective (every rank passes the same g; a bad or differing g is the same spmd::Error on
  /// every rank).
  T get(const index_type& g) const { return impl::get_element(*this, g); }
  /// The element at global index (i, j, ...), on every rank. Collective.
  template <class... I, class = std::enable_if_t<sizeof...(I) == N && (std::is_integral_v<I> && ...)>>
  T get(I... i) const {
    return get(index_type{static_cast<index_t>(i)...});
  }
  /// Write v at global index g (the owner writes). Collective, as get: every rank passes the same
  /// g (a bad or differing g is the same spmd::Error on every rank); the owner's v is written.
  void set(const index_type& g, const T& v) const { impl::set_element(*this, g, v); }
  /// The element at global index g, which this rank must own (`owned().contains(g)`). Local:
  /// no communication; throws a local spmd::Error when g is not owned here.
  T get_local(const index_type& g) const {
    T value{};
    Kokkos::deep_copy(value, impl::element_of(*this, impl::owned_index(*this, g, "spmd::Array::get_local")));
    return value;
  }
  /// Write v at global index g, which this rank must own. Local (a local spmd::Error when g is
  /// not owned here). Neighbours' halo copies are stale until the next halo exchange.
  void set_local(const index_type& g, const T& v) const {
    Kokkos::deep_copy(impl::element_of(*this, impl::owned_index(*this, g, "spmd::Array::set_local")), v);
  }

  // ---- slices and expressions (bodies in slice.hpp and expr.hpp) --------------------------------
  /// NumPy-style slice `a(spmd::slice(1, -1), 0, spmd::all)`: a distributed view of the same
  /// storage (an spmd::ArrayView). Integers drop their axis; omitted trailing axes are `all`.
  /// Local (the arguments must be the same on every rank).
  template <class... S, class = std::enable_if_t<(sizeof...(S) >= 1 && sizeof...(S) <= static_cast<std::size_t>(N))>>
  auto operator()(const S&... s) const {
    return view_of(*this, s...);
  }
  /// a = expression (or scalar): evaluates it into every owned element of `a` (one fused kernel,
  /// NumPy semantics; see expr.hpp). Collective.
  /// A null array (default-constructed or moved from) given an expression of its number of axes
  /// becomes a new array holding its values, as `Array a = e;` would (NumPy's `r = b - A.dot(x)`
  /// on a fresh name). An expression of fewer axes is stretched to `a`'s shape (NumPy's
  /// `a[...] = row`; see expr.hpp).
  template <class E,
            class = std::enable_if_t<impl::is_expression_v<E> || std::is_arithmetic_v<E> || impl::is_complex_v<E>>>
  Array& operator=(const E& e) {
    if constexpr (impl::is_expression_v<E>) {
      if constexpr (std::decay_t<E>::rank == N) {
        if (is_null()) return *this = Array(e);
      }
    }
    assign(*this, e);
    return *this;
  }
  /// a += e, a -= e, a *= e, a /= e (e: an Array, a view, an expression or a scalar): one fused
  /// kernel each, in place. Collective.
  template <class E>
  Array& operator+=(const E& e) {
    assign(*this, *this + e);
    return *this;
  }
  /// a = a - e, one fused kernel. Collective.
  template <class E>
  Array& operator-=(const E& e) {
    assign(*this, *this - e);
    return *this;
  }
  /// a = a * e, one fused kernel. Collective.
  template <class E>
  Array& operator*=(const E& e) {
    assign(*this, *this * e);
    return *this;
  }
  /// a = a / e, one fused kernel. Collective.
  template <class E>
  Array& operator/=(const E& e) {
    assign(*this, *this / e);
    return *this;
  }

 private:
  template <class U, int K, class X>
  friend Array<U, K, X> impl::share(const Array<U, K, X>& a);
  template <class U, int K, class X>
  friend std::shared_ptr<void>& impl::slot(const Array<U, K, X>& a, impl::Slot s);
  template <class Alloc, std::size_t... D>
  view_type make_view(const Alloc& alloc, std::index_sequence<D...>) const {
    const auto e = dist_.local_extents_with_halo();
    return view_type(alloc, static_cast<std::size_t>(e[D])...);
  }
  template <std::size_t... D>
  auto owned_subview(std::index_sequence<D...>) const {
    const auto& h = dist_.halo();
    return Kokkos::subview(view_, std::make_pair(h[D], h[D] + static_cast<int>(dist_.owned().extent(D)))...);
  }
  struct Shared {
    std::shared_ptr<void> slots[static_cast<int>(impl::Slot::count)];  // see impl::slot
  };

  Distribution<N> dist_;
  view_type view_;
  mutable std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();  // null only after a move
};

namespace impl {
template <class T, int N, class M>
Array<T, N, M> share(const Array<T, N, M>& a) {
  Array<T, N, M> h;
  h.dist_ = a.dist_;
  h.view_ = a.view_;
  h.shared_ = a.shared_;
  return h;
}
template <class T, int N, class M>
std::shared_ptr<void>& slot(const Array<T, N, M>& a, Slot s) {
  if (!a.shared_) a.shared_ = std::make_shared<typename Array<T, N, M>::Shared>();
  return a.shared_->slots[static_cast<int>(s)];
}
}  // namespace impl

// ---- creation on an existing distribution (Local) ----------------------------------------------

/// Uninitialised array on an existing distribution, its View labelled `l`. Local.
template <class T, class M = DefaultMemorySpace, int N>
Array<T, N, M> empty(const Distribution<N>& d, const Label& l = Label{"spmd::empty"}) {
  return Array<T, N, M>(d, l, Init::none);
}
/// Zero array on an existing distribution. Local.
template <class T, class M = DefaultMemorySpace, int N>
Array<T, N, M> zeros(const Distribution<N>& d, const Label& l = Label{"spmd::zeros"}) {
  return Array<T, N, M>(d, l, Init::zero);
}
/// Array filled with v on an existing distribution. Local.
template <class T, class M = DefaultMemorySpace, int N>
Array<T, N, M> full(const Distribution<N>& d, const T& v, const Label& l = Label{"spmd::full"}) {
  auto a = empty<T, M>(d, l);
  a.fill_with_halo(v);
  return a;
}
/// Array of ones on an existing distribution. Local.
template <class T, class M = DefaultMemorySpace, int N>
Array<T, N, M> ones(const Distribution<N>& d, const Label& l = Label{"spmd::ones"}) {
  return full<T, M>(d, T(1), l);
}

// ---- creation on a new distribution (Collective: they build a Distribution) --------------------

/// `spmd::zeros<double>(comm, {4096, 4096}, spmd::halo(1))`: a new distribution and a zero
/// array on it. Options: halo(...), periodic(...), grid(...), label(...). Collective; an
/// allocation failure on any rank is one spmd::Error on every rank.
template <class T, class M = DefaultMemorySpace, std::size_t R, class... Opts, impl::if_options<Opts...> = 0>
Array<T, static_cast<int>(R), M> zeros(const Comm& comm, const index_t (&shape)[R], const Opts&... opts) {
  return impl::make_array<T, M>("spmd::zeros", comm, impl::to_index(shape), Init::zero, opts...);
}
/// Uninitialised array. Collective.
template <class T, class M = DefaultMemorySpace, std::size_t R, class... Opts, impl::if_options<Opts...> = 0>
Array<T, static_cast<int>(R), M> empty(const Comm& comm, const index_t (&shape)[R], const Opts&... opts) {
  return impl::make_array<T, M>("spmd::empty", comm, impl::to_index(shape), Init::none, opts...);
}
/// Array filled with v. Collective.
template <class T, class M = DefaultMemorySpace, std::size_t R, class... Opts, impl::if_options<Opts...> = 0>
Array<T, static_cast<int>(R), M> full(const Comm& comm, const index_t (&shape)[R], const T& v, const Opts&... opts) {
  auto a = impl::make_array<T, M>("spmd::full", comm, impl::to_index(shape), Init::none, opts...);
  a.fill_with_halo(v);
  return a;
}
/// Array of ones. Collective.
template <class T, class M = DefaultMemorySpace, std::size_t R, class... Opts, impl::if_options<Opts...> = 0>
Array<T, static_cast<int>(R), M> ones(const Comm& comm, const index_t (&shape)[R], const Opts&... opts) {
  auto a = impl::make_array<T, M>("spmd::ones", comm, impl::to_index(shape), Init::none, opts...);
  a.fill_with_halo(T(1));
  return a;
}

/// New arrays with the distribution, memory space and label of `a`. Local.
template <class T, int N, class M>
Array<T, N, M> empty_like(const Array<T, N, M>& a) {
  return empty<T, M>(a.distribution(), Label{a.label()});
}
/// A new zero array like `a` (distribution, memory space, label). Local.
template <class T, int N, class M>
Array<T, N, M> zeros_like(const Array<T, N, M>& a) {
  return zeros<T, M>(a.distribution(), Label{a.label()});
}
/// A new array of ones like `a`. Local.
template <class T, int N, class M>
Array<T, N, M> ones_like(const Array<T, N, M>& a) {
  return ones<T, M>(a.distribution(), Label{a.label()});
}
/// A new array like `a` filled with v. Local.
template <class T, int N, class M>
Array<T, N, M> full_like(const Array<T, N, M>& a, const typename Array<T, N, M>::value_type& v) {
  return full<T, M>(a.distribution(), v, Label{a.label()});
}

/// 1-D array [start, start + step, ...) with ceil((stop - start) / step) elements, as
/// numpy.arange. Collective.
template <class T, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 1, M> arange(const Comm& comm, T start, T stop, T step, const Opts&... opts) {
  impl::agree(comm, [&] {
    if (step == T(0)) throw Error("spmd::arange: step must not be zero");
  });
  const double len = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  const index_t n = len > 0 ? static_cast<index_t>(len) : 0;
  auto a = impl::make_array<T, M>("spmd::arange", comm, Index<1>{n}, Init::zero, opts...);
  impl::arange_fill(a, start, step);
  return a;
}
/// 1-D array 0, 1, ..., n-1. Collective.
template <class T, class M = DefaultMemorySpace, class... Opts, impl::if_options<Opts...> = 0>
Array<T, 1, M> arange(const Comm& comm, index_t n, const Opts&... opts) {
  return arange<T, M>(comm, T(0), static_cast<T>(n), T(1), opts...);
}

}  // namespace spmd
