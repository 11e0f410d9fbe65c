#pragma once
// The communication backends' machinery (see spmd/backend.hpp): CUDA-awareness of the MPI, the
// SPMD_BACKEND override, NCCL and CUDA IPC (compiled into src/backend.cpp, so users never include
// nccl.h or call the CUDA runtime), the intra-node channel of Backend::ipc, the stream of an
// execution space instance, ordering between two instances, the library's side instance for
// communication beside computation, and the resolution of a plan's backend.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

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

// ---- Backend::ipc ------------------------------------------------------------------------------

/// Where the data of a Backend::ipc plan lives: device memory (CUDA IPC) or host memory (POSIX
/// shared memory).
enum class IpcSpace { device, host };

/// True for the memory spaces Backend::ipc serves: CudaSpace (device) and HostSpace (host). Other
/// spaces (UVM, pinned host memory that device kernels write) have no ipc transport.
template <class MemorySpace>
constexpr bool ipc_space_supported() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<MemorySpace, Kokkos::CudaSpace>) return true;
#endif
  return std::is_same_v<MemorySpace, Kokkos::HostSpace>;
}
template <class MemorySpace>
constexpr IpcSpace ipc_space_of() {
  return host_accessible<MemorySpace>() ? IpcSpace::host : IpcSpace::device;
}

/// True when this rank can reach every rank of `peers` with Backend::ipc for data in `space`:
/// the same node and, for device memory, a GPU this rank's GPU can access (the same one, or one
/// with cudaDeviceCanAccessPeer). Collective on the first call per communicator (it gathers every
/// rank's node and GPU once and keeps them with the Comm), then Local.
bool ipc_reachable(const Comm& comm, const std::vector<int>& peers, IpcSpace space);

/// One transfer of a plan's channel: `count` points at point `offset` of this rank's send (or
/// receive) buffer, to (or from) `rank`.
struct Link {
  int rank;
  index_t offset;
  index_t count;
};

/// The transport of a Backend::ipc MessagePlan (src/backend.cpp). It owns the plan's receive
/// buffer, allocated where peers can map it (cudaMalloc'd device memory exported with
/// cudaIpcGetMemHandle; a POSIX shared-memory object for host data), maps every peer's receive
/// buffer once (at the first start() after allocate_recv(): handles, events and the per-peer
/// offsets travel over MPI), and per exchange:
///   start(stream):  make the stream wait for the last exchange's stream, record this rank's
///                   `free` event on it (the receive buffer is free once the work queued before
///                   this exchange, e.g. the last unpack, is done) and tell every sender so with a
///                   zero-byte message; for each receiver, once its notice has arrived: make the
///                   stream wait for the receiver's `free` event and copy the message into the
///                   receiver's buffer (cudaMemcpyAsync, peer to peer); then record this rank's
///                   `sent` event and tell every receiver;
///   wait_receives(stream): wait for every sender's notice and make the stream wait for its
///                   `sent` event (the data is then in the receive buffer, in stream order).
/// The notices order the events' records and waits between the processes: a peer waits on the
/// record made for this very exchange, because the next record is made only after this rank's
/// next notice, which it sends after its own wait. The host never waits for the GPU. Host data:
/// the same protocol with memcpy into the mapped shared memory and no events (host kernels have
/// finished when start() is called).
class IpcChannel {
 public:
  /// A channel on `comm` using tags `tag` (notices to senders) and `tag + 1` (to receivers)
  /// between this rank and the ranks of `sends` and `recvs`; `fn` names the plan's owner in
  /// errors. Local (the first start() communicates).
  IpcChannel(const Comm& comm, int tag, IpcSpace space, std::vector<Link> sends, std::vector<Link> recvs,
             const std::string& fn);
  ~IpcChannel();
  IpcChannel(const IpcChannel&) = delete;
  IpcChannel& operator=(const IpcChannel&) = delete;

  /// A receive buffer of `bytes` (at least) that peers can map; it replaces the current one,
  /// which is released once the peers have mapped the new one (at the next start()). Local.
  void* allocate_recv(std::size_t bytes);
  /// Post this exchange's copies of `point_bytes` bytes per point from `send` (this rank's send
  /// buffer) on `stream` (a cudaStream_t; ignored for host data). Maps the peers' buffers first
  /// when a receive buffer changed. Neighbour-collective.
  void start(void* stream, const void* send, std::size_t point_bytes);
  /// Make `stream` see every message of this exchange in the receive buffer. Local call,
  /// completes a neighbour-collective operation.
  void wait_receives(void* stream);
  /// Complete the notices this rank sent. Local.
  void wait_sends();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// ---- streams -------------------------------------------------------------------------------------

/// The CUDA stream of an execution space instance (nullptr off CUDA).
template <class Exec>
void* stream_of(const Exec& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return static_cast<void*>(exec.cuda_stream());
#endif
  (void)exec;
  return nullptr;
}

#if defined(KOKKOS_ENABLE_CUDA)
/// Work queued on stream `waiter` after this call starts after the work queued on `signaller`
/// so far (an event recorded on one and waited for on the other; the host does not wait). Local.
void cuda_stream_after(void* waiter, void* signaller);
/// A Kokkos::Cuda instance on a non-blocking stream of the library's own, made on first use and
/// released at Kokkos::finalize. Local.
Kokkos::Cuda cuda_side_instance();
#endif

/// Order work: what is queued on `waiter` from now on starts after what is queued on `signaller`
/// so far. On CUDA an event (no host wait; nothing when both share a stream); elsewhere the
/// signaller is fenced. Local.
template <class Exec>
void order_after(const Exec& waiter, const Exec& signaller) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
    if (waiter.cuda_stream() != signaller.cuda_stream()) cuda_stream_after(stream_of(waiter), stream_of(signaller));
    return;
  }
#endif
  (void)waiter;
  fence(signaller, "spmd::order_after");
}

/// An instance of Exec for communication beside computation (a split-phase exchange overlapping
/// kernels on the default instance): on CUDA the library's side stream; elsewhere a default
/// instance (host spaces run one kernel at a time anyway). Local.
template <class Exec>
Exec side_instance() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) return cuda_side_instance();
#endif
  return Exec();
}

// ---- resolution ----------------------------------------------------------------------------------

/// The backend of a collective (spmd::allreduce) on `comm` over data in MemorySpace: nccl or mpi
/// (ipc has no collectives: asked for, or set in SPMD_BACKEND, it runs on MPI). Collective (may
/// create the NCCL communicator); throws the same error everywhere for an impossible request.
template <class MemorySpace>
Backend resolve_backend(const Comm& comm, Backend requested, const char* fn) {
  const bool device = !host_accessible<MemorySpace>();
  if (requested == Backend::automatic) {
    // SPMD_BACKEND=mpi forces MPI; =nccl forces NCCL for device data (host data stays on MPI).
    const Backend env = env_backend();
    if (env == Backend::mpi || env == Backend::ipc || (env == Backend::nccl && !device)) return Backend::mpi;
    requested = env;
  }
  if (requested == Backend::mpi || requested == Backend::ipc) return Backend::mpi;
  if (requested == Backend::nccl) {
    if (!SPMD_HAVE_NCCL)
      throw Error::replicated(std::string(fn) +
                              ": Backend::nccl requested, but spmdarray was built without NCCL "
                              "(configure with -DSPMD_ENABLE_NCCL=ON)");
    if (!device)
      throw Error::replicated(std::string(fn) + ": Backend::nccl moves device memory only; this array lives in " +
                              MemorySpace::name());
    if (!nccl_usable(comm))
      throw Error::replicated(std::string(fn) +
                              ": Backend::nccl requested, but NCCL cannot run on this communicator "
                              "(two ranks share a GPU)");
    return Backend::nccl;
  }
  // automatic: a one-rank communicator never needs NCCL (and its creation costs ~0.5 s)
  if (SPMD_HAVE_NCCL && device && comm.size() > 1 && nccl_usable(comm)) return Backend::nccl;
  return Backend::mpi;
}

/// The backend of a point-to-point plan on `comm` moving data in MemorySpace between this rank
/// and `peers` (backend.hpp says what automatic picks). Collective: every rank calls it for the
/// same plan (the ipc verdict is agreed over `comm`, NCCL may be created); throws the same error
/// everywhere for an impossible request.
template <class MemorySpace>
Backend resolve_plan_backend(const Comm& comm, Backend requested, const char* fn, const std::vector<int>& peers) {
  const bool device = !host_accessible<MemorySpace>();
  const Backend env = env_backend();
  if (requested == Backend::automatic && env == Backend::ipc) requested = Backend::ipc;
  if (requested == Backend::ipc) {
    if (!ipc_space_supported<MemorySpace>())
      throw Error::replicated(std::string(fn) +
                              ": Backend::ipc moves CUDA device memory or host memory; this plan's data lives in " +
                              MemorySpace::name());
    const bool here = ipc_reachable(comm, peers, ipc_space_of<MemorySpace>());
    if (comm.allreduce(here ? 1 : 0, Op::min) != 1)
      throw Error::replicated(
          std::string(fn) +
          ": Backend::ipc requested, but a rank's peers are on another node or on a GPU its own cannot "
          "access (cudaDeviceCanAccessPeer)");
    return Backend::ipc;
  }
  if (requested != Backend::automatic || env != Backend::automatic || comm.size() == 1 || !device)
    return resolve_backend<MemorySpace>(comm, requested, fn);
  // Device data, automatic: NCCL where it can run, else ipc where every rank reaches its peers
  // (agreed), else MPI. NCCL first because it measured faster than ipc on a 4 x H200 NVLink node
  // (2026-11-27, bench_halo: a 2-D face 33 against 45 us at 4 GPUs; stencil --fast at 16384^2 on
  // 4 GPUs 0.93 against 0.88 strong-scaling efficiency; docs/performance.md).
  if (SPMD_HAVE_NCCL && nccl_usable(comm)) return Backend::nccl;
  if constexpr (ipc_space_supported<MemorySpace>()) {
    const bool here = ipc_reachable(comm, peers, ipc_space_of<MemorySpace>());
    if (comm.allreduce(here ? 1 : 0, Op::min) == 1) return Backend::ipc;
  }
  return resolve_backend<MemorySpace>(comm, Backend::automatic, fn);
}

}  // namespace spmd::impl
