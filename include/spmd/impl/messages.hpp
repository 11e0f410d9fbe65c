#pragma once
// The communication engine's message part, the one plan type every exchange runs on (halo
// exchanges, redistributions and moved expression operands, the sparse ghost import, gathers):
// a fixed list of messages (peer, offset and count in a send and a receive buffer), the buffers
// themselves (in the data's memory space, plus pinned host staging where MPI cannot read that
// space), its tags, and the backend chosen once. Only this file posts point-to-point messages
// (through MPI, NCCL, or the intra-node channel of Backend::ipc in impl/backend.hpp).
//
// Use per exchange, between the plan's own packing and unpacking kernels (box_copy.hpp), all on
// one execution space instance:
//   reserve(width);           // optional: `width` elements per point (several arrays at once)
//   <pack into send_buffer() on exec>
//   start(exec);              // MPI: stage, fence, one MPI_Irecv and one MPI_Isend per message;
//                             //      NCCL: one grouped send/receive on exec's stream;
//                             //      ipc: copies into the peers' receive buffers on exec's stream
//                             //      once each peer's buffer is free (IpcChannel)
//   <independent work>
//   wait_receives(exec);      // MPI: wait, copy staging -> recv_buffer() on exec; NCCL: nothing;
//                             //      ipc: exec waits for the peers' copies (no host wait on the GPU)
//   <unpack from recv_buffer() on exec>
//   wait_sends();
// MPI: start() fences exec before the receives are posted, so a previous exchange's unpack kernel
// has finished reading the receive buffer before MPI may write it again. NCCL and ipc order that
// on the GPU: the receives are queued behind the unpack (NCCL: same stream; ipc: a peer's copy
// waits for this rank's `free` event, recorded at start() behind everything queued before it,
// also on the stream the last wait_receives() ran on, so work that reads recv_view() after
// wait_receives() on that stream is safe until the next start()). Nothing fences after the unpack
// (it is ordered before later work on the same instance). A plan with no messages on this rank
// does not fence at all. Nothing allocates after construction, except reserve() growing the
// buffers once for a wider exchange (ipc: the peers map the new buffers at the next start()).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/comm.hpp"
#include "spmd/impl/backend.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/profiling.hpp"

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

/// One message of a plan: `count` points at point `offset` of the plan's send (or receive)
/// buffer, to (or from) `rank`.
struct Message {
  int rank;
  index_t offset;
  index_t count;
};

template <class T, class Mem>
class MessagePlan {
 public:
  using buffer_type = Kokkos::View<T*, Mem>;
  using execution_space = typename Mem::execution_space;

  /// Messages `sends` and `recvs` (offsets into buffers of `send_total` and `recv_total` points)
  /// on `comm`, moved with `backend`. Reserves its tags (one; two for ipc), so it must be built in
  /// the same order on every rank. Collective: the backend is resolved and agreed (which may
  /// create the NCCL communicator or gather the ranks' nodes and GPUs once per Comm), and the
  /// largest message over all ranks is agreed here, so that every size check (now and in
  /// reserve()) reaches the same verdict on every rank. `label` prefixes the buffers' labels;
  /// `fn` names the caller in errors.
  MessagePlan(const Comm& comm, std::vector<Message> sends, index_t send_total, std::vector<Message> recvs,
              index_t recv_total, Backend backend, const char* fn, const std::string& label)
      : comm_(comm),
        fn_(fn),
        label_(label),
        fence_label_(fn_ + " before MPI_Irecv/MPI_Isend"),
        sends_(std::move(sends)),
        recvs_(std::move(recvs)),
        send_total_(send_total),
        recv_total_(recv_total) {
    index_t big = 0;
    for (const auto& m : sends_) big = std::max(big, m.count);
    for (const auto& m : recvs_) big = std::max(big, m.count);
    largest_ = comm.allreduce(big, Op::max);
    std::vector<int> peers;
    for (const auto& m : sends_) peers.push_back(m.rank);
    for (const auto& m : recvs_) peers.push_back(m.rank);
    backend_ = resolve_plan_backend<Mem>(comm, backend, fn, peers);
    staged_ = backend_ == Backend::mpi && !host_accessible<Mem>() && !mpi_cuda_aware();
    tag_ = comm.reserve_tags(backend_ == Backend::ipc ? 2 : 1);
    if constexpr (ipc_space_supported<Mem>()) {
      if (backend_ == Backend::ipc) {
        std::vector<Link> s, r;
        for (const auto& m : sends_) s.push_back(Link{m.rank, m.offset, m.count});
        for (const auto& m : recvs_) r.push_back(Link{m.rank, m.offset, m.count});
        ipc_ = std::make_unique<IpcChannel>(comm, tag_, ipc_space_of<Mem>(), std::move(s), std::move(r), fn_);
      }
    }
    requests_.reserve(sends_.size() + recvs_.size());
    p2p_send_.reserve(sends_.size());
    p2p_recv_.reserve(recvs_.size());
    reserve(1);
  }
  MessagePlan(const MessagePlan&) = delete;
  MessagePlan& operator=(const MessagePlan&) = delete;
  MessagePlan(MessagePlan&&) = default;
  MessagePlan& operator=(MessagePlan&&) = default;

  /// Make the buffers hold `width` elements per point (grown once, never shrunk) and move that
  /// many per point from now on. Throws the same spmd::Error on every rank when a message would
  /// exceed MPI's int count of bytes (the verdict uses the agreed largest message). Local.
  void reserve(int width) {
    if (static_cast<double>(largest_) * width * static_cast<double>(sizeof(T)) > static_cast<double>(INT_MAX))
      throw Error::replicated(
          str(fn_, ": a message of ", largest_, " points x ", width,
              " elements is larger than MPI's int count of bytes (use more ranks or fewer arrays at once)"));
    width_ = width;
    if (width <= capacity_) return;
    capacity_ = width;
    send_buf_ = make<Mem>(label_ + "::send_buffer", send_total_ * width);
    if (ipc_)  // the receive buffer peers map: the channel's
      recv_buf_ =
          buffer_type(static_cast<T*>(ipc_->allocate_recv(static_cast<std::size_t>(recv_total_ * width) * sizeof(T))),
                      static_cast<std::size_t>(recv_total_ * width));
    else
      recv_buf_ = make<Mem>(label_ + "::recv_buffer", recv_total_ * width);
    if (staged_) {
      send_host_ = make<staging>(label_ + "::send_staging", send_total_ * width);
      recv_host_ = make<staging>(label_ + "::recv_staging", recv_total_ * width);
    }
  }

  /// Where the caller packs outgoing data and finds incoming data (point p, element e of the
  /// width at p * width + e). Local.
  T* send_buffer() const { return send_buf_.data(); }
  T* recv_buffer() const { return recv_buf_.data(); }
  const buffer_type& recv_view() const { return recv_buf_; }
  const std::vector<Message>& sends() const { return sends_; }
  const std::vector<Message>& recvs() const { return recvs_; }
  index_t send_total() const { return send_total_; }
  index_t recv_total() const { return recv_total_; }
  Backend backend() const { return backend_; }
  bool staged() const { return staged_; }
  /// True when this rank sends or receives anything. Local.
  bool has_messages() const { return !sends_.empty() || !recvs_.empty(); }

  /// Hand an exchange left in flight (started, not waited for) to impl::park without
  /// communicating: the MPI requests and this plan's buffers (`self`, which must own this plan)
  /// are kept until MPI completes them; NCCL's and ipc's work, queued on a stream and matched by
  /// the peers' own, is kept to the end of the process. The plan must not be used again. Local.
  static void park_in_flight(std::shared_ptr<MessagePlan> self) noexcept {
    std::vector<MPI_Request> pending;
    const bool streams = self->backend_ != Backend::mpi || self->ipc_ != nullptr;
    try {
      if (!streams) pending = std::move(self->requests_);
    } catch (...) {
    }
    park(std::move(pending), std::move(self), streams);
  }

  /// After packing send_buffer() on `exec`: MPI: copy to staging if needed, fence `exec`, post
  /// one MPI_Irecv per receive and one MPI_Isend per send. NCCL: one grouped exchange on exec's
  /// stream (the receives land in recv_buffer() in stream order). ipc: one copy per send into the
  /// receiver's buffer on exec's stream (the host waits only for the receivers' zero-byte notices
  /// that their buffers are free, never for the GPU). Neighbour-collective.
  template <class Exec>
  void start(const Exec& exec) const {
    requests_.clear();
    if (!has_messages()) return;
    if (profiling::recording) {
      std::size_t sent = 0;
      for (const auto& m : sends_) sent += static_cast<std::size_t>(bytes(m));
      profiling::count_messages(sent, sends_.size());
    }
    if (backend_ == Backend::nccl) {
      p2p_send_.clear();
      p2p_recv_.clear();
      for (const auto& m : recvs_)
        p2p_recv_.push_back({recv_buf_.data() + m.offset * width_, static_cast<std::size_t>(bytes(m)), m.rank});
      for (const auto& m : sends_)
        p2p_send_.push_back({send_buf_.data() + m.offset * width_, static_cast<std::size_t>(bytes(m)), m.rank});
      nccl_exchange(comm_, stream_of(exec), p2p_send_.data(), static_cast<int>(p2p_send_.size()), p2p_recv_.data(),
                    static_cast<int>(p2p_recv_.size()));
      return;
    }
    if (ipc_) {
      if constexpr (host_accessible<Mem>()) fence(exec, fence_label_);  // the pack has written send_buffer()
      ipc_->start(stream_of(exec), send_buf_.data(), static_cast<std::size_t>(width_) * sizeof(T));
      return;
    }
    if (staged_ && send_total_ > 0)
      Kokkos::deep_copy(exec, range(send_host_, send_total_ * width_), range(send_buf_, send_total_ * width_));
    fence(exec, fence_label_);
    post(recvs_, staged_ ? recv_host_.data() : recv_buf_.data(), MPI_Irecv);
    post(sends_, staged_ ? send_host_.data() : send_buf_.data(), MPI_Isend);
  }
  /// MPI: wait for the receives, then copy staging to recv_buffer() on `exec` if needed. NCCL:
  /// nothing (later work on the stream sees the data). ipc: wait for the senders' notices and
  /// make `exec` wait for their copies. Local.
  template <class Exec>
  void wait_receives(const Exec& exec) const {
    if (ipc_) {
      if (has_messages()) ipc_->wait_receives(stream_of(exec));
      return;
    }
    if (backend_ != Backend::mpi || requests_.empty()) return;
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(recvs_.size()), requests_.data(), MPI_STATUSES_IGNORE), fn_.c_str());
    if (staged_ && recv_total_ > 0)
      Kokkos::deep_copy(exec, range(recv_buf_, recv_total_ * width_), range(recv_host_, recv_total_ * width_));
  }
  /// MPI: wait for the sends (send_buffer() may then be packed again). ipc: complete the notices
  /// (the copies themselves are ordered before later work on start()'s stream). Local.
  void wait_sends() const {
    if (ipc_) {
      ipc_->wait_sends();
      return;
    }
    if (backend_ != Backend::mpi || requests_.empty()) return;
    const int nr = static_cast<int>(recvs_.size());
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()) - nr, requests_.data() + nr, MPI_STATUSES_IGNORE),
                   fn_.c_str());
    requests_.clear();
  }

 private:
  using staging = typename staging_space<Mem>::type;
  /// One nonblocking call (MPI_Isend or MPI_Irecv, whose buffer arguments differ only in
  /// constness) per message of `list` at `base`; the requests are appended.
  template <class Buf>
  void post(const std::vector<Message>& list, T* base,
            int (*call)(Buf, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request*)) const {
    for (const auto& m : list) {
      MPI_Request r;
      SPMD_MPI_CHECK(call(base + m.offset * width_, bytes(m), MPI_BYTE, m.rank, tag_, comm_.raw(), &r), fn_.c_str());
      requests_.push_back(r);
    }
  }
  int bytes(const Message& m) const { return static_cast<int>(m.count * width_ * static_cast<index_t>(sizeof(T))); }
  template <class V>
  static auto range(const V& v, index_t n) {
    return Kokkos::subview(v, std::make_pair(index_t(0), n));
  }
  template <class Space>
  static Kokkos::View<T*, Space> make(const std::string& label, index_t n) {
    return Kokkos::View<T*, Space>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), static_cast<std::size_t>(n));
  }

  Comm comm_;
  std::string fn_, label_, fence_label_;
  std::vector<Message> sends_, recvs_;
  index_t send_total_ = 0, recv_total_ = 0, largest_ = 0;
  Backend backend_ = Backend::mpi;
  bool staged_ = false;
  int tag_ = 0;
  int width_ = 1, capacity_ = 0;
  buffer_type send_buf_, recv_buf_;
  Kokkos::View<T*, staging> send_host_, recv_host_;
  mutable std::vector<MPI_Request> requests_;
  mutable std::vector<P2P> p2p_send_, p2p_recv_;
  std::unique_ptr<IpcChannel> ipc_;  // Backend::ipc only
};

}  // namespace spmd::impl
