// a.local: the rank's owned block of a parent as a NumPy array over the library's host storage
// (zero-copy, nanobind ndarray with a capsule that keeps the parent alive), and the agreement
// helper from_local needs. A device build (memory not accessible from the host) raises.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>

#include "core.hpp"

namespace nb = nanobind;

namespace spmd::py {

nb::object local_block(const Holder& h) {
  if (!h.whole())
    throw Error::replicated("spmdarray: a.local of a view (take the whole array's block: a.local is per parent array)");
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) -> nb::object {
    using T = decltype(t);
    constexpr int P = decltype(pc)::value;
    const auto& a = h.array<T, P>();
    using Mem = typename Array<T, P>::memory_space;
    if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      throw Error::replicated(impl::str("spmdarray: a.local on a device build (the block lives in ", Mem::name(),
                                        " memory; gather() or np.asarray(a) copy to the host)"));
    } else {
      const auto& v = a.local_with_halo();
      std::size_t shape[3] = {0, 0, 0};
      std::int64_t strides[3] = {0, 0, 0};
      T* p = v.data();
      for (int d = 0; d < P; ++d) {
        shape[d] = static_cast<std::size_t>(a.owned().extent(d));
        strides[d] = static_cast<std::int64_t>(v.stride(static_cast<std::size_t>(d)));
        if (shape[d] > 0) p += static_cast<std::ptrdiff_t>(a.halo()[d]) * strides[d];
      }
      auto* keep = new std::shared_ptr<ParentBase>(h.parent);
      nb::capsule owner(keep, [](void* q) noexcept { delete static_cast<std::shared_ptr<ParentBase>*>(q); });
      h.parent->halo_stale = true;  // the block may be written through it
      return nb::cast(nb::ndarray<nb::numpy, T>(p, P, shape, owner, strides), nb::rv_policy::reference);
    }
  });
}

bool any_rank(const Holder& h, bool flag) {
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) {
    return h.array<decltype(t), decltype(pc)::value>().comm().allreduce(flag ? 1 : 0, Op::max) != 0;
  });
}

}  // namespace spmd::py
