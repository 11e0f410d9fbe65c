#pragma once
// Gather and scatter, implementation (gather.hpp checks and dispatches): a rank's owned block to
// and from a contiguous host vector, the agreed root, and the distribution held by one rank.

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::impl {

template <class Packed, int N, std::size_t... D>
Packed make_packed(const Box<N>& b, std::index_sequence<D...>) {
  return Packed(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::gather::packed")),
                static_cast<std::size_t>(b.extent(D))...);
}
/// The owned block of `a` as a contiguous host vector (row-major over the owned box). Local.
template <class T, int N, class M>
std::vector<T> owned_to_host(const Array<T, N, M>& a) {
  std::vector<T> out(static_cast<std::size_t>(a.owned().size()));
  if (out.empty()) return out;
  using Packed = Kokkos::View<typename add_stars<T, N>::type, Kokkos::LayoutRight, M>;
  Packed packed = make_packed<Packed>(a.owned(), std::make_index_sequence<N>{});
  Kokkos::deep_copy(packed, a.local());
  Kokkos::View<typename add_stars<T, N>::type, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged> host(
      out.data(), packed.layout());
  Kokkos::deep_copy(host, packed);
  return out;
}
/// The owned block of `a` from a contiguous host vector. Local.
template <class T, int N, class M>
void host_to_owned(const Array<T, N, M>& a, const std::vector<T>& in) {
  if (in.empty()) return;
  using Packed = Kokkos::View<typename add_stars<T, N>::type, Kokkos::LayoutRight, M>;
  Packed packed = make_packed<Packed>(a.owned(), std::make_index_sequence<N>{});
  Kokkos::View<typename add_stars<const T, N>::type, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>
      host(in.data(), packed.layout());
  Kokkos::deep_copy(packed, host);
  Kokkos::deep_copy(a.local(), packed);
}
inline void check_root(const char* fn, const Comm& comm, int root) {
  // agreed: a root only some ranks pass wrong (or different roots) must not leave others waiting
  int r[2] = {root, -root};
  comm.allreduce(r, 2, Op::max);
  comm.check(root >= 0 && root < comm.size(),
             str(fn, ": root ", root, " is not a rank of a communicator of ", comm.size()));
  if (r[0] != -r[1]) throw Error::replicated(str(fn, ": the ranks pass different roots (", -r[1], " to ", r[0], ")"));
}
/// A distribution of `shape` held by this rank alone, or a null one. Local.
template <int N>
Distribution<N> whole_here(bool here, const std::common_type_t<Index<N>>& shape) {
  return here ? Distribution<N>(Comm(MPI_COMM_SELF), shape) : Distribution<N>();
}

}  // namespace spmd::impl
