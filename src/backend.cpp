#include "spmd/impl/backend.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

#if SPMD_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace spmd::impl {

bool mpi_cuda_aware() {
  if (const char* v = std::getenv("SPMD_MPI_CUDA_AWARE"); v && *v) return std::strcmp(v, "0") != 0;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000 && defined(MPIX_GPU_SUPPORT_CUDA)
  int supported = 0;
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) != MPI_SUCCESS) return false;
  return supported != 0;
#else
  return false;
#endif
}

Backend env_backend() {
  const char* v = std::getenv("SPMD_BACKEND");
  if (!v || !*v || std::strcmp(v, "automatic") == 0) return Backend::automatic;
  if (std::strcmp(v, "mpi") == 0) return Backend::mpi;
  if (std::strcmp(v, "nccl") == 0) return Backend::nccl;
  throw Error(std::string("spmd: SPMD_BACKEND='") + v + "' is not one of automatic, mpi, nccl", true);
}

#if SPMD_HAVE_NCCL
namespace {
struct NcclState {
  ncclComm_t comm = nullptr;
  bool usable = false;
  ~NcclState() {
    if (comm) ncclCommDestroy(comm);
  }
};

void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw Error(std::string("spmd: ") + call + " failed: " + ncclGetErrorString(r));
}

}  // namespace
namespace {
NcclState& state(const Comm& comm) {
  auto& slot = impl::backend_state(comm);
  if (!slot) {
    auto s = std::make_shared<NcclState>();
    // Two ranks on one GPU: NCCL refuses ("duplicate GPU"). Agree on that first.
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) dev = -1;
    char bus[64] = {0};
    if (dev >= 0 && cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess) bus[0] = 0;
    std::vector<char> all(static_cast<std::size_t>(comm.size()) * sizeof(bus));
    SPMD_MPI_CHECK(MPI_Allgather(bus, sizeof(bus), MPI_CHAR, all.data(), sizeof(bus), MPI_CHAR, comm.raw()),
                   "spmd::nccl");
    char host[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    std::vector<char> hosts(static_cast<std::size_t>(comm.size()) * MPI_MAX_PROCESSOR_NAME);
    SPMD_MPI_CHECK(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                                 comm.raw()),
                   "spmd::nccl");
    bool duplicate = dev < 0;
    for (int a = 0; a < comm.size() && !duplicate; ++a)
      for (int b = a + 1; b < comm.size() && !duplicate; ++b)
        duplicate = std::strncmp(&hosts[a * MPI_MAX_PROCESSOR_NAME], &hosts[b * MPI_MAX_PROCESSOR_NAME],
                                 MPI_MAX_PROCESSOR_NAME) == 0 &&
                    std::strncmp(&all[a * sizeof(bus)], &all[b * sizeof(bus)], sizeof(bus)) == 0;
    duplicate = comm.allreduce(duplicate, Op::lor);
    if (!duplicate) {
      ncclUniqueId id;
      if (comm.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      SPMD_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm.raw()), "spmd::nccl");
      check_nccl(ncclCommInitRank(&s->comm, comm.size(), id, comm.rank()), "ncclCommInitRank");
      s->usable = true;
    }
    slot = s;
  }
  return *static_cast<NcclState*>(slot.get());
}

ncclRedOp_t nccl_op(Op op) {
  switch (op) {
    case Op::sum:
      return ncclSum;
    case Op::prod:
      return ncclProd;
    case Op::min:
      return ncclMin;
    case Op::max:
      return ncclMax;
    default:
      throw Error("spmd::nccl_allreduce: NCCL has no logical and/or; use Op::min/max on 0/1", true);
  }
}
ncclDataType_t nccl_type(Kind k) {
  switch (k) {
    case Kind::i32:
      return ncclInt32;
    case Kind::i64:
      return ncclInt64;
    case Kind::u32:
      return ncclUint32;
    case Kind::u64:
      return ncclUint64;
    case Kind::f32:
      return ncclFloat32;
    case Kind::f64:
      return ncclFloat64;
  }
  return ncclFloat64;
}
}  // namespace

void nccl_exchange(const Comm& comm, void* stream, const P2P* sends, int nsends, const P2P* recvs, int nrecvs) {
  auto c = static_cast<ncclComm_t>(nccl_comm(comm));
  auto s = static_cast<cudaStream_t>(stream);
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int i = 0; i < nrecvs; ++i)
    check_nccl(ncclRecv(recvs[i].data, recvs[i].bytes, ncclChar, recvs[i].peer, c, s), "ncclRecv");
  for (int i = 0; i < nsends; ++i)
    check_nccl(ncclSend(sends[i].data, sends[i].bytes, ncclChar, sends[i].peer, c, s), "ncclSend");
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void nccl_allreduce(const Comm& comm, void* stream, void* data, std::size_t count, Kind kind, Op op) {
  const Region region("spmd::comm::nccl_allreduce");
  const bool wide = kind == Kind::i64 || kind == Kind::u64 || kind == Kind::f64;
  profiling::count_collective(count * (wide ? 8 : 4));
  auto c = static_cast<ncclComm_t>(nccl_comm(comm));
  check_nccl(ncclAllReduce(data, data, count, nccl_type(kind), nccl_op(op), c, static_cast<cudaStream_t>(stream)),
             "ncclAllReduce");
}

bool nccl_usable(const Comm& comm) {
  return state(comm).usable;
}
void* nccl_comm(const Comm& comm) {
  auto& s = state(comm);
  if (!s.usable) throw Error("spmd: NCCL is not usable on this communicator (two ranks share a GPU)", true);
  return s.comm;
}
#else
bool nccl_usable(const Comm&) {
  return false;
}
void* nccl_comm(const Comm&) {
  throw Error("spmd: built without NCCL", true);
}
void nccl_exchange(const Comm&, void*, const P2P*, int, const P2P*, int) {
  throw Error("spmd: built without NCCL", true);
}
void nccl_allreduce(const Comm&, void*, void*, std::size_t, Kind, Op) {
  throw Error("spmd: built without NCCL", true);
}
#endif

}  // namespace spmd::impl
