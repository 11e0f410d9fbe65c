#pragma once
/// \file algorithm.hpp
/// Kernels over the owned points of arrays: for_each, transform, fill, copy. All Local: each
/// rank works on its own block, with no communication.
///
/// The execution-space-first overloads run on the given instance; the others on a default
/// instance of the array's execution space. Kernels are asynchronous, as Kokkos kernels are.
/// Reductions, halo exchanges and host reads run on the default instance and are ordered after
/// kernels on it; after work on another instance, fence that instance first.

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd {

namespace impl {
template <class T, int N, class M, class... Rest>
void check_same_layout(const char* fn, const Array<T, N, M>& a, const Rest&... rest) {
  auto one = [&](const auto& b) {
    if (!a.distribution().same_layout(b.distribution()))
      throw Error(impl::str(fn, ": arrays '", a.label(), "' (", a.distribution().describe(), ") and '", b.label(),
                            "' (", b.distribution().describe(), ") are not distributed alike"),
                  true);
  };
  (one(rest), ...);
}

template <int N>
std::array<int, N> owned_extents(const Box<N>& b) {
  std::array<int, N> e{};
  for (int d = 0; d < N; ++d) e[d] = static_cast<int>(b.extent(d));
  return e;
}

/// Calls f(i0, ..., iN-1) with global indices.
template <class F, int N, class Seq = std::make_index_sequence<N>>
struct GlobalPointFunctor;
template <class F, int N, std::size_t... D>
struct GlobalPointFunctor<F, N, std::index_sequence<D...>> {
  F f;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const index_of<D>... i) const { f(i...); }
};

/// out(i) = f(in_k(i)...) at local owned coordinates i.
template <class Out, class F, class Ins, class Seq>
struct TransformFunctor;
template <class Out, class F, class... In, std::size_t... K>
struct TransformFunctor<Out, F, DTuple<In...>, std::index_sequence<K...>> {
  Out out;
  F f;
  DTuple<In...> ins;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    out(i...) = f(dget<K>(ins)(i...)...);
  }
};
/// Elements one work item of a flat transform handles: on a GPU several, loaded before any is
/// stored, so more independent loads are in flight per thread (Kokkos' one-element-per-thread
/// kernel leaves an H200's memory underused); on the host one (the compiler vectorises).
template <class Exec>
constexpr int flat_unroll() {
  return host_accessible<typename Exec::memory_space>() ? 1 : 4;
}

/// out(i) = f(in_k(i)...) over contiguous owned blocks seen as 1-D; work item t handles
/// t, t + slice, ..., t + (U - 1) slice (coalesced across a warp for each u).
template <class Out, class F, class Ins, class Seq, int U>
struct FlatTransformFunctor;
template <class Out, class F, class... In, std::size_t... K, int U>
struct FlatTransformFunctor<Out, F, DTuple<In...>, std::index_sequence<K...>, U> {
  Out out;
  F f;
  DTuple<In...> ins;
  index_t n;
  index_t slice;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const index_t t) const {
    if constexpr (U == 1) {
      out(t) = f(dget<K>(ins)(t)...);
    } else {
      typename Out::non_const_value_type r[U]{};
      for (int u = 0; u < U; ++u) {
        const index_t i = t + u * slice;
        if (i < n) r[u] = f(dget<K>(ins)(i)...);
      }
      for (int u = 0; u < U; ++u) {
        const index_t i = t + u * slice;
        if (i < n) out(i) = r[u];
      }
    }
  }
};

/// The owned block of an array without halo, as a 1-D unmanaged view (row-major order).
template <class T, int N, class M>
Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> flat(const Array<T, N, M>& a) {
  return Kokkos::View<T*, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(a.local_with_halo().data(),
                                                                      static_cast<std::size_t>(a.owned().size()));
}
template <int N>
bool no_halo(const std::array<int, N>& h) {
  for (int d = 0; d < N; ++d)
    if (h[d] != 0) return false;
  return true;
}
}  // namespace impl

/// Call f(i0, ..., iN-1) (global indices, index_t) for every point this rank owns of `a`, or of
/// `a` inside `region` (a box of global indices). f is a KOKKOS_LAMBDA. Local.
template <class Exec, class T, int N, class M, class F>
void for_each(const Exec& exec, const Array<T, N, M>& a, const Box<N>& region, const F& f) {
  const Box<N> b = a.owned().intersect(region);
  if (b.empty()) return;
  Kokkos::Array<index_t, N> lo{}, hi{};
  for (int d = 0; d < N; ++d) {
    lo[d] = b.lo[d];
    hi[d] = b.hi[d];
  }
  Kokkos::parallel_for("spmd::algorithm::for_each", impl::nd_policy<N, Exec, index_t>(exec, lo, hi),
                       impl::GlobalPointFunctor<F, N>{f});
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const Box<N>& region, const F& f) {
  for_each(typename M::execution_space(), a, region, f);
}
template <class Exec, class T, int N, class M, class F,
          class = std::enable_if_t<Kokkos::is_execution_space<Exec>::value>>
void for_each(const Exec& exec, const Array<T, N, M>& a, const F& f) {
  for_each(exec, a, a.owned(), f);
}
template <class T, int N, class M, class F>
void for_each(const Array<T, N, M>& a, const F& f) {
  for_each(typename M::execution_space(), a, a.owned(), f);
}

/// out = f(inputs...) element by element over the owned points; f is a KOKKOS_LAMBDA taking one
/// value per input. Inputs may be `out` itself. Arrays must be distributed alike. Local.
template <class Exec, class T, int N, class M, class F, class... In>
void transform(const Exec& exec, const Array<T, N, M>& out, const F& f, const In&... inputs) {
  impl::check_same_layout("spmd::transform", out, inputs...);
  if (impl::no_halo<N>(out.halo()) && (impl::no_halo<N>(inputs.halo()) && ...)) {
    // Every block is contiguous and laid out alike: one flat loop.
    const index_t n = out.owned().size();
    if (n == 0) return;
    constexpr int U = impl::flat_unroll<Exec>();
    using Ins = impl::DTuple<decltype(impl::flat(inputs))...>;
    impl::FlatTransformFunctor<decltype(impl::flat(out)), F, Ins, std::index_sequence_for<In...>, U> k{
        impl::flat(out), f, impl::make_dtuple(impl::flat(inputs)...), n, (n + U - 1) / U};
    Kokkos::parallel_for("spmd::algorithm::transform",
                         Kokkos::RangePolicy<Exec, Kokkos::IndexType<index_t>>(exec, 0, k.slice), k);
    return;
  }
  using Ins = impl::DTuple<decltype(inputs.owned_access())...>;
  impl::TransformFunctor<decltype(out.owned_access()), F, Ins, std::index_sequence_for<In...>> k{
      out.owned_access(), f, impl::make_dtuple(inputs.owned_access()...)};
  Kokkos::parallel_for("spmd::algorithm::transform", impl::nd_policy<N>(exec, impl::owned_extents(out.owned())), k);
}
template <class T, int N, class M, class F, class... In>
void transform(const Array<T, N, M>& out, const F& f, const In&... inputs) {
  transform(typename M::execution_space(), out, f, inputs...);
}

/// Set every element of `a` (halo included) to v. Local.
template <class T, int N, class M>
void fill(const Array<T, N, M>& a, const typename Array<T, N, M>::value_type& v) {
  a.fill(v);
}

/// Copy the owned values of `src` into `dst` (distributed alike; halos may differ). Local.
template <class T, int N, class M, class M2>
void copy(const Array<T, N, M>& dst, const Array<T, N, M2>& src) {
  impl::check_same_layout("spmd::copy", dst, src);
  if (dst.halo() == src.halo())
    Kokkos::deep_copy(dst.local_with_halo(), src.local_with_halo());
  else
    Kokkos::deep_copy(dst.local(), src.local());
}

/// A new array with the distribution and values of `a`. Local.
template <class T, int N, class M>
Array<T, N, M> copy(const Array<T, N, M>& a) {
  auto out = empty_like(a);
  Kokkos::deep_copy(out.local_with_halo(), a.local_with_halo());
  return out;
}

}  // namespace spmd
