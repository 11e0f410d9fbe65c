#include "spmd/impl/backend.hpp"
#include "backend_private.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif
#if SPMD_HAVE_NCCL
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
  if (std::strcmp(v, "ipc") == 0) return Backend::ipc;
  throw Error(std::string("spmd: SPMD_BACKEND='") + v + "' is not one of automatic, mpi, nccl, ipc");
}

namespace {

#if defined(KOKKOS_ENABLE_CUDA)
void check_cuda(cudaError_t r, const char* call, const std::string& where = "spmd") {
  if (r != cudaSuccess) throw Error(where + ": " + call + " failed: " + cudaGetErrorString(r));
}
#endif

/// Where every rank of a communicator runs: its node (the lowest rank of the communicator on the
/// same shared-memory node) and the PCI bus id of its GPU ("" without one).
struct Topology {
  static constexpr int bus_len = 32;
  std::vector<int> node;
  std::vector<char> bus;  // bus_len characters per rank
  const char* bus_of(int r) const { return &bus[static_cast<std::size_t>(r) * bus_len]; }
};

#if SPMD_HAVE_NCCL
struct NcclState {
  ncclComm_t comm = nullptr;
  bool usable = false;
  ~NcclState() {
    if (comm) ncclCommDestroy(comm);
  }
};
#endif

/// What a Comm keeps for the backends (impl::backend_state): released before its MPI
/// communicator is freed.
struct BackendState {
  std::optional<Topology> topology;  // gathered on first use (collective)
#if SPMD_HAVE_NCCL
  std::optional<NcclState> nccl;  // created on first use (collective)
#endif
};

BackendState& backend_of(const Comm& comm) {
  auto& slot = impl::backend_state(comm);
  if (!slot) slot = std::make_shared<BackendState>();
  return *static_cast<BackendState*>(slot.get());
}

/// The communicator's topology, gathered on first use. Collective then, Local after.
const Topology& topology(const Comm& comm) {
  auto& st = backend_of(comm);
  if (!st.topology) {
    Topology t;
    const Comm node = comm.node_local();
    int leader = comm.rank();
    SPMD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node.raw()), "spmd::backend::topology");
    t.node = comm.allgather(leader);
    char bus[Topology::bus_len] = {0};
#if defined(KOKKOS_ENABLE_CUDA)
    int dev = -1;
    if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && cudaDeviceGetPCIBusId(bus, sizeof(bus), dev) != cudaSuccess)
      bus[0] = 0;
    bus[sizeof(bus) - 1] = 0;
#endif
    t.bus = comm.allgather(bus, Topology::bus_len);
    st.topology = std::move(t);
  }
  return *st.topology;
}

}  // namespace

bool ipc_reachable(const Comm& comm, const std::vector<int>& peers, IpcSpace space) {
  const Topology& t = topology(comm);
  const int me = comm.rank();
  for (const int p : peers) {
    if (p == me) continue;
    if (p < 0 || p >= comm.size() || t.node[static_cast<std::size_t>(p)] != t.node[static_cast<std::size_t>(me)])
      return false;
    if (space == IpcSpace::host) continue;
#if defined(KOKKOS_ENABLE_CUDA)
    if (!*t.bus_of(p) || !*t.bus_of(me)) return false;
    int dev = -1, mine = -1;
    if (cudaGetDevice(&mine) != cudaSuccess || cudaDeviceGetByPCIBusId(&dev, t.bus_of(p)) != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it
      return false;
    }
    if (dev == mine) continue;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, mine, dev) != cudaSuccess || !can) return false;
#else
    return false;
#endif
  }
  return true;
}

// ---- NCCL ------------------------------------------------------------------------------------------

#if SPMD_HAVE_NCCL
namespace {
void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw Error(std::string("spmd: ") + call + " failed: " + ncclGetErrorString(r));
}

NcclState& state(const Comm& comm) {
  auto& st = backend_of(comm);
  if (!st.nccl) {
    // Two ranks on one GPU: NCCL refuses ("duplicate GPU"). Agree on that first.
    const Topology& t = topology(comm);
    bool duplicate = !*t.bus_of(comm.rank());
    for (int a = 0; a < comm.size() && !duplicate; ++a)
      for (int b = a + 1; b < comm.size() && !duplicate; ++b)
        duplicate = t.node[static_cast<std::size_t>(a)] == t.node[static_cast<std::size_t>(b)] &&
                    std::strncmp(t.bus_of(a), t.bus_of(b), Topology::bus_len) == 0;
    duplicate = comm.allreduce(duplicate, Op::lor);
    st.nccl.emplace();
    if (!duplicate) {
      ncclUniqueId id;
      if (comm.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      SPMD_MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm.raw()), "spmd::nccl");
      check_nccl(ncclCommInitRank(&st.nccl->comm, comm.size(), id, comm.rank()), "ncclCommInitRank");
      st.nccl->usable = true;
    }
  }
  return *st.nccl;
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
      throw Error::replicated("spmd::nccl_allreduce: NCCL has no logical and/or; use Op::min/max on 0/1");
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
  if (!s.usable) throw Error::replicated("spmd: NCCL is not usable on this communicator (two ranks share a GPU)");
  return s.comm;
}
void nccl_connect_ring(const Comm& comm) {
  if (!nccl_usable(comm) || comm.size() < 2) return;
  const int p = comm.size(), me = comm.rank();
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  void* raw = nullptr;
  check_cuda(cudaMalloc(&raw, 4), "cudaMalloc");
  const std::unique_ptr<void, void (*)(void*)> buf(raw, [](void* q) { (void)cudaFree(q); });
  cudaStream_t raw_stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const std::unique_ptr<CUstream_st, void (*)(cudaStream_t)> stream(raw_stream,
                                                                    [](cudaStream_t q) { (void)cudaStreamDestroy(q); });
  char* b = static_cast<char*>(buf.get());
  // one byte each way to each ring neighbour (at two ranks the one neighbour, both ways)
  const P2P sends[2] = {{b, 1, next}, {b + 1, 1, prev}};
  const P2P recvs[2] = {{b + 2, 1, prev}, {b + 3, 1, next}};
  const int n = p > 2 ? 2 : 1;
  nccl_exchange(comm, stream.get(), sends, n, recvs, n);
  check_cuda(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize");
}
#else
bool nccl_usable(const Comm&) {
  return false;
}
void* nccl_comm(const Comm&) {
  throw Error::replicated("spmd: built without NCCL");
}
void nccl_exchange(const Comm&, void*, const P2P*, int, const P2P*, int) {
  throw Error::replicated("spmd: built without NCCL");
}
void nccl_connect_ring(const Comm&) {}
void nccl_allreduce(const Comm&, void*, void*, std::size_t, Kind, Op) {
  throw Error::replicated("spmd: built without NCCL");
}
#endif

// ---- streams ---------------------------------------------------------------------------------------

#if defined(KOKKOS_ENABLE_CUDA)
void cuda_stream_after(void* waiter, void* signaller) {
  // One event serves every call: cudaStreamWaitEvent waits for the record made just before it.
  static cudaEvent_t ev = nullptr;
  if (!ev) check_cuda(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check_cuda(cudaEventRecord(ev, static_cast<cudaStream_t>(signaller)), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter), ev, 0), "cudaStreamWaitEvent");
}

Kokkos::Cuda cuda_side_instance() {
  static cudaStream_t stream = nullptr;
  static std::optional<Kokkos::Cuda> instance;
  if (!instance) {
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
               "spmd::side_instance");
    instance.emplace(stream);
    Kokkos::push_finalize_hook([] {
      instance.reset();
      cudaStreamDestroy(stream);
      stream = nullptr;
    });
  }
  return *instance;
}
#endif

// ---- Backend::ipc ------------------------------------------------------------------------------------

namespace {

/// What a rank tells each peer when it connects: its receive buffer (a CUDA IPC memory handle or
/// a shared-memory object's name), where the peer's message lands in it, and its two events.
struct Record {
  char mem[64];
  char free_event[64];
  char sent_event[64];
  std::int64_t bytes;   // size of the exported buffer (0: none)
  std::int64_t offset;  // point offset of the message from the receiving peer (-1: none)
  std::int64_t count;   // its points
};
static_assert(sizeof(Record) % 8 == 0, "Record travels as bytes");

std::atomic<unsigned> shm_counter{0};

}  // namespace

struct IpcChannel::State {
  explicit State(const Comm& c) : comm(c) {}
  Comm comm;
  int tag = 0;
  IpcSpace space = IpcSpace::host;
  std::vector<Link> sends, recvs;
  std::string fn;
  std::vector<int> peers;  // every rank this one sends to or receives from, ascending

  // this rank's receive buffer, and those replaced by allocate_recv() but maybe still mapped
  struct Buffer {
    void* data = nullptr;
    std::size_t bytes = 0;
    std::string name;  // host: the shared-memory object
  };
  Buffer mine;
  std::vector<Buffer> retired;
  bool connected = false;

  // per send link: the receiver's buffer as mapped here and where this rank's message goes
  struct Remote {
    void* base = nullptr;
    std::size_t bytes = 0;
    index_t offset = 0;
  };
  std::vector<Remote> remote;
#if defined(KOKKOS_ENABLE_CUDA)
  cudaEvent_t free_event = nullptr, sent_event = nullptr;  // this rank's, exported
  std::vector<cudaEvent_t> peer_free;                      // per send link: the receiver's free event
  std::vector<cudaEvent_t> peer_sent;                      // per recv link: the sender's sent event
  cudaStream_t last = nullptr;                             // the stream of the last exchange's receive
  bool have_last = false;
#endif

  std::vector<MPI_Request> notices;   // zero-byte sends in flight
  std::vector<MPI_Request> arrivals;  // per recv link: the sender's "sent" notice
  std::vector<MPI_Request> frees;     // per send link: the receiver's "free" notice

  bool device() const {
    return space == IpcSpace::device;
  }
  const char* where() const {
    return fn.c_str();
  }

  void release(Buffer& b) {
    if (!b.data && b.name.empty()) return;
    if (device()) {
#if defined(KOKKOS_ENABLE_CUDA)
      if (b.data) cudaFree(b.data);
#endif
    } else {
      if (b.data) munmap(b.data, b.bytes);
      if (!b.name.empty()) shm_unlink(b.name.c_str());
    }
    b = Buffer{};
  }
  void unmap_peers() {
    for (auto& r : remote) {
      if (!r.base) continue;
      if (device()) {
#if defined(KOKKOS_ENABLE_CUDA)
        cudaIpcCloseMemHandle(r.base);
#endif
      } else {
        munmap(r.base, r.bytes);
      }
      r.base = nullptr;
    }
#if defined(KOKKOS_ENABLE_CUDA)
    for (auto& e : peer_free)
      if (e) cudaEventDestroy(e);
    for (auto& e : peer_sent)
      if (e) cudaEventDestroy(e);
    peer_free.assign(peer_free.size(), nullptr);
    peer_sent.assign(peer_sent.size(), nullptr);
#endif
  }

  Record record_for(int peer) const {
    Record r{};
    r.bytes = static_cast<std::int64_t>(mine.bytes);
    r.offset = -1;
    r.count = 0;
    for (const auto& l : recvs)
      if (l.rank == peer) {
        r.offset = l.offset;
        r.count = l.count;
      }
    if (device()) {
#if defined(KOKKOS_ENABLE_CUDA)
      if (mine.data) {
        cudaIpcMemHandle_t h;
        check_cuda(cudaIpcGetMemHandle(&h, mine.data), "cudaIpcGetMemHandle", fn);
        std::memcpy(r.mem, &h, sizeof(h));
      }
      cudaIpcEventHandle_t e;
      check_cuda(cudaIpcGetEventHandle(&e, free_event), "cudaIpcGetEventHandle", fn);
      std::memcpy(r.free_event, &e, sizeof(e));
      check_cuda(cudaIpcGetEventHandle(&e, sent_event), "cudaIpcGetEventHandle", fn);
      std::memcpy(r.sent_event, &e, sizeof(e));
#endif
    } else {
      std::strncpy(r.mem, mine.name.c_str(), sizeof(r.mem) - 1);
    }
    return r;
  }

  /// Exchange records with every peer and map their buffers and events; then release the
  /// buffers this rank replaced. Neighbour-collective.
  void connect() {
    if (connected) return;
#if defined(KOKKOS_ENABLE_CUDA)
    if (device()) check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", fn);  // old copies done
#endif
    unmap_peers();  // before telling the peers: they release the buffers we mapped after it
    const auto n = peers.size();
    std::vector<Record> out(n), in(n);
    std::vector<MPI_Request> reqs;
    reqs.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = record_for(peers[i]);
      MPI_Request r;
      SPMD_MPI_CHECK(MPI_Irecv(&in[i], sizeof(Record), MPI_BYTE, peers[i], tag, comm.raw(), &r), where());
      reqs.push_back(r);
    }
    for (std::size_t i = 0; i < n; ++i) {
      MPI_Request r;
      SPMD_MPI_CHECK(MPI_Isend(&out[i], sizeof(Record), MPI_BYTE, peers[i], tag, comm.raw(), &r), where());
      reqs.push_back(r);
    }
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), where());
    for (auto& b : retired) release(b);  // every peer has unmapped them (it sent its record after that)
    retired.clear();
    auto index_of = [&](int rank) {
      for (std::size_t i = 0; i < n; ++i)
        if (peers[i] == rank) return i;
      return n;
    };
    for (std::size_t k = 0; k < sends.size(); ++k) {
      const Record& r = in[index_of(sends[k].rank)];
      if (r.count != sends[k].count || r.offset < 0 ||
          static_cast<double>(r.offset + r.count) > static_cast<double>(r.bytes))
        throw Error(str(fn, ": Backend::ipc: rank ", comm.rank(), " sends ", sends[k].count, " points to rank ",
                        sends[k].rank, ", which expects ", r.count, " (plans built differently on the two ranks)"));
      remote[k].offset = static_cast<index_t>(r.offset);
      remote[k].bytes = static_cast<std::size_t>(r.bytes);
      if (r.count == 0 || r.bytes == 0) continue;
      if (device()) {
#if defined(KOKKOS_ENABLE_CUDA)
        cudaIpcMemHandle_t h;
        std::memcpy(&h, r.mem, sizeof(h));
        check_cuda(cudaIpcOpenMemHandle(&remote[k].base, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle",
                   fn);
#endif
      } else {
        const int fd = shm_open(r.mem, O_RDWR, 0);
        if (fd < 0)
          throw Error(str(fn, ": Backend::ipc: shm_open('", r.mem, "') of rank ", sends[k].rank,
                          "'s buffer failed: ", std::strerror(errno)));
        void* p = mmap(nullptr, static_cast<std::size_t>(r.bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        const int e = errno;
        close(fd);
        if (p == MAP_FAILED)
          throw Error(str(fn, ": Backend::ipc: mmap of rank ", sends[k].rank, "'s buffer failed: ", std::strerror(e)));
        remote[k].base = p;
      }
    }
#if defined(KOKKOS_ENABLE_CUDA)
    if (device()) {
      for (std::size_t k = 0; k < sends.size(); ++k) {
        cudaIpcEventHandle_t e;
        std::memcpy(&e, in[index_of(sends[k].rank)].free_event, sizeof(e));
        check_cuda(cudaIpcOpenEventHandle(&peer_free[k], e), "cudaIpcOpenEventHandle", fn);
      }
      for (std::size_t k = 0; k < recvs.size(); ++k) {
        cudaIpcEventHandle_t e;
        std::memcpy(&e, in[index_of(recvs[k].rank)].sent_event, sizeof(e));
        check_cuda(cudaIpcOpenEventHandle(&peer_sent[k], e), "cudaIpcOpenEventHandle", fn);
      }
    }
#endif
    // Every peer has mapped this rank's buffer once it answers: then its name can go.
    reqs.clear();
    for (std::size_t i = 0; i < n; ++i) {
      MPI_Request r;
      SPMD_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, peers[i], tag + 1, comm.raw(), &r), where());
      reqs.push_back(r);
    }
    for (std::size_t i = 0; i < n; ++i) {
      MPI_Request r;
      SPMD_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, peers[i], tag + 1, comm.raw(), &r), where());
      reqs.push_back(r);
    }
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), where());
    if (!device() && !mine.name.empty()) {
      shm_unlink(mine.name.c_str());
      mine.name.clear();
    }
    connected = true;
  }
};

IpcChannel::IpcChannel(const Comm& comm, int tag, IpcSpace space, std::vector<Link> sends, std::vector<Link> recvs,
                       const std::string& fn)
    : s_(std::make_unique<State>(comm)) {
  State& s = *s_;
  s.tag = tag;
  s.space = space;
  s.sends = std::move(sends);
  s.recvs = std::move(recvs);
  s.fn = fn;
  for (const auto& l : s.sends) s.peers.push_back(l.rank);
  for (const auto& l : s.recvs) s.peers.push_back(l.rank);
  std::sort(s.peers.begin(), s.peers.end());
  s.peers.erase(std::unique(s.peers.begin(), s.peers.end()), s.peers.end());
  auto unique_ranks = [](const std::vector<Link>& l) {
    for (std::size_t i = 0; i < l.size(); ++i)
      for (std::size_t j = i + 1; j < l.size(); ++j)
        if (l[i].rank == l[j].rank) return false;
    return true;
  };
  if (!unique_ranks(s.sends) || !unique_ranks(s.recvs))
    throw Error(str(fn, ": Backend::ipc needs at most one message per peer and direction"));
  s.remote.resize(s.sends.size());
  s.frees.assign(s.sends.size(), MPI_REQUEST_NULL);
  s.arrivals.assign(s.recvs.size(), MPI_REQUEST_NULL);
  s.notices.reserve(2 * s.peers.size());
  if (space == IpcSpace::device) {
#if defined(KOKKOS_ENABLE_CUDA)
    const unsigned flags = cudaEventDisableTiming | cudaEventInterprocess;
    check_cuda(cudaEventCreateWithFlags(&s.free_event, flags), "cudaEventCreateWithFlags", fn);
    check_cuda(cudaEventCreateWithFlags(&s.sent_event, flags), "cudaEventCreateWithFlags", fn);
    s.peer_free.assign(s.sends.size(), nullptr);
    s.peer_sent.assign(s.recvs.size(), nullptr);
#else
    throw Error(str(fn, ": Backend::ipc for device memory needs a CUDA build"));
#endif
  }
}

IpcChannel::~IpcChannel() {
  if (!s_) return;
  State& s = *s_;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {  // an exchange cut short by an error: take back what is still posted
    for (auto* list : {&s.frees, &s.arrivals})
      for (auto& r : *list)
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    for (auto& r : s.notices)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }
#if defined(KOKKOS_ENABLE_CUDA)
  if (s.device()) cudaDeviceSynchronize();  // copies into and out of the buffers are done
#endif
  s.unmap_peers();
  s.release(s.mine);
  for (auto& b : s.retired) s.release(b);
#if defined(KOKKOS_ENABLE_CUDA)
  if (s.free_event) cudaEventDestroy(s.free_event);
  if (s.sent_event) cudaEventDestroy(s.sent_event);
#endif
}

void* IpcChannel::allocate_recv(std::size_t bytes) {
  State& s = *s_;
  if (s.mine.data || !s.mine.name.empty()) s.retired.push_back(s.mine);
  s.mine = State::Buffer{};
  s.connected = false;
  if (bytes == 0) return nullptr;
  s.mine.bytes = bytes;
  if (s.device()) {
#if defined(KOKKOS_ENABLE_CUDA)
    check_cuda(cudaMalloc(&s.mine.data, bytes), "cudaMalloc", s.fn);
#endif
  } else {
    s.mine.name = str("/spmd.", static_cast<long>(getpid()), ".", shm_counter.fetch_add(1));
    const int fd = shm_open(s.mine.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throw Error(str(s.fn, ": Backend::ipc: shm_open('", s.mine.name, "') failed: ", std::strerror(errno)));
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int e = errno;
      close(fd);
      shm_unlink(s.mine.name.c_str());
      throw Error(str(s.fn, ": Backend::ipc: ftruncate of ", bytes, " bytes failed: ", std::strerror(e)));
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
      shm_unlink(s.mine.name.c_str());
      throw Error(str(s.fn, ": Backend::ipc: mmap of ", bytes, " bytes failed: ", std::strerror(e)));
    }
    s.mine.data = p;
  }
  return s.mine.data;
}

void IpcChannel::start(void* stream, const void* send, std::size_t point_bytes) {
  State& s = *s_;
  s.connect();
#if defined(KOKKOS_ENABLE_CUDA)
  const auto st = static_cast<cudaStream_t>(stream);
  if (s.device()) {
    // The receive buffer is free once the work queued so far, on this stream and on the stream
    // that last read it, is done.
    if (s.have_last && s.last != st) cuda_stream_after(stream, s.last);
    check_cuda(cudaEventRecord(s.free_event, st), "cudaEventRecord", s.fn);
  }
#else
  (void)stream;
#endif
  for (const auto& l : s.recvs) {
    MPI_Request r;
    SPMD_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, l.rank, s.tag, s.comm.raw(), &r), s.where());
    s.notices.push_back(r);
  }
  for (std::size_t k = 0; k < s.sends.size(); ++k)
    SPMD_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, s.sends[k].rank, s.tag, s.comm.raw(), &s.frees[k]), s.where());
  // Copy each message as soon as its receiver says its buffer is free.
  for (std::size_t left = s.sends.size(); left > 0; --left) {
    int k = MPI_UNDEFINED;
    SPMD_MPI_CHECK(MPI_Waitany(static_cast<int>(s.frees.size()), s.frees.data(), &k, MPI_STATUS_IGNORE), s.where());
    if (k == MPI_UNDEFINED) break;
    const Link& l = s.sends[static_cast<std::size_t>(k)];
    const auto& rm = s.remote[static_cast<std::size_t>(k)];
    const std::size_t n = static_cast<std::size_t>(l.count) * point_bytes;
    if (n == 0) continue;
    if (static_cast<std::size_t>(rm.offset) * point_bytes + n > rm.bytes)
      throw Error(str(s.fn, ": Backend::ipc: the message to rank ", l.rank, " (", n, " bytes at point ", rm.offset,
                      ") overruns its buffer of ", rm.bytes, " bytes (arrays moved at once differ between ranks?)"));
    char* dst = static_cast<char*>(rm.base) + static_cast<std::size_t>(rm.offset) * point_bytes;
    const char* src = static_cast<const char*>(send) + static_cast<std::size_t>(l.offset) * point_bytes;
    if (s.device()) {
#if defined(KOKKOS_ENABLE_CUDA)
      check_cuda(cudaStreamWaitEvent(st, s.peer_free[static_cast<std::size_t>(k)], 0), "cudaStreamWaitEvent", s.fn);
      check_cuda(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, st), "cudaMemcpyAsync", s.fn);
#endif
    } else {
      std::memcpy(dst, src, n);
    }
  }
#if defined(KOKKOS_ENABLE_CUDA)
  if (s.device() && !s.sends.empty()) check_cuda(cudaEventRecord(s.sent_event, st), "cudaEventRecord", s.fn);
#endif
  for (const auto& l : s.sends) {
    MPI_Request r;
    SPMD_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, l.rank, s.tag + 1, s.comm.raw(), &r), s.where());
    s.notices.push_back(r);
  }
  for (std::size_t k = 0; k < s.recvs.size(); ++k)
    SPMD_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, s.recvs[k].rank, s.tag + 1, s.comm.raw(), &s.arrivals[k]),
                   s.where());
#if defined(KOKKOS_ENABLE_CUDA)
  s.last = st;
  s.have_last = true;
#endif
}

void IpcChannel::wait_receives(void* stream) {
  State& s = *s_;
  if (s.arrivals.empty()) return;
  SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(s.arrivals.size()), s.arrivals.data(), MPI_STATUSES_IGNORE), s.where());
#if defined(KOKKOS_ENABLE_CUDA)
  if (s.device()) {
    const auto st = static_cast<cudaStream_t>(stream);
    for (auto& e : s.peer_sent) check_cuda(cudaStreamWaitEvent(st, e, 0), "cudaStreamWaitEvent", s.fn);
    s.last = st;  // the unpack reads the buffer here: the next `free` waits for it
    s.have_last = true;
  }
#else
  (void)stream;
#endif
}

void IpcChannel::wait_sends() {
  State& s = *s_;
  if (s.notices.empty()) return;
  SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(s.notices.size()), s.notices.data(), MPI_STATUSES_IGNORE), s.where());
  s.notices.clear();
}

}  // namespace spmd::impl
