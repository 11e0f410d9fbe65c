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
///   Backend::automatic  NCCL for device data when the build has it and it is usable, else MPI.
///                  SPMD_BACKEND=mpi in the environment forces MPI; SPMD_BACKEND=nccl forces NCCL
///                  for device data (an error where NCCL cannot run) and leaves host data on MPI.
///
/// The machinery behind it (resolution, NCCL calls, CUDA-awareness) is in impl/backend.hpp and
/// src/backend.cpp; only the communication engine (impl/messages.hpp) and the device all-reduce
/// use it.

namespace spmd {

/// How a communication plan moves data: `automatic` (NCCL for device data when built with it,
/// else MPI), `mpi` (host-staged unless the MPI is CUDA-aware), `nccl`. Chosen once per plan.
enum class Backend { automatic, mpi, nccl };

/// "automatic", "mpi" or "nccl". Local.
inline const char* to_string(Backend b) {
  switch (b) {
    case Backend::automatic:
      return "automatic";
    case Backend::mpi:
      return "mpi";
    case Backend::nccl:
      return "nccl";
  }
  return "?";
}

}  // namespace spmd
