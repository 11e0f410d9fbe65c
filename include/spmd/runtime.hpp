#pragma once
/// \file runtime.hpp
/// spmd::Runtime: MPI, then Kokkos; the reverse at exit.

#include <optional>
#include <string>

#include "spmd/comm.hpp"

namespace spmd {

/// Initializes MPI (MPI_Init_thread, MPI_THREAD_FUNNELED; skipped when the caller already did,
/// and then not finalized here either), then Kokkos; finalizes both in reverse order.
///
/// In a GPU build each rank takes one GPU, chosen by its node-local rank. When a node has more
/// ranks than GPUs the constructor throws, unless sharing is allowed with `--spmd-share-gpus` or
/// SPMD_SHARE_GPUS=1. With NCCL and several ranks it also makes world()'s NCCL communicator and
/// connects each rank to its ring neighbours (unless SPMD_BACKEND=mpi|ipc), so that the first
/// statement moving device data does not. Options it understands (removed from argv, so apps never see them):
///   --spmd-share-gpus      let several ranks of a node share a GPU (or SPMD_SHARE_GPUS=1)
///   --spmd-log-view        record the library's profiling regions and print a summary from
///                          rank 0 when the Runtime is destroyed (or SPMD_LOG_VIEW=1; one rank
///                          asking is enough; docs/profiling.md)
/// Any other `--spmd-*` option is an error, agreed on over MPI_COMM_WORLD: when even one rank was
/// given one, every rank throws the same collective spmd::Error (before Kokkos is initialized).
/// Kokkos options (--kokkos-threads=N, ...) are passed on to Kokkos and then also removed.
///
/// It also installs a terminate handler: an exception escaping main() is printed once (by rank 0
/// when every rank threw the same collective spmd::Error, else by each rank that threw) and the
/// job is ended with MPI_Abort, so nothing hangs.
///
/// Collective over MPI_COMM_WORLD (construction and destruction).
class Runtime {
 public:
  /// MPI, then Kokkos, with the options above taken out of argv. Collective over MPI_COMM_WORLD.
  Runtime(int& argc, char**& argv);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// A Comm duplicated from MPI_COMM_WORLD (the same duplicate on every call). Local.
  Comm world() const { return *world_; }
  /// The GPU this rank uses, or -1 in a build without a GPU backend. Local.
  int device_id() const { return device_id_; }
  /// Kokkos' default execution space name, e.g. "OpenMP" or "Cuda". Local.
  static std::string backend();

 private:
  void print_log_view() const noexcept;
  bool owns_mpi_ = false;
  bool log_view_ = false;
  int device_id_ = -1;
  std::optional<Comm> world_;
};

}  // namespace spmd
