#pragma once
/// \file gather.hpp
/// Moving a whole distributed array to or from host memory as one global row-major vector: for
/// tests, small inputs and small outputs (the rank that holds the vector holds the whole array,
/// twice during the move). They run on the one communication engine: a redistribution
/// (impl::RegionPlan) to or from a distribution of the whole shape held by one rank alone (every
/// rank alone for allgather), so no message is larger than one rank's block.

#include <Kokkos_Core.hpp>

#include <vector>

#include "spmd/array.hpp"
#include "spmd/impl/region_plan.hpp"

namespace spmd {

namespace impl {
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
}  // namespace impl

/// The whole array, row-major, on rank `root` (an empty vector on the others); the copies run on
/// `exec`. Collective.
template <class T, int N, class M>
std::vector<T> gather(const typename M::execution_space& exec, const Array<T, N, M>& a, int root = 0) {
  const char* fn = "spmd::gather";
  const impl::Region region("spmd::gather::gather");
  const Comm& comm = a.comm();
  impl::check_root(fn, comm, root);
  const Distribution<N> to = impl::whole_here<N>(comm.rank() == root, a.shape());
  const Array<T, N, M> whole = to.is_null() ? Array<T, N, M>() : Array<T, N, M>(to, Label{fn}, Init::none);
  impl::RegionPlan<T, N, N, M>(comm, a.distribution(), impl::Selection<N, N>::identity(), to, Backend::automatic, fn)
      .apply(exec, whole, a);
  return to.is_null() ? std::vector<T>() : impl::owned_to_host(whole);
}
/// gather() on a default instance. Collective.
template <class T, int N, class M>
std::vector<T> gather(const Array<T, N, M>& a, int root = 0) {
  return gather(typename M::execution_space(), a, root);
}

/// The whole array, row-major, on every rank; the copies run on `exec`. Collective.
template <class T, int N, class M>
std::vector<T> allgather(const typename M::execution_space& exec, const Array<T, N, M>& a) {
  const char* fn = "spmd::allgather";
  const impl::Region region("spmd::gather::allgather");
  const Distribution<N> to = impl::whole_here<N>(true, a.shape());
  const Array<T, N, M> whole(to, Label{fn}, Init::none);
  impl::RegionPlan<T, N, N, M>(a.comm(), a.distribution(), impl::Selection<N, N>::identity(), to, Backend::automatic,
                               fn)
      .apply(exec, whole, a);
  return impl::owned_to_host(whole);
}
/// allgather() on a default instance. Collective.
template <class T, int N, class M>
std::vector<T> allgather(const Array<T, N, M>& a) {
  return allgather(typename M::execution_space(), a);
}

/// Set the owned values of `a` from `global` (row-major, a.size() elements), read on rank `root`
/// only (the other ranks may pass an empty vector). Halos are not updated. Collective; throws
/// the same spmd::Error on every rank when root's vector has the wrong size. The copies run on
/// `exec`.
template <class T, int N, class M>
void scatter(const typename M::execution_space& exec, const Array<T, N, M>& a, const std::vector<T>& global,
             int root = 0) {
  const char* fn = "spmd::scatter";
  const impl::Region region("spmd::gather::scatter");
  const Comm& comm = a.comm();
  impl::check_root(fn, comm, root);
  comm.check(comm.rank() != root || static_cast<index_t>(global.size()) == a.size(),
             impl::str(fn, ": the host array on root ", root, " has ", global.size(), " elements, the array '",
                       a.label(), "' of shape ", impl::shape_str(a.shape()), " has ", a.size()));
  const Distribution<N> from = impl::whole_here<N>(comm.rank() == root, a.shape());
  Array<T, N, M> whole;
  if (!from.is_null()) {
    whole = Array<T, N, M>(from, Label{fn}, Init::none);
    impl::host_to_owned(whole, global);
  }
  impl::RegionPlan<T, N, N, M>(comm, from, impl::Selection<N, N>::identity(), a.distribution(), Backend::automatic, fn)
      .apply(exec, a, whole);
}
/// scatter() on a default instance. Collective.
template <class T, int N, class M>
void scatter(const Array<T, N, M>& a, const std::vector<T>& global, int root = 0) {
  scatter(typename M::execution_space(), a, global, root);
}

}  // namespace spmd
