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
#include "spmd/impl/gather_impl.hpp"
#include "spmd/impl/region_plan.hpp"

namespace spmd {

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
