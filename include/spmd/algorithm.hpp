#pragma once
/// \file algorithm.hpp
/// Kernels over the owned points of arrays: for_each, transform, fill, copyto, copy. All Local: each
/// rank works on its own block, with no communication. They run on the kernel layer
/// (impl/kernels.hpp), like expressions and the solvers' vector kernels.
///
/// The execution-space-first overloads run on the given instance (an instance of the arrays'
/// execution space, e.g. one made on a CUDA stream); the others on a default instance. Kernels
/// are asynchronous, as Kokkos kernels are; fence an instance before reading its results on the
/// host or using them from another instance.

#include <Kokkos_Core.hpp>

#include <tuple>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/impl/kernels.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd {

namespace impl {
template <class T, int N, class M, class... Rest>
void check_same_layout(const char* fn, const Array<T, N, M>& a, const Rest&... rest) {
  auto one = [&](const auto& b) {
    if (!a.distribution().same_layout(b.distribution()))
      throw Error::replicated(impl::str(fn, ": arrays '", a.label(), "' (", a.distribution().describe(), ") and '",
                                        b.label(), "' (", b.distribution().describe(), ") are not distributed alike"));
  };
  (one(rest), ...);
}

template <int N>
std::array<int, N> owned_extents(const Box<N>& b) {
  std::array<int, N> e{};
  for (int d = 0; d < N; ++d) e[d] = static_cast<int>(b.extent(d));
  return e;
}

/// Calls f(i0, ..., iN-1) with global indices: the row k of the box whose first point is `lo`.
template <class F, int N, class Seq = std::make_index_sequence<N - 1>>
struct GlobalRows;
template <class F, int N, std::size_t... D>
struct GlobalRows<F, N, std::index_sequence<D...>> {
  F f;
  Kokkos::Array<index_t, N> lo;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t a,
                                              const index_t b) const {
    for (index_t i = a; i < b; ++i) f((lo[D] + k[D])..., lo[N - 1] + i);
  }
};

/// out(i) = f(in_k(i)...) at local owned coordinates i.
template <class Out, class F, class Ins, class Seq>
struct TransformPoint;
template <class Out, class F, class... In, std::size_t... K>
struct TransformPoint<Out, F, DTuple<In...>, std::index_sequence<K...>> {
  Out out;
  F f;
  DTuple<In...> ins;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    out(i...) = f(dget<K>(ins)(i...)...);
  }
};

/// out[t] = f(in_k[t]...) over blocks without halo seen as 1-D (contiguous, laid out alike).
/// Host: the kernel layer's row chunks. Device (quarter > 0): work item t computes the points
/// t, t + quarter, t + 2 quarter, t + 3 quarter, loading all four before storing any, so each
/// thread keeps four loads per input in flight; one point per thread (Kokkos 3.4's form) leaves
/// HBM bandwidth unused (H100 triad 2524 GB/s at 2^27 against 2930 with four: docs/performance.md).
template <class T, class F, class Ins, class Seq>
struct TransformFlat;
template <class T, class F, class... In, std::size_t... K>
struct TransformFlat<T, F, DTuple<In...>, std::index_sequence<K...>> {
  static constexpr int per_item = 4;
  T* out;
  F f;
  DTuple<In...> ins;  // const pointers
  index_t n;
  index_t quarter;  // 0: host rows
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const Kokkos::Array<index_t, 1>&, const index_t a,
                                              const index_t b) const {
    if (quarter == 0) {
      for (index_t t = a; t < b; ++t) out[t] = f(dget<K>(ins)[t]...);
      return;
    }
    T r[per_item]{};
    for (int u = 0; u < per_item; ++u) {
      const index_t i = a + u * quarter;
      if (i < n) r[u] = f(dget<K>(ins)[i]...);
    }
    for (int u = 0; u < per_item; ++u) {
      const index_t i = a + u * quarter;
      if (i < n) out[i] = r[u];
    }
  }
};

template <int N>
bool no_halo(const std::array<int, N>& h) {
  for (int d = 0; d < N; ++d)
    if (h[d] != 0) return false;
  return true;
}

}  // namespace impl

namespace impl {
template <class X>
struct is_array_arg : std::false_type {};
template <class T, int N, class M>
struct is_array_arg<Array<T, N, M>> : std::true_type {};

template <class Exec, class T, int N, class M, class F>
void for_each_named(const Exec& exec, const Array<T, N, M>& a, const Box<N>& region, const F& f, const char* name) {
  static_assert(std::is_same_v<Exec, typename M::execution_space>,
                "spmd::for_each: the execution space instance must be of the array's execution space");
  const Region timer(name, KernelName{});
  const Box<N> b = a.owned().intersect(region);
  if (b.empty()) return;
  GlobalRows<F, N> body{f, {}};
  for (int d = 0; d < N; ++d) body.lo[d] = b.lo[d];
  for_box(exec, name, BoxItems<N>::template make<Exec>(b.extents()), body);
}

template <class Exec, class T, int N, class M, class F, class... In>
void transform_named(const Exec& exec, const Array<T, N, M>& out, const char* name, const F& f, const In&... inputs) {
  static_assert(std::is_same_v<Exec, typename M::execution_space>,
                "spmd::transform: the execution space instance must be of the arrays' execution space");
  static_assert((is_array_arg<In>::value && ...),
                "spmd::transform: the inputs are Arrays (an spmd::label, if any, comes last)");
  check_same_layout("spmd::transform", out, inputs...);
  const Region timer(name, KernelName{});
  if (no_halo<N>(out.halo()) && (no_halo<N>(inputs.halo()) && ...)) {
    // Every block is contiguous and laid out alike: one flat loop.
    using Ins = DTuple<const typename In::value_type*...>;
    using Flat = TransformFlat<T, F, Ins, std::index_sequence_for<In...>>;
    const index_t n = out.owned().size();
    // The device form on devices, and on the host where the forms say so (the tests' CPU runs).
    const bool rows = !forms<typename Exec::memory_space>().point_items;
    const index_t quarter = rows ? 0 : (n + Flat::per_item - 1) / Flat::per_item;
    Flat k{out.local_with_halo().data(), f,
           make_dtuple(static_cast<const typename In::value_type*>(inputs.local_with_halo().data())...), n, quarter};
    const Kokkos::Array<index_t, 1> items{{quarter > 0 ? quarter : n}};
    for_box(exec, name, BoxItems<1>::template make<Exec>(items, false), k);
    return;
  }
  using Ins = DTuple<decltype(inputs.owned_access())...>;
  TransformPoint<decltype(out.owned_access()), F, Ins, std::index_sequence_for<In...>> k{
      out.owned_access(), f, make_dtuple(inputs.owned_access()...)};
  for_points(exec, name, owned_extents(out.owned()), k);
}

/// True when the last of Args is an spmd::Label.
template <class... Args>
constexpr bool last_is_label() {
  if constexpr (sizeof...(Args) == 0)
    return false;
  else
    return std::is_same_v<std::decay_t<std::tuple_element_t<sizeof...(Args) - 1, std::tuple<Args...>>>, Label>;
}

/// transform_named with the inputs args[0..K) and the label args[K].
template <class Exec, class T, int N, class M, class F, class Tuple, std::size_t... K>
void transform_split(const Exec& exec, const Array<T, N, M>& out, const F& f, const Tuple& args,
                     std::index_sequence<K...>) {
  transform_named(exec, out, std::get<sizeof...(K)>(args).name.c_str(), f, std::get<K>(args)...);
}
}  // namespace impl

///@{
/// Call f(i0, ..., iN-1) (global indices, index_t) for every point this rank owns of `a`, or of
/// `a` inside `region` (a box of global indices), on `exec`. f is a KOKKOS_LAMBDA. The kernel is
/// named `spmd::algorithm::for_each` for profilers; pass `spmd::label("app::init")` last to name
/// it yourself (docs/profiling.md). Local.
template <class Exec, class T, int N, class M, class F>
void for_each(const Exec& exec, const Array<T, N, M>& a, const Box<N>& region, const F& f) {
  impl::for_each_named(exec, a, region, f, "spmd::algorithm::for_each");
}
template <class Exec, class T, int N, class M, class F>
void for_each(const Exec& exec, const Array<T, N, M>& a, const Box<N>& region, const F& f, const Label& label) {
  impl::for_each_named(exec, a, region, f, label.name.c_str());
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const Box<N>& region, const F& f) {
  impl::for_each_named(typename M::execution_space(), a, region, f, "spmd::algorithm::for_each");
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const Box<N>& region, const F& f, const Label& label) {
  impl::for_each_named(typename M::execution_space(), a, region, f, label.name.c_str());
}
template <class Exec, class T, int N, class M, class F,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void for_each(const Exec& exec, const Array<T, N, M>& a, const F& f) {
  impl::for_each_named(exec, a, a.owned(), f, "spmd::algorithm::for_each");
}
template <class Exec, class T, int N, class M, class F,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void for_each(const Exec& exec, const Array<T, N, M>& a, const F& f, const Label& label) {
  impl::for_each_named(exec, a, a.owned(), f, label.name.c_str());
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const F& f) {
  impl::for_each_named(typename M::execution_space(), a, a.owned(), f, "spmd::algorithm::for_each");
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const F& f, const Label& label) {
  impl::for_each_named(typename M::execution_space(), a, a.owned(), f, label.name.c_str());
}
///@}

///@{
/// out = f(inputs...) element by element over the owned points, on `exec`; f is a KOKKOS_LAMBDA
/// taking one value per input. Inputs may be `out` itself. Arrays must be distributed alike
/// (the same spmd::Error on every rank otherwise). The kernel is named
/// `spmd::algorithm::transform`; an `spmd::label(...)` after the inputs names it yourself:
/// `transform(out, f, a, b, spmd::label("app::axpy"))`. Local.
template <class Exec, class T, int N, class M, class F, class... In,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void transform(const Exec& exec, const Array<T, N, M>& out, const F& f, const In&... inputs) {
  if constexpr (impl::last_is_label<In...>())
    impl::transform_split(exec, out, f, std::forward_as_tuple(inputs...),
                          std::make_index_sequence<sizeof...(In) - 1>{});
  else
    impl::transform_named(exec, out, "spmd::algorithm::transform", f, inputs...);
}
template <class T, int N, class M, class F, class... In>
void transform(const Array<T, N, M>& out, const F& f, const In&... inputs) {
  transform(typename M::execution_space(), out, f, inputs...);
}
///@}

///@{
/// Set every owned element of `a` to v (a.fill(v): the halo is not written), on `exec` (or a
/// default instance). Local.
template <class T, int N, class M>
void fill(const typename M::execution_space& exec, const Array<T, N, M>& a,
          const typename Array<T, N, M>::value_type& v) {
  a.fill(exec, v);
}
template <class T, int N, class M>
void fill(const Array<T, N, M>& a, const typename Array<T, N, M>::value_type& v) {
  a.fill(v);
}
///@}

///@{
/// Copy the owned values of `src` into `dst` (NumPy's `np.copyto(dst, src)`, destination first
/// as Kokkos::deep_copy): the two distributed alike (halos may differ; with equal halo widths
/// the halo is copied too, as one contiguous copy); `src` may live in another memory space (a
/// device array into a host one). On `exec` it is asynchronous, like Kokkos::deep_copy with an
/// instance; without one it runs on a default instance of dst's execution space and, across
/// memory spaces, returns once the copy is complete (dst readable at once). Local (throws the
/// same spmd::Error on every rank for arrays not distributed alike). For any two layouts, write
/// `dst = src` or spmd::assign(dst, src) (Collective).
template <class T, int N, class M, class M2>
void copyto(const typename M::execution_space& exec, const Array<T, N, M>& dst, const Array<T, N, M2>& src) {
  impl::check_same_layout("spmd::copyto", dst, src);
  if (dst.local_with_halo().data() == src.local_with_halo().data()) return;
  if (dst.halo() == src.halo())
    Kokkos::deep_copy(exec, dst.local_with_halo(), src.local_with_halo());
  else
    Kokkos::deep_copy(exec, dst.local(), src.local());
}
template <class T, int N, class M, class M2>
void copyto(const Array<T, N, M>& dst, const Array<T, N, M2>& src) {
  const typename M::execution_space exec;
  copyto(exec, dst, src);
  if constexpr (!std::is_same_v<M, M2>) impl::fence(exec, "spmd::copyto: across memory spaces");
}
///@}

/// A new array with the distribution, label and values (halo included) of `a` (NumPy's
/// np.copy; the same as `Array b = a;`, which waits for the copy). Local.
template <class T, int N, class M>
Array<T, N, M> copy(const Array<T, N, M>& a) {
  return a;
}
/// The same, asynchronous on `exec` (ordered after the work queued on `exec` before it; fence
/// `exec` before reading the result elsewhere). Local.
template <class T, int N, class M>
Array<T, N, M> copy(const typename M::execution_space& exec, const Array<T, N, M>& a) {
  if (a.is_null()) return Array<T, N, M>();
  const impl::Region region("spmd::Array::copy");
  auto b = empty_like(a);
  Kokkos::deep_copy(exec, b.local_with_halo(), a.local_with_halo());
  return b;
}

}  // namespace spmd
