#pragma once
// N-d iteration helpers shared by every module: one implementation for any rank N.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/types.hpp"

namespace spmd::impl {

/// `int` for every axis, as a pack: `int_t<D>... i` declares N int parameters.
template <std::size_t>
using int_t = int;
/// `index_t` for every axis, as a pack.
template <std::size_t>
using index_of = index_t;

/// View data type with N stars: T*, T**, ...
template <class T, int N>
struct add_stars {
  using type = typename add_stars<T, N - 1>::type*;
};
template <class T>
struct add_stars<T, 0> {
  using type = T;
};

/// The iteration policy over the local box [lo, hi) of rank N (RangePolicy for N = 1, else a
/// row-major MDRangePolicy), on execution space instance `exec`.
template <int N, class Exec, class IndexType = int>
auto nd_policy(const Exec& exec, const Kokkos::Array<IndexType, N>& lo, const Kokkos::Array<IndexType, N>& hi) {
  if constexpr (N == 1) {
    return Kokkos::RangePolicy<Exec, Kokkos::IndexType<IndexType>>(exec, lo[0], hi[0]);
  } else {
    using P = Kokkos::MDRangePolicy<Exec, Kokkos::Rank<N, Kokkos::Iterate::Right, Kokkos::Iterate::Right>,
                                    Kokkos::IndexType<IndexType>>;
    typename P::point_type b{}, e{};
    for (int d = 0; d < N; ++d) {
      b[d] = lo[d];
      e[d] = hi[d];
    }
    return P(exec, b, e);
  }
}

/// Policy over [0, ext) per axis.
template <int N, class Exec>
auto nd_policy(const Exec& exec, const std::array<int, N>& ext) {
  Kokkos::Array<int, N> lo{}, hi{};
  for (int d = 0; d < N; ++d) {
    lo[d] = 0;
    hi[d] = ext[d];
  }
  return nd_policy<N>(exec, lo, hi);
}

/// Element of an N-d view at `base + i` (base: per-axis shift, e.g. the halo width).
template <class View, std::size_t... D, class... I>
KOKKOS_FORCEINLINE_FUNCTION typename View::reference_type view_at(const View& v,
                                                                  const Kokkos::Array<int, sizeof...(D)>& base,
                                                                  std::index_sequence<D...>, I... i) {
  return v((base[D] + i)...);
}

/// A view of an Array's storage, indexed relative to the owned block: (i...) reads the owned
/// element at local owned coordinates i (0-based), wherever the halo puts it.
template <class View, int N>
struct OwnedAccess {
  View view;
  Kokkos::Array<int, N> shift;  // the halo widths
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION typename View::reference_type operator()(I... i) const {
    return view_at(view, shift, std::make_index_sequence<N>{}, i...);
  }
};

/// Device-friendly tuple (std::tuple is not usable in device code without relaxed constexpr).
template <class... Ts>
struct DTuple;
template <>
struct DTuple<> {};
template <class T, class... Ts>
struct DTuple<T, Ts...> {
  T head;
  DTuple<Ts...> tail;
};
template <std::size_t K, class T, class... Ts>
KOKKOS_FORCEINLINE_FUNCTION const auto& dget(const DTuple<T, Ts...>& t) {
  if constexpr (K == 0)
    return t.head;
  else
    return dget<K - 1>(t.tail);
}
inline DTuple<> make_dtuple() {
  return {};
}
template <class T, class... Ts>
DTuple<T, Ts...> make_dtuple(const T& h, const Ts&... ts) {
  return DTuple<T, Ts...>{h, make_dtuple(ts...)};
}

/// True when host code can read MemorySpace (so MPI can, and host loops may run over it).
template <class MemorySpace>
constexpr bool host_accessible() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;
}

/// Fence with a label where Kokkos supports labelled fences.
template <class Exec>
void fence(const Exec& exec, const std::string& label) {
#if KOKKOS_VERSION >= 30600
  exec.fence(label);
#else
  (void)label;
  exec.fence();
#endif
}

}  // namespace spmd::impl
