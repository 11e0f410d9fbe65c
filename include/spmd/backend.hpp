#pragma once
/// \file backend.hpp
/// How communication plans move array data between ranks. The choice is made once, when a plan
/// is built, never per message.
///
///   Backend::mpi   MPI point-to-point / collectives. Device data goes to MPI directly when the
///                  MPI is CUDA-aware (MPIX_Query_cuda_support / MPIX_GPU_query_support, or
///                  SPMD_MPI_CUDA_AWARE=1), otherwise through pinned host staging buffers.
///   Backend::nccl  NCCL send/recv and all-reduce on the execution space's stream (device data
///                  only; needs SPMD_ENABLE_NCCL and one GPU per rank).
///   Backend::ipc   within one node: each plan maps its peers' receive buffers once (CUDA IPC
///                  memory handles for device data, POSIX shared memory for host data) and copies
///                  its messages straight into them (over NVLink between GPUs), ordered by CUDA
///                  IPC events and zero-byte MPI notices; no host synchronisation of the GPU.
///                  Point-to-point plans only (halos, redistributions, moved operands, sparse
///                  imports); every peer of the plan must share the node (and, for device data,
///                  be able to reach this GPU: cudaDeviceCanAccessPeer).
///   Backend::automatic  for device data: NCCL when the build has it and it can run (one GPU
///                  per rank), else ipc for a plan whose ranks all share one node with peer access
///                  between their GPUs, else MPI (NCCL measured faster than ipc on a 4 x H200
///                  node); for host data MPI; on a one-rank communicator MPI (nothing is ever sent).
///                  SPMD_BACKEND=mpi|nccl|ipc in the environment forces one (an error where it
///                  cannot run; nccl leaves host data on MPI; collectives under ipc use MPI).
///
/// The machinery behind it (resolution, NCCL and IPC calls, CUDA-awareness) is in
/// impl/backend.hpp and src/backend.cpp; only the communication engine (impl/messages.hpp) and the
/// device all-reduce use it.

namespace spmd {

/// How a communication plan moves data: `automatic` (see above), `mpi` (host-staged unless the MPI
/// is CUDA-aware), `nccl`, `ipc` (intra-node peer copies). Chosen once per plan.
enum class Backend { automatic, mpi, nccl, ipc };

/// "automatic", "mpi", "nccl" or "ipc". Local.
inline const char* to_string(Backend b) {
  switch (b) {
    case Backend::automatic:
      return "automatic";
    case Backend::mpi:
      return "mpi";
    case Backend::nccl:
      return "nccl";
    case Backend::ipc:
      return "ipc";
  }
  return "?";
}

}  // namespace spmd
