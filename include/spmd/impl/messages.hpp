#pragma once
// The point-to-point part of a communication plan: a fixed list of messages (peer, offset and
// count in a send and a receive buffer), the buffers themselves (in the data's memory space, plus
// pinned host staging where MPI cannot read that space), one tag, and the backend chosen once.
//
// Use per exchange, between the plan's own packing and unpacking kernels:
//   post_receives();          // MPI: one MPI_Irecv per message (NCCL: nothing yet)
//   <pack into send_buffer()>
//   send();                   // MPI: stage, fence, one MPI_Isend per message; NCCL: one group
//   <independent work>
//   wait_receives();          // MPI: wait, copy staging -> recv_buffer(); NCCL: stream-ordered
//   <unpack from recv_buffer()>
//   wait_sends();
// Nothing here allocates after construction.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "spmd/backend.hpp"
#include "spmd/comm.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/staging.hpp"

namespace spmd::impl {

/// One message of a plan: `count` elements at `offset` of the plan's send (or receive) buffer,
/// to (or from) `rank`.
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

  /// Messages `sends` and `recvs` (offsets into buffers of `send_total` and `recv_total`
  /// elements) on `comm`, moved with `backend`. Reserves one tag, so it must be built in the
  /// same order on every rank. Collective (resolving the backend may create the NCCL
  /// communicator) and throws the same spmd::Error everywhere when a message is larger than
  /// MPI's int count of bytes. `label` prefixes the buffers' labels; `fn` names the caller in errors.
  MessagePlan(const Comm& comm, std::vector<Message> sends, index_t send_total, std::vector<Message> recvs,
              index_t recv_total, Backend backend, const char* fn, const std::string& label)
      : comm_(comm),
        fn_(fn),
        fence_label_(fn_ + " before MPI_Isend"),
        sends_(std::move(sends)),
        recvs_(std::move(recvs)) {
    comm.check(largest() * static_cast<index_t>(sizeof(T)) <= INT_MAX,
               str(fn, ": a message of ", largest(), " elements is larger than MPI's int count of bytes"));
    backend_ = resolve_backend<Mem>(comm, backend, fn);
    staged_ = backend_ == Backend::mpi && !host_accessible<Mem>() && !mpi_cuda_aware();
    tag_ = comm.reserve_tags(1);
    send_buf_ = make<Mem>(label + "::send_buffer", send_total);
    recv_buf_ = make<Mem>(label + "::recv_buffer", recv_total);
    if (staged_) {
      send_host_ = make<staging>(label + "::send_staging", send_total);
      recv_host_ = make<staging>(label + "::recv_staging", recv_total);
    }
    requests_.reserve(sends_.size() + recvs_.size());
    p2p_send_.reserve(sends_.size());
    p2p_recv_.reserve(recvs_.size());
  }

  /// Where the caller packs outgoing data and finds incoming data. Local.
  const buffer_type& send_buffer() const { return send_buf_; }
  const buffer_type& recv_buffer() const { return recv_buf_; }
  const std::vector<Message>& sends() const { return sends_; }
  const std::vector<Message>& recvs() const { return recvs_; }
  index_t send_total() const { return static_cast<index_t>(send_buf_.extent(0)); }
  index_t recv_total() const { return static_cast<index_t>(recv_buf_.extent(0)); }
  Backend backend() const { return backend_; }
  bool staged() const { return staged_; }

  /// MPI: one MPI_Irecv per receive. NCCL: nothing (send() posts both sides). Local call,
  /// neighbour-collective effect.
  void post_receives() const {
    requests_.clear();
    if (backend_ != Backend::mpi) return;
    post(recvs_, staged_ ? recv_host_.data() : recv_buf_.data(), MPI_Irecv);
  }
  /// After packing send_buffer() on the execution space: MPI: copy to the staging buffer if
  /// needed, fence, one MPI_Isend per send. NCCL: one grouped exchange on the stream (the
  /// receives land in recv_buffer() in stream order). Neighbour-collective.
  void send() const {
    const execution_space exec;
    if (backend_ == Backend::nccl) {
      p2p_send_.clear();
      p2p_recv_.clear();
      for (const auto& m : recvs_)
        p2p_recv_.push_back({recv_buf_.data() + m.offset, static_cast<std::size_t>(bytes(m)), m.rank});
      for (const auto& m : sends_)
        p2p_send_.push_back({send_buf_.data() + m.offset, static_cast<std::size_t>(bytes(m)), m.rank});
      nccl_exchange(comm_, stream_of(exec), p2p_send_.data(), static_cast<int>(p2p_send_.size()), p2p_recv_.data(),
                    static_cast<int>(p2p_recv_.size()));
      return;
    }
    if (staged_ && send_total() > 0) Kokkos::deep_copy(exec, send_host_, send_buf_);
    fence(exec, fence_label_);
    post(sends_, staged_ ? send_host_.data() : send_buf_.data(), MPI_Isend);
  }
  /// MPI: wait for the receives, then copy staging to recv_buffer() if needed (enqueued on the
  /// execution space). NCCL: nothing (later work on the stream sees the data). Local.
  void wait_receives() const {
    if (backend_ != Backend::mpi) return;
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(recvs_.size()), requests_.data(), MPI_STATUSES_IGNORE), fn_.c_str());
    if (staged_ && recv_total() > 0) Kokkos::deep_copy(execution_space(), recv_buf_, recv_host_);
  }
  /// MPI: wait for the sends (send_buffer() may then be packed again). Local.
  void wait_sends() const {
    if (backend_ != Backend::mpi) return;
    const int nr = static_cast<int>(recvs_.size());
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()) - nr, requests_.data() + nr, MPI_STATUSES_IGNORE),
                   fn_.c_str());
  }
  /// Largest message in elements. Local.
  index_t largest() const {
    index_t b = 0;
    for (const auto& m : sends_) b = std::max(b, m.count);
    for (const auto& m : recvs_) b = std::max(b, m.count);
    return b;
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
      SPMD_MPI_CHECK(call(base + m.offset, bytes(m), MPI_BYTE, m.rank, tag_, comm_.raw(), &r), fn_.c_str());
      requests_.push_back(r);
    }
  }
  static constexpr int unit = static_cast<int>(sizeof(T));
  static int bytes(const Message& m) { return static_cast<int>(m.count) * unit; }
  template <class Space>
  static Kokkos::View<T*, Space> make(const std::string& label, index_t n) {
    return Kokkos::View<T*, Space>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), static_cast<std::size_t>(n));
  }

  Comm comm_;
  std::string fn_, fence_label_;
  std::vector<Message> sends_, recvs_;
  Backend backend_ = Backend::mpi;
  bool staged_ = false;
  int tag_ = 0;
  buffer_type send_buf_, recv_buf_;
  Kokkos::View<T*, staging> send_host_, recv_host_;
  mutable std::vector<MPI_Request> requests_;
  mutable std::vector<P2P> p2p_send_, p2p_recv_;
};

}  // namespace spmd::impl
