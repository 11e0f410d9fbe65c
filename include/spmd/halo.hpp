#pragma once
/// \file halo.hpp
/// spmd::HaloExchange: fills arrays' halos from their neighbours; spmd::exchange_halo(a) and
/// spmd::halo_begin(a) do it with the array's own plans (one per pattern, built on first use and
/// kept in the array's opaque slot: an Array itself knows nothing of halo exchange).
///
/// A plan is built once for a distribution (pattern, width) and reused: its per-neighbour boxes,
/// device segment tables, message buffers and tag are made at construction (impl/halo_layout.hpp);
/// an exchange allocates nothing (a plan grows its buffers once if later asked to move more
/// arrays at a time).
///
/// Split phase: begin() packs every outgoing layer of every array on the device in one kernel,
/// starts the messages (impl/messages.hpp: the one communication engine) and copies the layers
/// that wrap onto this rank (periodic axes with one rank along them) storage to storage; end()
/// waits for the messages and unpacks in one kernel. Work on the owned interior can run between
/// the two. All work runs on the execution space instance given to begin() (by default a
/// default instance of the arrays' execution space); end() returns with the unpack enqueued on
/// that instance (later work on it sees the halo; fence it before reading the halo on the host
/// from another instance).
///
/// Communication: buffers live in the arrays' memory space. When MPI cannot read that space
/// (device memory with a host MPI) they are staged through host (pinned, on CUDA) mirrors; NCCL
/// moves device data on the instance's stream where the build has it; Backend::ipc copies it
/// straight into the neighbours' receive buffers within a node (backend.hpp says which is chosen).
///
/// Overlap: begin() on another instance than the computation's (spmd::halo_begin_overlapped in
/// overlap.hpp starts it on the library's side stream after the work already queued), work on
/// the interior meanwhile, then end(then) orders `then` after the unpack; spmd::assign(pending,
/// dst, expr) does the interior/boundary split of an expression assignment.
///
/// An exchange left open: no destructor communicates. A HaloRequest destroyed (or assigned
/// over) before end(), or abandon(), reports it on stderr and leaves the plan *abandoned*: its
/// messages stay in flight in the plan's own buffers and are never unpacked. The plan's next
/// begin() first waits for them (every neighbour started them in its own begin(), so that wait
/// cannot hang) and discards them, then starts the new exchange: the halo never receives the
/// abandoned exchange's data. end() on an abandoned plan is a local spmd::Error. A plan
/// destroyed with an exchange open or abandoned reports it too and parks its message buffers
/// (impl::park) until MPI completes what is in flight, never waiting.

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/distribution.hpp"
#include "spmd/impl/backend.hpp"
#include "spmd/impl/box_copy.hpp"
#include "spmd/impl/halo_layout.hpp"
#include "spmd/impl/messages.hpp"

namespace spmd {

/// A halo-exchange plan for arrays of element type T on one distribution (MemorySpace defaults to
/// spmd::DefaultMemorySpace, the default execution space's).
template <class T, int N, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
class HaloExchange {
 public:
  /// The arrays' memory space.
  using memory_space = MemorySpace;
  /// The execution space of the pack/unpack kernels.
  using execution_space = typename MemorySpace::execution_space;
  /// Most arrays one exchange can move.
  static constexpr int max_fields = impl::max_fields;

  /// Plan for `dist` with `pattern`, filling `width[d] <= halo[d]` layers along each axis
  /// (default: the whole halo), moving data with `backend` (see backend.hpp). Collective: every
  /// rank builds its plans in the same order (the plan reserves a message tag on the
  /// communicator, and may create its NCCL communicator).
  explicit HaloExchange(const Distribution<N>& dist, Pattern pattern = Pattern::box)
      : HaloExchange(dist, pattern, dist.halo()) {}
  /// An exchange of the halo `width` (per axis, at most the distribution's), moving data with
  /// `backend`. Collective.
  HaloExchange(const Distribution<N>& dist, Pattern pattern, const std::array<int, N>& width,
               Backend backend = Backend::automatic)
      : dist_(dist), pattern_(pattern), width_(width) {
    const char* fn = "spmd::HaloExchange";
    if (dist.is_null()) throw Error::replicated(impl::str(fn, ": null distribution"));
    impl::agree(dist.comm(), [&] {
      for (int d = 0; d < N; ++d)
        if (width[d] < 0 || width[d] > dist.halo()[d])
          throw Error(impl::str(fn, ": width ", impl::shape_str(width), " must lie between 0 and the halo ",
                                impl::shape_str(dist.halo()), " on every axis"));
    });
    const impl::Region region("spmd::halo::plan");
    auto l = impl::halo_layout(dist, pattern, width);
    msgs_ = std::make_shared<impl::MessagePlan<T, MemorySpace>>(
        dist.comm(), std::move(l.sends), l.send_total, std::move(l.recvs), l.recv_total, backend, fn, "spmd::halo");
    pack_ = impl::BoxCopies<T, N, MemorySpace>(std::move(l.pack), l.strides, l.strides, "spmd::halo::pack_segments");
    unpack_ =
        impl::BoxCopies<T, N, MemorySpace>(std::move(l.unpack), l.strides, l.strides, "spmd::halo::unpack_segments");
    self_ = impl::BoxCopies<T, N, MemorySpace>(std::move(l.self), l.strides, l.strides, "spmd::halo::self_segments");
  }
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;
  /// Never communicates: an exchange still open is reported, and its message buffers are parked
  /// until MPI completes them (see the file comment).
  ~HaloExchange() {
    abandon("spmd::HaloExchange");
    if (abandoned_ && msgs_) impl::MessagePlan<T, MemorySpace>::park_in_flight(std::move(msgs_));
  }

  /// Start filling the halos of `arrays` (1 to 8 spmd::Arrays on this plan's distribution), on
  /// `exec` (an instance of the arrays' execution space, e.g. one made on a CUDA stream). Neighbour-collective; throws
  /// the same spmd::Error on every rank for arrays of another distribution.
  template <class Exec, class... A, std::enable_if_t<Kokkos::is_execution_space<Exec>::value, int> = 0>
  void begin(const Exec& exec, const A&... arrays) {
    static_assert(std::is_same_v<Exec, execution_space>,
                  "spmd::HaloExchange::begin: the execution space instance must be of the arrays' execution space");
    static_assert(((std::is_same_v<typename A::value_type, T> && A::rank == N &&
                    std::is_same_v<typename A::memory_space, MemorySpace>)&&...),
                  "spmd::HaloExchange::begin: arrays must have the plan's element type, rank and memory space");
    const char* fn = "spmd::HaloExchange::begin";
    constexpr int n = static_cast<int>(sizeof...(A));
    static_assert(n >= 1 && n <= max_fields, "spmd::HaloExchange::begin: one exchange moves 1 to 8 arrays");
    if (active_) throw Error(impl::str(fn, ": an exchange on this plan is already in progress; call end() first"));
    if (abandoned_) discard_abandoned(exec);
    int i = 0;
    auto one = [&](const auto& a) {
      if (a.distribution() != dist_)
        throw Error::replicated(impl::str(fn, ": array '", a.label(), "' has distribution (",
                                          a.is_null() ? std::string("null") : a.distribution().describe(),
                                          ") but the plan was built for (", dist_.describe(), ")"));
      fields_[i++] = a.local_with_halo().data();
    };
    (one(arrays), ...);
    start(exec, n);
  }
  /// begin() on a default instance. Neighbour-collective.
  template <class... A, std::enable_if_t<(sizeof...(A) > 0) && !(Kokkos::is_execution_space<A>::value || ...), int> = 0>
  void begin(const A&... arrays) {
    begin(execution_space(), arrays...);
  }
  /// Finish the exchange started by begin(), on begin()'s instance. Neighbour-collective.
  void end() {
    if (abandoned_)
      throw Error(
          "spmd::HaloExchange::end: no exchange in progress: the one begun was abandoned (its request was destroyed "
          "before end(), or abandon()); the next begin() discards it");
    if (!active_) throw Error("spmd::HaloExchange::end: no exchange in progress (call begin() first)");
    const impl::Region region("spmd::halo::end");
    active_ = false;
    const execution_space exec = *exec_;
    msgs_->wait_receives(exec);
    unpack_.unpack(exec, "spmd::halo::unpack", msgs_->recv_buffer(), fields_, nfields_);
    msgs_->wait_sends();
    fields_ = {};
    nfields_ = 0;
  }
  /// end(), then order `then` after the unpack: work queued on `then` from now on sees the halo
  /// (a CUDA event when begin()'s instance is another stream; the host does not wait).
  /// Neighbour-collective.
  void end(const execution_space& then) {
    end();
    impl::order_after(then, *exec_);
  }
  /// True while an exchange of the array whose storage starts at `storage` is in progress on this
  /// plan. Local.
  bool touches(const void* storage) const {
    for (int f = 0; f < nfields_ && active_; ++f)
      if (fields_[f] == storage) return true;
    return false;
  }
  /// begin() then end(). Neighbour-collective.
  template <class... A>
  void exchange(const A&... arrays) {
    begin(arrays...);
    end();
  }
  /// True between begin() and end(). Local.
  bool in_progress() const { return active_; }
  /// The number of begin() calls so far (which exchange is the current one). Local.
  std::uint64_t exchange_id() const { return exchanges_; }
  /// Give up the exchange in progress, if any, without communicating: one line on stderr names
  /// `who`, this plan and the rank; the halos are left as they are; the next begin() waits for
  /// the abandoned messages and discards them (see the file comment). Local.
  void abandon(const char* who) noexcept {
    if (!active_) return;
    active_ = false;
    abandoned_ = true;
    fields_ = {};
    nfields_ = 0;
    try {
      impl::report(dist_.comm().rank(),
                   impl::str(who, ": the halo exchange of ", describe(),
                             " was left open without end(): abandoned, not completed; its data is discarded ",
                             "at the plan's next begin()"));
    } catch (...) {  // no memory for the message: the plan is abandoned all the same
    }
  }
  /// "spmd::HaloExchange (box, width {1, 1}, mpi) on (<distribution>)", for messages. Local.
  std::string describe() const {
    return impl::str("spmd::HaloExchange (", pattern_ == Pattern::face ? "face" : "box", ", width ",
                     impl::shape_str(width_), ", ", spmd::to_string(msgs_->backend()), ") on (", dist_.describe(), ")");
  }
  /// Number of messages this rank sends per exchange (wraps onto itself are no messages). Local.
  int num_neighbors() const { return static_cast<int>(msgs_->sends().size()); }
  /// Elements this rank sends per array per exchange (to other ranks). Local.
  index_t send_points() const { return msgs_->send_total(); }
  /// Halo points one exchange fills per array on this rank (wraps onto itself included). Local.
  index_t fill_points() const { return msgs_->recv_total() + self_.total(); }
  /// The backend this plan uses (never automatic). Local.
  Backend backend() const { return msgs_->backend(); }
  /// True when device data is staged through host buffers for MPI. Local.
  bool staged() const { return msgs_->staged(); }
  /// The plan's distribution. Local.
  const Distribution<N>& distribution() const { return dist_; }
  /// The plan's pattern. Local.
  Pattern pattern() const { return pattern_; }
  /// The halo width the plan fills. Local.
  const std::array<int, N>& width() const { return width_; }

 private:
  /// Before a new exchange on an abandoned plan: wait for the abandoned messages on its instance
  /// without unpacking them, and order `exec` after that instance (NCCL and ipc work queued on
  /// it reads and writes the buffers the new exchange reuses). Neighbour-collective.
  void discard_abandoned(const execution_space& exec) {
    const impl::Region region("spmd::halo::discard_abandoned");
    const execution_space old = *exec_;
    msgs_->wait_receives(old);
    msgs_->wait_sends();
    impl::order_after(exec, old);
    abandoned_ = false;
  }
  template <class Exec>
  void start(const Exec& exec, int n) {
    const impl::Region region("spmd::halo::begin");
    msgs_->reserve(n);
    nfields_ = n;
    exec_ = exec;
    active_ = true;
    ++exchanges_;
    impl::FieldPtrs<const T> in;
    for (int f = 0; f < n; ++f) in[f] = fields_[f];
    pack_.pack(exec, "spmd::halo::pack", in, n, msgs_->send_buffer());
    msgs_->start(exec);
    self_.direct(exec, "spmd::halo::wrap", in, fields_, n);
  }

  Distribution<N> dist_;
  Pattern pattern_;
  std::array<int, N> width_{};
  std::shared_ptr<impl::MessagePlan<T, MemorySpace>> msgs_;  // shared: parked when destroyed in flight
  impl::BoxCopies<T, N, MemorySpace> pack_, unpack_, self_;
  impl::FieldPtrs<T> fields_{};
  int nfields_ = 0;
  std::optional<execution_space> exec_;
  bool active_ = false;
  bool abandoned_ = false;  // begun, then given up without end(): see abandon()
  std::uint64_t exchanges_ = 0;
};

/// A started exchange of one Array's halo (from spmd::halo_begin). end() finishes it. Destroyed
/// (or assigned over) before end(), it does not communicate: it abandons the exchange, which is
/// reported on stderr (HaloExchange::abandon; the plan's next begin() discards it).
template <class T, int N, class MemorySpace>
class HaloRequest {
 public:
  /// The exchange in progress on `plan` (spmd::halo_begin makes it). Local.
  explicit HaloRequest(std::shared_ptr<HaloExchange<T, N, MemorySpace>> plan)
      : plan_(std::move(plan)), id_(plan_ ? plan_->exchange_id() : 0) {}
  /// Takes over the exchange. Local.
  HaloRequest(HaloRequest&&) noexcept = default;
  /// Abandons the exchange this request held, if still open, before taking the other's. Local.
  HaloRequest& operator=(HaloRequest&& o) noexcept {
    if (this != &o) {
      abandon();
      plan_ = std::move(o.plan_);
      id_ = o.id_;
    }
    return *this;
  }
  /// Abandons the exchange if end() was not called (reported; no communication). Local.
  ~HaloRequest() { abandon(); }
  /// Neighbour-collective.
  void end() {
    if (in_progress()) plan_->end();
  }
  /// end(), then order `then` after the unpack (see HaloExchange::end(then)). Neighbour-collective.
  void end(const typename HaloExchange<T, N, MemorySpace>::execution_space& then) {
    if (in_progress()) plan_->end(then);
  }
  /// True while this request's exchange is in progress (not a later one on the same plan). Local.
  bool in_progress() const { return plan_ && plan_->in_progress() && plan_->exchange_id() == id_; }
  /// True while the exchange in progress moves the array whose storage starts at `storage`. Local.
  bool touches(const void* storage) const { return in_progress() && plan_->touches(storage); }

 private:
  void abandon() noexcept {
    if (in_progress()) plan_->abandon("spmd::HaloRequest");
  }
  std::shared_ptr<HaloExchange<T, N, MemorySpace>> plan_;
  std::uint64_t id_ = 0;  // the plan's exchange this request began
};

namespace impl {
/// The array's own plan for `pattern` (full halo width, automatic backend), built on its first
/// exchange and kept in the array's slot (impl::slot): later exchanges of it allocate nothing.
/// Collective on first use (HaloExchange's constructor), Local after.
template <class T, int N, class M>
std::shared_ptr<HaloExchange<T, N, M>> array_halo_plan(const Array<T, N, M>& a, Pattern pattern, const char* fn) {
  if (a.is_null()) throw Error::replicated(str(fn, ": a null array (default-constructed or moved from)"));
  auto& s = slot(a, pattern == Pattern::face ? Slot::halo_face : Slot::halo_box);
  if (!s) s = std::make_shared<HaloExchange<T, N, M>>(a.distribution(), pattern);
  return std::static_pointer_cast<HaloExchange<T, N, M>>(s);
}
}  // namespace impl

/// Fill `a`'s halo from its neighbours on `exec` (the full halo width, with `pattern`): the
/// array's own plan, built on its first exchange (a collective) and reused, so a time loop
/// allocates nothing. Neighbour-collective: every rank of a's communicator calls it; a null `a`
/// is the same spmd::Error on every rank.
template <class T, int N, class M>
void exchange_halo(const typename Array<T, N, M>::execution_space& exec, const Array<T, N, M>& a,
                   Pattern pattern = Pattern::box) {
  auto plan = impl::array_halo_plan(a, pattern, "spmd::exchange_halo");
  plan->begin(exec, a);
  plan->end();
}
/// exchange_halo() on a default instance of a's execution space. Neighbour-collective.
template <class T, int N, class M>
void exchange_halo(const Array<T, N, M>& a, Pattern pattern = Pattern::box) {
  exchange_halo(typename Array<T, N, M>::execution_space(), a, pattern);
}
/// Start exchanging `a`'s halo on `exec` (the array's own plan, as exchange_halo); finish it with
/// the returned request's end(). Work on the owned interior can run in between. A request
/// destroyed before end() abandons the exchange (reported, no communication: see the file
/// comment). Neighbour-collective.
template <class T, int N, class M>
HaloRequest<T, N, M> halo_begin(const typename Array<T, N, M>::execution_space& exec, const Array<T, N, M>& a,
                                Pattern pattern = Pattern::box) {
  auto plan = impl::array_halo_plan(a, pattern, "spmd::halo_begin");
  plan->begin(exec, a);
  return HaloRequest<T, N, M>(std::move(plan));
}
/// halo_begin() on a default instance of a's execution space. Neighbour-collective.
template <class T, int N, class M>
HaloRequest<T, N, M> halo_begin(const Array<T, N, M>& a, Pattern pattern = Pattern::box) {
  return halo_begin(typename Array<T, N, M>::execution_space(), a, pattern);
}

}  // namespace spmd
