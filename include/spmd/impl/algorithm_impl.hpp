#pragma once
// Kernels over the owned points of arrays, implementation (algorithm.hpp checks and dispatches):
// the layout check, for_each and transform on the kernel layer, and the trailing-label split.

#include <Kokkos_Core.hpp>

#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/forms.hpp"
#include "spmd/impl/kernels.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/profiling.hpp"

namespace spmd::impl {

template <class T, int N, class M, class... Rest>
void check_same_layout(const char* fn, const Array<T, N, M>& a, const Rest&... rest) {
  auto one = [&](const auto& b) {
    if (!a.distribution().same_layout(b.distribution()))
      throw Error::replicated(impl::str(fn, ": arrays '", a.label(), "' (", a.distribution().describe(), ") and '",
                                        b.label(), "' (", b.distribution().describe(), ") are not distributed alike"));
  };
  (one(rest), ...);
}

/// spmd::copyto on `exec` (any execution space that may order the copy): the owned values, or the
/// whole local storage when the halo widths agree. Local (throws the same spmd::Error on every
/// rank for arrays not distributed alike).
template <class Exec, class T, int N, class M, class M2>
void copy_owned(const Exec& exec, const Array<T, N, M>& dst, const Array<T, N, M2>& src) {
  check_same_layout("spmd::copyto", dst, src);
  if (dst.local_with_halo().data() == src.local_with_halo().data()) return;
  if (dst.halo() == src.halo())
    Kokkos::deep_copy(exec, dst.local_with_halo(), src.local_with_halo());
  else
    Kokkos::deep_copy(exec, dst.local(), src.local());
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

}  // namespace spmd::impl
