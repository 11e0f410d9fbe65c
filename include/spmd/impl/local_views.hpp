#pragma once
// A rank's owned block of an Array seen as the plain Kokkos Views that Kokkos Kernels takes
// (unmanaged, LayoutLeft: the layout Kokkos Kernels instantiates ahead of time), for the BLAS and
// the sparse blocks.

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::impl {

/// The owned part of a 1-D array as an unmanaged LayoutLeft View (contiguous). Local.
template <class T, class M>
Kokkos::View<T*, Kokkos::LayoutLeft, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> vec(const Array<T, 1, M>& a) {
  using V = Kokkos::View<T*, Kokkos::LayoutLeft, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  return V(a.local().data(), static_cast<std::size_t>(a.owned().extent(0)));
}

/// The transpose of an owned 2-D block as an unmanaged LayoutLeft View (extents n1 x n0): the
/// row-major storage read column-major, cut to the owned box. Local.
template <class T, class M>
auto transposed_block(const Array<T, 2, M>& a) {
  using LL = Kokkos::View<T**, Kokkos::LayoutLeft, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const auto& s = a.local_with_halo();
  const LL whole(s.data(), s.extent(1), s.extent(0));
  const int h0 = a.halo()[0], h1 = a.halo()[1];
  auto t = Kokkos::subview(whole, std::make_pair(h1, h1 + static_cast<int>(a.owned().extent(1))),
                           std::make_pair(h0, h0 + static_cast<int>(a.owned().extent(0))));
  static_assert(std::is_same_v<typename decltype(t)::array_layout, Kokkos::LayoutLeft>,
                "spmd: the transposed block should stay LayoutLeft (Kokkos Kernels' instantiated layout)");
  return t;
}

/// True when `exec` is the default instance of its space (on CUDA: the same stream). Local.
template <class Exec>
bool is_default_instance(const Exec& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return exec.cuda_stream() == Kokkos::Cuda().cuda_stream();
#endif
  (void)exec;
  return true;
}

/// Runs f() — a call into Kokkos Kernels 3.4, whose kernels take no execution space instance and
/// run on a default one — ordered after earlier work on `exec` and before later work on it (no
/// fence when `exec` is the default instance). Local.
template <class Exec, class F>
void on_default_instance(const Exec& exec, const char* what, const F& f) {
  const bool other = !is_default_instance(exec);
  if (other) fence(exec, what);
  f();
  if (other) fence(Exec(), what);
}

}  // namespace spmd::impl
