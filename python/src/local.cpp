// a.local: the rank's owned block of a parent, zero-copy (a nanobind ndarray with a capsule that
// keeps the parent alive): a NumPy array over host-accessible storage; on a CUDA build a DLPack
// object over the device memory (device type CUDA, the device Kokkos runs on), which the Python
// side hands to CuPy (cupy.from_dlpack) when it is there. The agreement helper from_local needs.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <type_traits>

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
    const auto& v = a.local_with_halo();
    std::size_t shape[3] = {0, 0, 0};
    std::int64_t strides[3] = {0, 0, 0};
    T* p = v.data();
    for (int d = 0; d < P; ++d) {
      shape[d] = static_cast<std::size_t>(a.owned().extent(d));
      strides[d] = static_cast<std::int64_t>(v.stride(static_cast<std::size_t>(d)));
      if (shape[d] > 0) p += static_cast<std::ptrdiff_t>(a.halo()[d]) * strides[d];
    }
    auto owner = [&] {
      auto* keep = new std::shared_ptr<ParentBase>(h.parent);
      return nb::capsule(keep, [](void* q) noexcept { delete static_cast<std::shared_ptr<ParentBase>*>(q); });
    };
    // Kernels may still be writing the block: whoever reads it (NumPy on host-accessible device
    // memory such as CUDA UVM, CuPy or PyTorch on another stream) must see their results.
    if constexpr (!std::is_same_v<Mem, Kokkos::HostSpace>) Kokkos::fence();
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      h.parent->halo_stale = true;  // the block may be written through it
      return nb::cast(nb::ndarray<nb::numpy, T>(p, P, shape, owner(), strides), nb::rv_policy::reference);
    } else {
#if defined(KOKKOS_ENABLE_CUDA)
      if constexpr (std::is_same_v<Mem, Kokkos::CudaSpace>) {
        h.parent->halo_stale = true;
        const int dev = Kokkos::DefaultExecutionSpace().cuda_device();
        return nb::cast(nb::ndarray<T>(p, P, shape, owner(), strides, nb::dtype<T>(), nb::device::cuda::value, dev),
                        nb::rv_policy::reference);
      }
#endif
      throw Error::replicated(impl::str("spmdarray: a.local: no DLPack device type for ", Mem::name(),
                                        " memory (gather() or np.asarray(a) copy to the host)"));
    }
  });
}

bool any_rank(const Holder& h, bool flag) {
  return dispatch_parent(h.dtype(), h.prank(), [&](auto t, auto pc) {
    return h.array<decltype(t), decltype(pc)::value>().comm().allreduce(flag ? 1 : 0, Op::max) != 0;
  });
}

}  // namespace spmd::py
