#pragma once
// Host staging memory for communication plans whose data MPI cannot read (device memory with a
// host MPI). Shared by HaloExchange and RegionPlan.

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "spmd/impl/ndrange.hpp"

namespace spmd::impl {

/// Host memory that MPI can read and that copies quickly to and from MemorySpace.
template <class MemorySpace>
struct staging_space {
#if defined(KOKKOS_ENABLE_CUDA)
  using type = std::conditional_t<host_accessible<MemorySpace>(), MemorySpace, Kokkos::CudaHostPinnedSpace>;
#else
  using type = std::conditional_t<host_accessible<MemorySpace>(), MemorySpace, Kokkos::HostSpace>;
#endif
};

}  // namespace spmd::impl
