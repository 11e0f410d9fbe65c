#pragma once
/// \file halo.hpp
/// spmd::HaloExchange: fills arrays' halos from their neighbours.
///
/// A plan is built once for a distribution (pattern, width) and reused: its per-neighbour
/// index boxes, device metadata, message buffers and tags are made at construction; an exchange
/// allocates nothing (a plan grows its buffers once if later asked to move more arrays at a time).
///
/// Split phase: begin() posts the receives, packs every outgoing face of every array on the
/// device in one kernel, and sends; end() waits, unpacks in one kernel and completes the sends.
/// Work on the owned interior can run between the two.
///
/// Communication: buffers live in the arrays' memory space. When MPI cannot read that space
/// (device memory with a host MPI) they are staged through host (pinned, on CUDA) mirrors.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/backend.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/staging.hpp"

namespace spmd {

namespace impl {
/// One block of halo points sent to, or received from, one neighbour: a box of storage indices.
template <int N>
struct HaloSegment {
  Kokkos::Array<int, N> lo;   // first storage index
  Kokkos::Array<int, N> ext;  // extents
  index_t offset;             // first point in the concatenation of all segments
  index_t count;              // number of points
  index_t source;             // unpack only: -1, or the send-buffer offset of a wrap onto this rank
};

/// Copies the points of all segments of all fields between storage and a buffer, one kernel.
/// Buffer layout: segment s of field f at buf[nf * offset_s + f * count_s + k]. When unpacking,
/// a segment whose data wraps onto this rank (periodic axis, one rank along it) reads straight
/// from the send buffer (`other`) instead of a message.
template <class View, int N, int MaxFields, bool Pack>
struct HaloCopy {
  using T = typename View::non_const_value_type;
  Kokkos::Array<View, MaxFields> fields;
  int nfields;
  Kokkos::View<const HaloSegment<N>*, typename View::memory_space> segs;
  int nsegs;
  index_t total;
  Kokkos::View<T*, typename View::memory_space> buf;
  Kokkos::View<T*, typename View::memory_space> other;

  KOKKOS_INLINE_FUNCTION void operator()(const index_t p) const {
    const int f = static_cast<int>(p / total);
    const index_t q = p - f * total;
    int s = 0;  // segments are few (at most 3^N - 1): a linear scan is cheapest
    while (s + 1 < nsegs && segs(s + 1).offset <= q) ++s;
    const HaloSegment<N>& g = segs(s);
    index_t k = q - g.offset;
    Kokkos::Array<int, N> idx;
    for (int d = N - 1; d >= 0; --d) {
      idx[d] = g.lo[d] + static_cast<int>(k % g.ext[d]);
      k /= g.ext[d];
    }
    if constexpr (Pack) {
      buf(nfields * g.offset + f * g.count + (q - g.offset)) = element(fields[f], idx, std::make_index_sequence<N>{});
    } else {
      const bool wrap = g.source >= 0;
      const index_t at = nfields * (wrap ? g.source : g.offset) + f * g.count + (q - g.offset);
      element(fields[f], idx, std::make_index_sequence<N>{}) = wrap ? other(at) : buf(at);
    }
  }
  template <std::size_t... D>
  KOKKOS_FORCEINLINE_FUNCTION static T& element(const View& v, const Kokkos::Array<int, N>& i,
                                                std::index_sequence<D...>) {
    return v(i[D]...);
  }
};
/// Copies one segment of one field between storage and a buffer, iterating the segment's box
/// (used on host execution spaces, where the fused kernel's per-point index arithmetic costs
/// more than the copy itself).
template <class View, int N, bool Pack>
struct SegmentCopy {
  using T = typename View::non_const_value_type;
  View field;
  Kokkos::View<T*, typename View::memory_space> buf;
  index_t base;                      // buffer position of the segment's first point
  Kokkos::Array<int, N> lo;          // first storage index
  Kokkos::Array<index_t, N> stride;  // row-major strides of the segment's extents
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    apply(std::make_index_sequence<N>{}, i...);
  }
  template <std::size_t... D, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void apply(std::index_sequence<D...>, I... i) const {
    const index_t at = base + ((static_cast<index_t>(i) * stride[D]) + ...);
    if constexpr (Pack)
      buf(at) = field((lo[D] + i)...);
    else
      field((lo[D] + i)...) = buf(at);
  }
};
}  // namespace impl

/// A halo-exchange plan for arrays of element type T on one distribution.
template <class T, int N, class MemorySpace = DefaultMemorySpace>
class HaloExchange {
 public:
  using array_type = Array<T, N, MemorySpace>;
  using execution_space = typename MemorySpace::execution_space;
  /// Most arrays one exchange can move.
  static constexpr int max_fields = 8;

  /// Plan for `dist` with `pattern`, filling `width[d] <= halo[d]` layers along each axis
  /// (default: the whole halo), moving data with `backend` (see backend.hpp). Collective: every
  /// rank builds its plans in the same order (the plan reserves message tags on the
  /// communicator, and may create its NCCL communicator).
  HaloExchange(const Distribution<N>& dist, Pattern pattern = Pattern::box);
  HaloExchange(const Distribution<N>& dist, Pattern pattern, const std::array<int, N>& width,
               Backend backend = Backend::automatic);
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;
  ~HaloExchange();

  /// Start filling the halos of `arrays` (all on this plan's distribution). Neighbour-collective.
  template <class... A>
  void begin(const A&... arrays) {
    static_assert((std::is_same_v<A, array_type> && ...),
                  "spmd::HaloExchange::begin: arrays must be of the plan's type");
    std::array<const array_type*, sizeof...(A)> list{&arrays...};
    begin_impl(list.data(), static_cast<int>(sizeof...(A)));
  }
  /// Finish the exchange started by begin(). Neighbour-collective.
  void end();
  /// begin() then end(). Neighbour-collective.
  template <class... A>
  void exchange(const A&... arrays) {
    begin(arrays...);
    end();
  }
  /// True between begin() and end(). Local.
  bool in_progress() const { return active_; }
  /// Number of messages this rank sends per exchange (wraps onto itself are no messages). Local.
  int num_neighbors() const { return static_cast<int>(send_.size()); }
  /// Elements this rank sends per array per exchange (to other ranks). Local.
  index_t send_points() const {
    index_t n = 0;
    for (const auto& p : send_) n += p.count;
    return n;
  }
  /// Halo points one exchange fills per array on this rank (wraps onto itself included). Local.
  index_t fill_points() const { return recv_total_; }
  /// The backend this plan uses (never automatic). Local.
  Backend backend() const { return backend_; }
  /// True when device data is staged through host buffers for MPI. Local.
  bool staged() const { return staged_; }
  const Distribution<N>& distribution() const { return dist_; }
  Pattern pattern() const { return pattern_; }
  const std::array<int, N>& width() const { return width_; }

 private:
  using view_type = typename array_type::view_type;
  using staging = typename impl::staging_space<MemorySpace>::type;
  struct Peer {
    int rank;
    int tag;
    index_t offset;  // in points, into the plan's send (or receive) concatenation
    index_t count;
  };
  void begin_impl(const array_type* const* arrays, int n);
  void allocate(int nfields);
  template <bool Pack>
  void copy(const std::vector<impl::HaloSegment<N>>& host_segs,
            Kokkos::View<const impl::HaloSegment<N>*, MemorySpace> segs, index_t total,
            Kokkos::View<T*, MemorySpace> buf, Kokkos::View<T*, MemorySpace> other, const char* label);
  template <class V>
  static auto range(const V& v, index_t first, index_t count) {
    return Kokkos::subview(v, std::make_pair(first, first + count));
  }

  Distribution<N> dist_;
  Pattern pattern_;
  std::array<int, N> width_{};
  Backend backend_ = Backend::mpi;
  bool staged_ = false;
  std::vector<Peer> send_, recv_;  // one message per other rank (all its segments, contiguous)
  std::vector<impl::HaloSegment<N>> send_segs_host_, recv_segs_host_;
  Kokkos::View<impl::HaloSegment<N>*, MemorySpace> send_segs_, recv_segs_;
  index_t send_total_ = 0, recv_total_ = 0;
  int capacity_ = 0;  // fields the buffers hold
  Kokkos::View<T*, MemorySpace> send_buf_, recv_buf_;
  Kokkos::View<T*, staging> send_host_, recv_host_;
  std::vector<MPI_Request> requests_;
  std::vector<impl::P2P> p2p_send_, p2p_recv_;
  Kokkos::Array<view_type, max_fields> fields_;
  int nfields_ = 0;
  bool active_ = false;
};

/// A started exchange of one Array's halo (from Array::halo_begin). end() finishes it; the
/// destructor finishes it too if end() was not called.
template <class T, int N, class MemorySpace>
class HaloRequest {
 public:
  explicit HaloRequest(std::shared_ptr<HaloExchange<T, N, MemorySpace>> plan) : plan_(std::move(plan)) {}
  HaloRequest(HaloRequest&&) noexcept = default;
  /// Finishes the exchange this request held (if any) before taking the other's.
  HaloRequest& operator=(HaloRequest&& o) noexcept {
    if (this != &o) {
      finish_quietly();
      plan_ = std::move(o.plan_);
    }
    return *this;
  }
  ~HaloRequest() { finish_quietly(); }
  /// Neighbour-collective.
  void end() {
    if (plan_ && plan_->in_progress()) plan_->end();
  }

 private:
  void finish_quietly() noexcept {
    if (plan_ && plan_->in_progress()) {
      try {
        plan_->end();
      } catch (...) {  // a destructor must not throw; end() reported nothing to anybody
      }
    }
  }
  std::shared_ptr<HaloExchange<T, N, MemorySpace>> plan_;
};

// ---- HaloExchange bodies -----------------------------------------------------------------------

template <class T, int N, class M>
HaloExchange<T, N, M>::HaloExchange(const Distribution<N>& dist, Pattern pattern)
    : HaloExchange(dist, pattern, dist.halo()) {}

template <class T, int N, class M>
HaloExchange<T, N, M>::HaloExchange(const Distribution<N>& dist, Pattern pattern, const std::array<int, N>& width,
                                    Backend backend)
    : dist_(dist), pattern_(pattern), width_(width) {
  const char* fn = "spmd::HaloExchange";
  for (int d = 0; d < N; ++d)
    if (width[d] < 0 || width[d] > dist.halo()[d])
      throw Error(impl::str(fn, ": width ", impl::shape_str(width), " must lie between 0 and the halo ",
                            impl::shape_str(dist.halo()), " on every axis"),
                  true);
  backend_ = impl::resolve_backend<M>(dist.comm(), backend, fn);
  staged_ = backend_ == Backend::mpi && !impl::host_accessible<M>() && !impl::mpi_cuda_aware();
  int ndir = 1;
  for (int d = 0; d < N; ++d) ndir *= 3;
  // One message per ordered pair of ranks per exchange: a single tag serves the whole plan.
  const int tag = dist.comm().reserve_tags(1);
  const int me = dist.comm().rank();

  const Box<N>& own = dist.owned();
  const auto& h = dist.halo();
  // Segment to send towards direction o, and segment to fill from that direction. `code` is o's
  // number; `back` the number of -o, i.e. the direction the matching data was sent in.
  struct Pending {
    int peer, order;
    impl::HaloSegment<N> seg;
  };
  std::vector<Pending> outs, ins;
  // Every direction o in {-1, 0, 1}^N except 0; `face` keeps those with one nonzero entry.
  for (int code = 0; code < ndir; ++code) {
    std::array<int, N> o{};
    int c = code, nonzero = 0;
    for (int d = 0; d < N; ++d) {
      o[d] = c % 3 - 1;
      c /= 3;
      nonzero += o[d] != 0;
    }
    if (nonzero == 0 || (pattern == Pattern::face && nonzero > 1)) continue;
    const int peer = dist.neighbor(o);
    if (peer < 0) continue;
    impl::HaloSegment<N> s{}, r{};
    index_t count = 1;
    for (int d = 0; d < N; ++d) {
      const int e = static_cast<int>(own.extent(d));
      if (o[d] == 0) {
        s.lo[d] = r.lo[d] = h[d];
        s.ext[d] = r.ext[d] = e;
      } else {
        s.ext[d] = r.ext[d] = width[d];
        s.lo[d] = o[d] < 0 ? h[d] : h[d] + e - width[d];
        r.lo[d] = o[d] < 0 ? h[d] - width[d] : h[d] + e;
      }
      count *= s.ext[d];
    }
    if (count == 0) continue;  // the neighbour computes the same (same geometry) and skips too
    int back = 0;
    for (int d = N - 1; d >= 0; --d) back = back * 3 + (-o[d] + 1);
    s.count = r.count = count;
    s.source = r.source = -1;
    outs.push_back(Pending{peer, code, s});
    ins.push_back(Pending{peer, back, r});
  }
  // Sender and receiver order one pair's segments alike: by the direction the data travels in
  // (the sender's `code`, which is the receiver's `back`). Then each peer's segments are
  // contiguous in the buffers and travel as one message.
  auto by_peer = [](const Pending& a, const Pending& b) {
    return a.peer != b.peer ? a.peer < b.peer : a.order < b.order;
  };
  std::sort(outs.begin(), outs.end(), by_peer);
  std::sort(ins.begin(), ins.end(), by_peer);
  auto layout = [&](std::vector<Pending>& list, std::vector<Peer>& messages, index_t& total) {
    for (auto& p : list) {
      p.seg.offset = total;
      total += p.seg.count;
      if (p.peer == me) continue;
      if (!messages.empty() && messages.back().rank == p.peer)
        messages.back().count += p.seg.count;
      else
        messages.push_back(Peer{p.peer, tag, p.seg.offset, p.seg.count});
    }
  };
  layout(outs, send_, send_total_);
  layout(ins, recv_, recv_total_);
  // A wrap onto this rank is no message: its receive segment unpacks straight from the send
  // buffer, at the send segment of the same direction.
  for (auto& r : ins)
    if (r.peer == me)
      for (const auto& s : outs)
        if (s.peer == me && s.order == r.order) r.seg.source = s.seg.offset;
  std::vector<impl::HaloSegment<N>> ssegs, rsegs;
  for (const auto& p : outs) ssegs.push_back(p.seg);
  for (const auto& p : ins) rsegs.push_back(p.seg);
  send_segs_host_ = ssegs;
  recv_segs_host_ = rsegs;
  auto upload = [](const std::vector<impl::HaloSegment<N>>& v, const char* label) {
    Kokkos::View<impl::HaloSegment<N>*, M> dev(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                               v.size());
    auto host = Kokkos::create_mirror_view(dev);
    for (std::size_t i = 0; i < v.size(); ++i) host(i) = v[i];
    Kokkos::deep_copy(dev, host);
    return dev;
  };
  send_segs_ = upload(ssegs, "spmd::halo::send_segments");
  recv_segs_ = upload(rsegs, "spmd::halo::recv_segments");
  requests_.reserve(send_.size() + recv_.size());
  p2p_send_.reserve(send_.size());
  p2p_recv_.reserve(recv_.size());
  allocate(1);
}

template <class T, int N, class M>
HaloExchange<T, N, M>::~HaloExchange() {
  if (active_) {
    try {
      end();
    } catch (...) {  // a destructor must not throw
    }
  }
}

template <class T, int N, class M>
void HaloExchange<T, N, M>::allocate(int nfields) {
  if (nfields <= capacity_) return;
  for (const auto& p : send_)
    if (p.count * nfields * static_cast<index_t>(sizeof(T)) > std::numeric_limits<int>::max())
      throw Error(impl::str("spmd::HaloExchange: a message of ", p.count * nfields,
                            " elements is larger than MPI's int count of bytes"));
  const auto ns = static_cast<std::size_t>(send_total_ * nfields), nr = static_cast<std::size_t>(recv_total_ * nfields);
  send_buf_ =
      Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::halo::send_buffer")), ns);
  recv_buf_ =
      Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::halo::recv_buffer")), nr);
  if (staged_) {
    send_host_ = Kokkos::View<T*, staging>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::halo::send_staging")), ns);
    recv_host_ = Kokkos::View<T*, staging>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::halo::recv_staging")), nr);
  }
  capacity_ = nfields;
}

template <class T, int N, class M>
template <bool Pack>
void HaloExchange<T, N, M>::copy(const std::vector<impl::HaloSegment<N>>& host_segs,
                                 Kokkos::View<const impl::HaloSegment<N>*, M> segs, index_t total,
                                 Kokkos::View<T*, M> buf, Kokkos::View<T*, M> other, const char* label) {
  if (total == 0) return;
  const execution_space exec;
  if constexpr (impl::host_accessible<typename execution_space::memory_space>()) {
    // Host: one strided loop per segment and field (no per-point division).
    for (int f = 0; f < nfields_; ++f) {
      for (const auto& g : host_segs) {
        const bool wrap = !Pack && g.source >= 0;
        impl::SegmentCopy<view_type, N, Pack> k{
            fields_[f], wrap ? other : buf, nfields_ * (wrap ? g.source : g.offset) + f * g.count, g.lo, {}};
        index_t st = 1;
        std::array<int, N> ext{};
        for (int d = N - 1; d >= 0; --d) {
          k.stride[d] = st;
          st *= g.ext[d];
          ext[d] = g.ext[d];
        }
        Kokkos::parallel_for(label, impl::nd_policy<N>(exec, ext), k);
      }
    }
  } else {
    // Device: every point of every segment and field in one launch.
    impl::HaloCopy<view_type, N, max_fields, Pack> k{fields_, nfields_, segs, static_cast<int>(host_segs.size()),
                                                     total,   buf,      other};
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_t>>(exec, 0, total * nfields_), k);
  }
}

template <class T, int N, class M>
void HaloExchange<T, N, M>::begin_impl(const array_type* const* arrays, int n) {
  const char* fn = "spmd::HaloExchange::begin";
  if (active_) throw Error(impl::str(fn, ": an exchange on this plan is already in progress; call end() first"));
  if (n < 1 || n > max_fields)
    throw Error(impl::str(fn, ": one exchange moves 1 to ", max_fields, " arrays, not ", n), true);
  for (int i = 0; i < n; ++i) {
    if (arrays[i]->distribution() != dist_)
      throw Error(
          impl::str(fn, ": array '", arrays[i]->label(), "' has distribution (", arrays[i]->distribution().describe(),
                    ") but the plan was built for (", dist_.describe(), ")"),
          true);
    fields_[i] = arrays[i]->local_with_halo();
  }
  nfields_ = n;
  allocate(n);
  active_ = true;
  const execution_space exec;
  if (backend_ == Backend::nccl) {
    copy<true>(send_segs_host_, send_segs_, send_total_, send_buf_, recv_buf_, "spmd::halo::pack");
    p2p_send_.clear();
    p2p_recv_.clear();
    const std::size_t unit = sizeof(T) * static_cast<std::size_t>(n);
    for (const auto& p : recv_) p2p_recv_.push_back({recv_buf_.data() + p.offset * n, p.count * unit, p.rank});
    for (const auto& p : send_) p2p_send_.push_back({send_buf_.data() + p.offset * n, p.count * unit, p.rank});
    impl::nccl_exchange(dist_.comm(), impl::stream_of(exec), p2p_send_.data(), static_cast<int>(p2p_send_.size()),
                        p2p_recv_.data(), static_cast<int>(p2p_recv_.size()));
    return;
  }
  requests_.clear();
  MPI_Comm comm = dist_.comm().raw();
  const int unit = static_cast<int>(sizeof(T)) * n;  // bytes per point
  char* rbase = reinterpret_cast<char*>(staged_ ? recv_host_.data() : recv_buf_.data());
  for (const auto& p : recv_) {
    MPI_Request r;
    SPMD_MPI_CHECK(
        MPI_Irecv(rbase + p.offset * unit, static_cast<int>(p.count) * unit, MPI_BYTE, p.rank, p.tag, comm, &r), fn);
    requests_.push_back(r);
  }
  copy<true>(send_segs_host_, send_segs_, send_total_, send_buf_, recv_buf_, "spmd::halo::pack");
  if (staged_ && send_total_ > 0)
    Kokkos::deep_copy(exec, range(send_host_, 0, send_total_ * n), range(send_buf_, 0, send_total_ * n));
  impl::fence(exec, "spmd::halo::begin before MPI_Isend");
  char* sbase = reinterpret_cast<char*>(staged_ ? send_host_.data() : send_buf_.data());
  for (const auto& p : send_) {
    MPI_Request r;
    SPMD_MPI_CHECK(
        MPI_Isend(sbase + p.offset * unit, static_cast<int>(p.count) * unit, MPI_BYTE, p.rank, p.tag, comm, &r), fn);
    requests_.push_back(r);
  }
}

template <class T, int N, class M>
void HaloExchange<T, N, M>::end() {
  const char* fn = "spmd::HaloExchange::end";
  if (!active_) throw Error(impl::str(fn, ": no exchange in progress (call begin() first)"));
  active_ = false;
  const int n = nfields_;
  const execution_space exec;
  const int nr = static_cast<int>(recv_.size());
  if (backend_ == Backend::mpi) {
    SPMD_MPI_CHECK(MPI_Waitall(nr, requests_.data(), MPI_STATUSES_IGNORE), fn);
    if (staged_ && recv_total_ > 0)
      Kokkos::deep_copy(exec, range(recv_buf_, 0, recv_total_ * n), range(recv_host_, 0, recv_total_ * n));
  }
  copy<false>(recv_segs_host_, recv_segs_, recv_total_, recv_buf_, send_buf_, "spmd::halo::unpack");
  if (backend_ == Backend::mpi)
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()) - nr, requests_.data() + nr, MPI_STATUSES_IGNORE),
                   fn);
  impl::fence(exec, "spmd::halo::end after unpack");
  for (int i = 0; i < nfields_; ++i) fields_[i] = view_type();
  nfields_ = 0;
}

// ---- Array's halo members ----------------------------------------------------------------------

template <class T, int N, class M>
std::shared_ptr<HaloExchange<T, N, M>> Array<T, N, M>::default_halo(Pattern p) const {
  auto& plan = p == Pattern::face ? shared_->face : shared_->box;
  if (!plan) plan = std::make_shared<HaloExchange<T, N, M>>(dist_, p);
  return plan;
}

template <class T, int N, class M>
void Array<T, N, M>::exchange_halo(Pattern p) const {
  default_halo(p)->exchange(*this);
}

template <class T, int N, class M>
HaloRequest<T, N, M> Array<T, N, M>::halo_begin(Pattern p) const {
  auto plan = default_halo(p);
  plan->begin(*this);
  return HaloRequest<T, N, M>(plan);
}

}  // namespace spmd
