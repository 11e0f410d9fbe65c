#include "spmd/runtime.hpp"

#include <Kokkos_Core.hpp>
#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include "spmd/impl/backend.hpp"
#include "backend_private.hpp"
#include "spmd/impl/profiling.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

namespace spmd {
namespace {

int world_rank() {
  int rank = 0;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

[[noreturn]] void terminate_handler() {
  const int rank = world_rank();
  bool collective = false;
  std::string what = "unknown exception";
  if (auto ep = std::current_exception()) {
    try {
      std::rethrow_exception(ep);
    } catch (const Error& e) {
      collective = e.collective();
      what = e.what();
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
  } else {
    what = "std::terminate called without an active exception";
  }
  if (!collective) {
    std::fprintf(stderr, "spmd: rank %d: uncaught exception: %s\n", rank, what.c_str());
  } else if (rank == 0) {
    std::fprintf(stderr, "spmd: uncaught exception (on every rank): %s\n", what.c_str());
  } else {
    // Every rank throws the same error: let rank 0 print it before anybody aborts the job.
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  std::fflush(stderr);
  // Give the launcher time to forward what was printed: MPI_Abort may tear the job down first.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

bool env_true(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

Runtime::Runtime(int& argc, char**& argv) {
  std::set_terminate(terminate_handler);

  // Take our options out of argv. A bad --spmd-* option is agreed on below, once MPI is up, so
  // that every rank throws the same error even when the ranks were given different arguments.
  bool share_gpus = env_true("SPMD_SHARE_GPUS");
  bool log_view = env_true("SPMD_LOG_VIEW");
  std::string bad;
  {
    int out = 1;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--spmd-share-gpus") == 0)
        share_gpus = true;
      else if (std::strcmp(argv[i], "--spmd-log-view") == 0)
        log_view = true;
      else if (std::strncmp(argv[i], "--spmd-", 7) == 0) {
        if (bad.empty())
          bad = impl::str("spmd::Runtime: unknown option '", argv[i], "'; known: --spmd-share-gpus, --spmd-log-view");
      } else {
        argv[out++] = argv[i];
      }
    }
    argc = out;
    argv[argc] = nullptr;
  }
  // SPMD_BACKEND is read on every rank when a plan picks its backend; a bad value is a local
  // error there, so it is agreed on here, once, with the options.
  try {
    (void)impl::env_backend();
  } catch (const Error& e) {
    if (bad.empty()) bad = e.what();
  }

  int initialized = 0;
  SPMD_MPI_CHECK(MPI_Initialized(&initialized), "spmd::Runtime::Runtime");
  if (!initialized) {
    int provided = 0;
    SPMD_MPI_CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "spmd::Runtime::Runtime");
    owns_mpi_ = true;
  }
  world_.emplace(MPI_COMM_WORLD);
  world_->check(bad.empty(), bad);
  // One rank's option (or environment) switches the summary on for all: it is gathered collectively.
  log_view_ = world_->allreduce(log_view ? 1 : 0, Op::max) == 1;

  // One GPU per node-local rank.
#if defined(KOKKOS_ENABLE_CUDA)
  {
    Comm node = world_->node_local();
    // The CUDA runtime's count (Kokkos 4 dropped Cuda::detect_device_count); an error (no
    // driver, no device) counts as no GPU and is named in the message.
    int ngpu = 0;
    std::string why;
    if (const cudaError_t err = cudaGetDeviceCount(&ngpu); err != cudaSuccess) {
      (void)cudaGetLastError();  // clear it: Kokkos' initialisation must not see it
      ngpu = 0;
      why = impl::str(" (cudaGetDeviceCount: ", cudaGetErrorString(err), ")");
    }
    const bool too_many = ngpu == 0 || (node.size() > ngpu && !share_gpus);
    world_->check(!too_many, ngpu == 0 ? "spmd::Runtime: this is a CUDA build but no GPU is visible" + why
                                       : impl::str("spmd::Runtime: ", node.size(), " ranks on a node with ", ngpu,
                                                   " GPUs; use at most one rank per GPU, or allow sharing with "
                                                   "--spmd-share-gpus (or SPMD_SHARE_GPUS=1)"));
    device_id_ = node.rank() % ngpu;
  }
#else
  (void)share_gpus;
#endif

  // Pass argv on to Kokkos (for --kokkos-* options), plus the device we chose.
  std::vector<std::string> storage(argv, argv + argc);
  if (device_id_ >= 0) storage.push_back("--kokkos-device-id=" + std::to_string(device_id_));
  std::vector<char*> kargv;
  for (auto& s : storage) kargv.push_back(s.data());
  kargv.push_back(nullptr);
  int kargc = static_cast<int>(storage.size());
  Kokkos::initialize(kargc, kargv.data());
  // Kokkos has read its options: the application's argv no longer holds them.
  int out = 1;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--kokkos-", 9) != 0) argv[out++] = argv[i];
  argc = out;
  argv[argc] = nullptr;
  // The world's NCCL communicator (device data moves through NCCL between GPUs by default) is
  // made here, beside MPI and the GPUs, and each rank connected to its ring neighbours, not
  // inside the first statement that moves device data: the two took 0.72 s on two H200s, which
  // a user's timer around the first iteration measured (a NumPy program at 2 GPUs: 28 G points/s
  // where 105 without them). Not when SPMD_BACKEND keeps device data off NCCL. Collective over
  // MPI_COMM_WORLD, like the rest.
  if (SPMD_HAVE_NCCL && device_id_ >= 0 && world_->size() > 1) {
    const Backend env = impl::env_backend();
    if (env == Backend::automatic || env == Backend::nccl) impl::nccl_connect_ring(*world_);
  }
  if (log_view_) {
    impl::profiling::reset();
    impl::profiling::set_recording(true);
  }
}

void Runtime::print_log_view() const noexcept {
  try {
    const Comm& comm = *world_;
    const auto rows = impl::profiling::gather(comm.raw());
    const double t = impl::profiling::elapsed();
    const double tmax = comm.allreduce(t, Op::max), tmin = comm.allreduce(t, Op::min);
    if (comm.rank() == 0) {
      const std::string text = impl::profiling::format(rows, comm.size(), tmin, tmax);
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {  // a destructor cannot throw: say what was lost
    std::fprintf(stderr, "spmd: --spmd-log-view: no summary: %s\n", e.what());
  }
}

Runtime::~Runtime() {
  if (log_view_ && world_) {
    impl::profiling::set_recording(false);
    // Not while an exception unwinds: the other ranks may not be here to gather.
    if (std::uncaught_exceptions() == 0) print_log_view();
  }
  world_.reset();
  impl::reap_parked();  // buffers of abandoned exchanges that have completed, before Kokkos goes
  if (Kokkos::is_initialized()) Kokkos::finalize();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi_ && !finalized) MPI_Finalize();
}

std::string Runtime::backend() {
  return Kokkos::DefaultExecutionSpace::name();
}

}  // namespace spmd
