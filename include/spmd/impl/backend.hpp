#pragma once
// The communication backends' machinery (see spmd/backend.hpp): CUDA-awareness of the MPI, the
// SPMD_BACKEND override, NCCL (compiled into src/backend.cpp, so users never include nccl.h), the
// stream of an execution space instance, and the resolution of a plan's backend.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>

#include "spmd/backend.hpp"
#include "spmd/comm.hpp"
#include "spmd/config.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::impl {
/// True when the MPI library can read and write CUDA device memory (SPMD_MPI_CUDA_AWARE=0/1
/// overrides the library's own answer). Local.
bool mpi_cuda_aware();
/// The environment's SPMD_BACKEND (automatic when unset). Local.
Backend env_backend();
/// True when NCCL can be used on `comm`: built with NCCL, and no two ranks share a GPU.
/// Collective on first call per communicator (creates the NCCL communicator), then Local.
bool nccl_usable(const Comm& comm);
/// The NCCL communicator of `comm` (an ncclComm_t), created on first use. Collective then.
void* nccl_comm(const Comm& comm);

/// One point-to-point transfer of a grouped NCCL exchange.
struct P2P {
  void* data;
  std::size_t bytes;
  int peer;
};
/// Post `recvs` and `sends` as one NCCL group on `stream` (a cudaStream_t). Transfers between
/// one pair of ranks match in the order they are listed. Local call, neighbour-collective effect.
void nccl_exchange(const Comm& comm, void* stream, const P2P* sends, int nsends, const P2P* recvs, int nrecvs);
/// Element kinds NCCL reduces.
enum class Kind { i32, i64, u32, u64, f32, f64 };
template <class T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, float>)
    return Kind::f32;
  else if constexpr (std::is_same_v<T, double>)
    return Kind::f64;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 4)
    return Kind::i32;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) == 8)
    return Kind::i64;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 4)
    return Kind::u32;
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8)
    return Kind::u64;
  else
    static_assert(sizeof(T) == 0, "spmd: NCCL reduces 32/64-bit integers, float and double only");
}
/// In-place NCCL all-reduce of `count` elements at `data` on `stream`. Collective.
void nccl_allreduce(const Comm& comm, void* stream, void* data, std::size_t count, Kind kind, Op op);

/// The CUDA stream of an execution space instance (nullptr off CUDA).
template <class Exec>
void* stream_of(const Exec& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return static_cast<void*>(exec.cuda_stream());
#endif
  (void)exec;
  return nullptr;
}

/// The backend a plan on `comm` moving data in MemorySpace uses. Collective (may create the
/// NCCL communicator); throws the same error everywhere for an impossible request.
template <class MemorySpace>
Backend resolve_backend(const Comm& comm, Backend requested, const char* fn) {
  const bool device = !host_accessible<MemorySpace>();
  if (requested == Backend::automatic) {
    // SPMD_BACKEND=mpi forces MPI; =nccl forces NCCL for device data (host data stays on MPI).
    const Backend env = env_backend();
    if (env == Backend::mpi || (env == Backend::nccl && !device)) return Backend::mpi;
    requested = env;
  }
  if (requested == Backend::mpi) return Backend::mpi;
  if (requested == Backend::nccl) {
    if (!SPMD_HAVE_NCCL)
      throw Error(std::string(fn) +
                      ": Backend::nccl requested, but spmdarray was built without NCCL "
                      "(configure with -DSPMD_ENABLE_NCCL=ON)",
                  true);
    if (!device)
      throw Error(
          std::string(fn) + ": Backend::nccl moves device memory only; this array lives in " + MemorySpace::name(),
          true);
    if (!nccl_usable(comm))
      throw Error(std::string(fn) +
                      ": Backend::nccl requested, but NCCL cannot run on this communicator "
                      "(two ranks share a GPU)",
                  true);
    return Backend::nccl;
  }
  // automatic
  if (SPMD_HAVE_NCCL && device && nccl_usable(comm)) return Backend::nccl;
  return Backend::mpi;
}

}  // namespace spmd::impl
