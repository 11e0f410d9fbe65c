#pragma once
/// \file redistribute.hpp
/// Copying owned data between two distributions of one global shape: spmd::Redistribution (a
/// reusable plan) and spmd::redistribute (one shot). Both run on impl::RegionPlan
/// (impl/region_plan.hpp), the plan that also moves slices, expression operands and
/// spmd::transpose (shape.hpp): one message per pair of ranks, plan built once, nothing allocated per apply.
/// Destination first, as everywhere in spmd:: (spmd::blas keeps the BLAS order).

#include <Kokkos_Core.hpp>

#include "spmd/array.hpp"
#include "spmd/impl/region_plan.hpp"

namespace spmd {

/// A reusable plan copying arrays from one distribution to another of the same global shape
/// (other process grid, halo widths, or a sub-communicator).
template <class T, int N, class Mem = DefaultMemorySpace>
class Redistribution {
 public:
  /// The execution space of the copies.
  using execution_space = typename Mem::execution_space;
  /// Plan from `from` to `to` over `from`'s communicator. On ranks outside `to`'s
  /// sub-communicator pass a null Distribution<N>() as `to`. Collective over from.comm(); throws
  /// the same spmd::Error on every rank when the global shapes differ.
  Redistribution(const Distribution<N>& to, const Distribution<N>& from, Backend backend = Backend::automatic)
      : plan_(from, impl::Selection<N, N>::identity(), to, backend, "spmd::Redistribution") {}
  /// Plan over `comm`, of which the communicators of `from` and `to` are sub-communicators
  /// (either may be null on ranks outside it). Collective over `comm`.
  Redistribution(const Comm& comm, const Distribution<N>& to, const Distribution<N>& from,
                 Backend backend = Backend::automatic)
      : plan_(comm, from, impl::Selection<N, N>::identity(), to, backend, "spmd::Redistribution") {}
  /// Copy the owned points of `src` into the owned points of `dst` (halos untouched), on `exec`.
  /// Either may be a null Array on ranks that do not hold its distribution. Collective.
  void apply(const execution_space& exec, const Array<T, N, Mem>& dst, const Array<T, N, Mem>& src) const {
    const impl::Region region("spmd::redistribute::apply");
    plan_.apply(exec, dst, src);
  }
  /// apply() on a default instance. Collective.
  void apply(const Array<T, N, Mem>& dst, const Array<T, N, Mem>& src) const { apply(execution_space(), dst, src); }
  /// Messages this rank sends per apply. Local.
  int num_sends() const { return plan_.num_sends(); }
  /// Messages this rank receives per apply. Local.
  int num_recvs() const { return plan_.num_recvs(); }
  /// The backend the plan uses. Local.
  Backend backend() const { return plan_.backend(); }

 private:
  impl::RegionPlan<T, N, N, Mem> plan_;
};

/// dst = src where the two have the same global shape and any distributions; builds a plan and
/// applies it once (keep a Redistribution to repeat), on `exec`. Every rank of src's
/// communicator calls it; ranks outside dst's sub-communicator pass a null Array as dst.
/// Collective.
template <class T, int N, class Mem>
void redistribute(const typename Mem::execution_space& exec, const Array<T, N, Mem>& dst, const Array<T, N, Mem>& src) {
  const impl::Region region("spmd::redistribute::redistribute");
  Redistribution<T, N, Mem>(dst.distribution(), src.distribution()).apply(exec, dst, src);
}
/// redistribute() on a default instance. Collective.
template <class T, int N, class Mem>
void redistribute(const Array<T, N, Mem>& dst, const Array<T, N, Mem>& src) {
  redistribute(typename Mem::execution_space(), dst, src);
}

// spmd::transpose (the 2-D a.T and the N-d np.transpose(a, axes)) is in shape.hpp.

}  // namespace spmd
