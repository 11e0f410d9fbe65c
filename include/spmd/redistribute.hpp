#pragma once
/// \file redistribute.hpp
/// Copying owned data between two distributions: spmd::Redistribution (a reusable plan),
/// spmd::redistribute (one shot) and spmd::transpose, all on one general plan,
/// spmd::impl::RegionPlan, that copies an affine selection of a source array (NumPy slices with
/// steps, dropped axes, permuted axes) into a destination array on any other distribution.
///
/// How a plan is made (collective over the transfer communicator, once):
///   1. every rank contributes, in ONE MPI_Allgather, the source and destination shapes, the
///      boxes it owns in each (if it holds that distribution at all) and the selection;
///   2. every rank validates the gathered description alike (so errors are agreed without
///      another collective) and, for each peer, intersects its own source box with the peer's
///      destination box (what it sends) and the peer's source box with its own destination box
///      (what it receives). Along each axis the destination indices j whose source index
///      start + step * j falls into a block form one interval, computed exactly (floor/ceil
///      division; negative steps included), so each pair of ranks exchanges one box of the
///      destination index space, in row-major order of that box: ONE message per peer;
///   3. message buffers (in the arrays' memory space, plus pinned host staging for device data
///      with a host MPI), segment tables on the device and one message tag are made here.
/// apply() then allocates nothing: it posts the receives, packs every outgoing box in one
/// kernel, sends, copies this rank's own part directly (source to destination, no buffer),
/// waits, and unpacks in one kernel. Only owned points move: halos are neither read nor written.
///
/// Sub-communicators: the destination (or the source) distribution may live on a
/// sub-communicator (Comm::split) of the transfer communicator. The plan is collective over the
/// transfer communicator (the source's by default); a rank outside the destination's
/// sub-communicator passes a null Distribution (and a null Array to apply()): it sends its
/// source data and receives nothing. Ranks are matched through the transfer communicator, so the
/// sub-communicator's rank order does not matter; every rank of the sub-communicator must belong
/// to the transfer communicator. The destination may be replicated: several disjoint
/// sub-communicators each hold a distribution of the destination shape (one per process row,
/// say), and each replica receives all the data (blas.hpp's gemv broadcasts x that way).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/backend.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/staging.hpp"

namespace spmd {

namespace impl {

/// Affine selection: destination global index j (rank M) reads source global index i with
///   i[a] = start[a] + step[a] * j[map[a]]   for kept source axes (map[a] in [0, M)),
///   i[a] = start[a]                          for dropped source axes (map[a] == -1).
/// step may be negative, never 0. Every destination axis is fed by exactly one source axis.
template <int N, int M>
struct Selection {
  static_assert(M >= 1 && M <= N, "spmd::impl::Selection: the destination rank M must lie in [1, N]");
  Index<N> start{};
  Index<N> step{};
  std::array<int, N> map{};
  /// start 0, step 1, map[a] = a. Local.
  static Selection identity() {
    static_assert(N == M, "spmd::impl::Selection::identity: needs M == N");
    Selection s;
    for (int a = 0; a < N; ++a) {
      s.start[a] = 0;
      s.step[a] = 1;
      s.map[a] = a;
    }
    return s;
  }
  /// "start {..} step {..} map {..}". Local.
  std::string describe() const {
    return str("start ", shape_str(start), " step ", shape_str(step), " map ", shape_str(map));
  }
};

/// floor(a / b) and ceil(a / b) for b > 0 and any sign of a.
inline index_t floor_div(index_t a, index_t b) {
  const index_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}
inline index_t ceil_div(index_t a, index_t b) {
  return -floor_div(-a, b);
}
/// The j with lo <= start + step * j < hi, as [first, last + 1) (empty when first >= second).
inline std::pair<index_t, index_t> affine_interval(index_t start, index_t step, index_t lo, index_t hi) {
  if (lo >= hi) return {0, 0};
  if (step > 0) return {ceil_div(lo - start, step), floor_div(hi - 1 - start, step) + 1};
  const index_t s = -step;
  return {ceil_div(start - hi + 1, s), floor_div(start - lo, s) + 1};
}
/// The destination indices (inside destination box `dst`) whose source index lies in `src`.
template <int N, int M>
Box<M> selection_intersect(const Selection<N, M>& sel, const Box<N>& src, const Box<M>& dst) {
  Box<M> j = dst;
  for (int a = 0; a < N; ++a) {
    const int k = sel.map[a];
    if (k < 0) {
      if (sel.start[a] < src.lo[a] || sel.start[a] >= src.hi[a]) return Box<M>{};
      continue;
    }
    const auto iv = affine_interval(sel.start[a], sel.step[a], src.lo[a], src.hi[a]);
    j.lo[k] = std::max(j.lo[k], iv.first);
    j.hi[k] = std::min(j.hi[k], iv.second);
  }
  if (j.empty()) return Box<M>{};
  return j;
}

/// The box whose lo and hi are stored one after the other at p (p[0..R), p[R..2R)).
template <int R>
Box<R> box_from(const index_t* p) {
  Box<R> b;
  for (int d = 0; d < R; ++d) {
    b.lo[d] = p[d];
    b.hi[d] = p[R + d];
  }
  return b;
}

/// A box of destination indices moved between two ranks (or within one): storage index of its
/// first point in the source and in the destination, its extents, and its place in a buffer.
/// ND is the rank of the destination's storage (M, unless the destination is itself a selection
/// of an ND-d array).
template <int N, int M, int ND = M>
struct RegionSegment {
  Kokkos::Array<int, N> src;   // source storage index at the box's first point
  Kokkos::Array<int, ND> dst;  // destination storage index at the box's first point
  Kokkos::Array<int, M> ext;   // extents of the box
  index_t offset;              // first point in the buffer
  index_t count;               // number of points
};

enum class RegionOp { pack, unpack, direct };

/// Moves the points of a segment: source storage index along axis a is
/// seg.src[a] + coef[a] * j[axis[a]] (coef is the step, 0 along dropped axes), destination
/// storage index along b is seg.dst[b] + dcoef[b] * j[daxis[b]] (likewise for the destination's
/// selection; the identity when the destination is a whole array), for j over the box in
/// row-major order.
template <class SrcView, class DstView, int N, int M, RegionOp Op, int ND = M>
struct RegionMove {
  using T = typename DstView::non_const_value_type;
  using memory_space = typename DstView::memory_space;
  using segment = RegionSegment<N, M, ND>;
  SrcView src;
  DstView dst;
  Kokkos::View<T*, memory_space> buf;
  Kokkos::Array<int, N> coef;
  Kokkos::Array<int, N> axis;
  Kokkos::Array<int, ND> dcoef;
  Kokkos::Array<int, ND> daxis;

  KOKKOS_FORCEINLINE_FUNCTION void move(const segment& g, const Kokkos::Array<int, M>& j, const index_t at) const {
    Kokkos::Array<int, N> si;
    Kokkos::Array<int, ND> di;
    for (int a = 0; a < N; ++a) si[a] = g.src[a] + coef[a] * j[axis[a]];
    for (int b = 0; b < ND; ++b) di[b] = g.dst[b] + dcoef[b] * j[daxis[b]];
    if constexpr (Op == RegionOp::pack)
      buf(at) = element(src, si, std::make_index_sequence<N>{});
    else if constexpr (Op == RegionOp::unpack)
      element(dst, di, std::make_index_sequence<ND>{}) = buf(at);
    else
      element(dst, di, std::make_index_sequence<ND>{}) = element(src, si, std::make_index_sequence<N>{});
  }
  template <class V, class A, std::size_t... D>
  KOKKOS_FORCEINLINE_FUNCTION static typename V::reference_type element(const V& v, const A& i,
                                                                        std::index_sequence<D...>) {
    return v(i[D]...);
  }
};

/// Device form: every point of every segment in one launch (binary search for the segment).
template <class Move, int N, int M>
struct RegionCopyFlat {
  Move mv;
  Kokkos::View<const typename Move::segment*, typename Move::memory_space> segs;
  int nsegs;
  KOKKOS_INLINE_FUNCTION void operator()(const index_t p) const {
    int lo = 0, hi = nsegs - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (segs(mid).offset <= p)
        lo = mid;
      else
        hi = mid - 1;
    }
    const typename Move::segment& g = segs(lo);
    index_t k = p - g.offset;
    Kokkos::Array<int, M> j;
    for (int d = M - 1; d >= 0; --d) {
      j[d] = static_cast<int>(k % g.ext[d]);
      k /= g.ext[d];
    }
    mv.move(g, j, p);
  }
};

/// Host form: one segment, iterated as an M-d box (no per-point division).
template <class Move, int N, int M>
struct RegionCopyBox {
  Move mv;
  typename Move::segment seg;
  Kokkos::Array<index_t, M> stride;  // row-major strides of the segment's extents
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const I... i) const {
    const Kokkos::Array<int, M> j{{static_cast<int>(i)...}};
    index_t at = seg.offset;
    for (int d = 0; d < M; ++d) at += j[d] * stride[d];
    mv.move(seg, j, at);
  }
};

/// The plan: copies sel(src) into dst, or into dsel(dst) (an M-d selection of an ND-d
/// destination array, so that a slice can be the destination). See the file comment.
template <class T, int N, int M, class Mem = DefaultMemorySpace, int ND = M>
class RegionPlan {
 public:
  using src_array = Array<T, N, Mem>;
  using dst_array = Array<T, ND, Mem>;
  using execution_space = typename Mem::execution_space;

  /// Plan over `from`'s communicator. Collective over it. `fn` names the public function in
  /// error messages.
  RegionPlan(const Distribution<N>& from, const Selection<N, M>& sel, const Distribution<ND>& to,
             Backend backend = Backend::automatic, const char* fn = "spmd::impl::RegionPlan")
      : RegionPlan(from.comm(), from, sel, to, backend, fn) {}
  /// Plan over `comm`; `from` and `to` may be null on ranks outside their (sub-)communicators.
  /// Collective over `comm`.
  RegionPlan(const Comm& comm, const Distribution<N>& from, const Selection<N, M>& sel, const Distribution<ND>& to,
             Backend backend = Backend::automatic, const char* fn = "spmd::impl::RegionPlan")
      : comm_(comm), from_(from), to_(to), fn_(fn) {
    static_assert(ND == M, "spmd::impl::RegionPlan: a destination of another rank needs a destination selection");
    build(sel, Selection<ND, M>::identity(), nullptr, backend);
  }
  /// Plan writing destination index j (an M-d box of extents `extent`) to dsel(j) of an ND-d
  /// destination array: dst[dsel(j)] = src[sel(j)]. Collective over `comm`.
  RegionPlan(const Comm& comm, const Distribution<N>& from, const Selection<N, M>& sel, const Distribution<ND>& to,
             const Selection<ND, M>& dsel, const Index<M>& extent, Backend backend = Backend::automatic,
             const char* fn = "spmd::impl::RegionPlan")
      : comm_(comm), from_(from), to_(to), fn_(fn) {
    build(sel, dsel, &extent, backend);
  }
  RegionPlan(const RegionPlan&) = delete;
  RegionPlan& operator=(const RegionPlan&) = delete;

  /// dst = sel(src) over the owned points of dst. src (dst) must be on the plan's source
  /// (destination) distribution, or null on ranks that hold none. src and dst may share
  /// storage. Collective over the plan's communicator.
  void apply(const src_array& src, const dst_array& dst) const;

  /// Local queries.
  const Comm& comm() const { return comm_; }
  Backend backend() const { return backend_; }
  bool staged() const { return staged_; }
  /// Messages this rank sends per apply (its own part is no message).
  int num_sends() const { return static_cast<int>(sends_.size()); }
  int num_recvs() const { return static_cast<int>(recvs_.size()); }
  /// Points this rank sends to other ranks / copies within itself per apply.
  index_t send_points() const { return send_total_; }
  index_t local_points() const { return self_.count; }
  /// On host execution spaces, copy with the device form (one launch over all boxes, a binary
  /// search per point) instead of one box loop per box: lets CPU tests cover the GPU kernels.
  /// Local.
  void use_flat_kernels(bool flat) { flat_ = flat || !host_accessible<typename execution_space::memory_space>(); }

 private:
  using src_view = typename src_array::view_type;
  using dst_view = typename dst_array::view_type;
  using staging = typename staging_space<Mem>::type;
  using buffer = Kokkos::View<T*, Mem>;
  using seg_t = RegionSegment<N, M, ND>;
  struct Peer {
    int rank;
    index_t offset, count;
  };
  template <RegionOp Op>
  void run(const std::vector<seg_t>& host_segs, const Kokkos::View<const seg_t*, Mem>& segs, index_t total,
           const src_view& s, const dst_view& d, const buffer& buf, const char* label) const;
  static Kokkos::View<seg_t*, Mem> upload(const std::vector<seg_t>& v, const char* label);
  void build(const Selection<N, M>& sel, const Selection<ND, M>& dsel, const Index<M>* extent, Backend backend);
  template <class V>
  static auto range(const V& v, index_t first, index_t count) {
    return Kokkos::subview(v, std::make_pair(first, first + count));
  }

  Comm comm_;
  Distribution<N> from_;
  Distribution<ND> to_;
  std::string fn_;
  Backend backend_ = Backend::mpi;
  bool staged_ = false;
  bool flat_ = !host_accessible<typename execution_space::memory_space>();
  int tag_ = 0;
  Kokkos::Array<int, N> coef_{}, axis_{};
  Kokkos::Array<int, ND> dcoef_{}, daxis_{};
  std::vector<Peer> sends_, recvs_;
  std::vector<seg_t> send_segs_host_, recv_segs_host_, self_segs_host_;
  Kokkos::View<seg_t*, Mem> send_segs_, recv_segs_, self_segs_;
  seg_t self_{};  // this rank's own part (count 0 when none)
  index_t send_total_ = 0, recv_total_ = 0;
  buffer send_buf_, recv_buf_;
  mutable buffer self_buf_;  // made on the first apply whose src and dst share storage
  Kokkos::View<T*, staging> send_host_, recv_host_;
  mutable std::vector<MPI_Request> requests_;
  mutable std::vector<P2P> p2p_send_, p2p_recv_;
};

template <class T, int N, int M, class Mem, int ND>
void RegionPlan<T, N, M, Mem, ND>::build(const Selection<N, M>& sel, const Selection<ND, M>& dsel,
                                         const Index<M>* extent, Backend backend) {
  const Comm& comm = comm_;
  const Distribution<N>& from = from_;
  const Distribution<ND>& to = to_;
  const char* fn = fn_.c_str();
  const int p = comm.size(), me = comm.rank();
  // What each rank knows, gathered in one collective:
  // [has_from, has_to, from_comm_size, to_comm_size, from shape, lo, hi (N each),
  //  to shape, lo, hi (ND each), start, step, map (N each), destination start, step, map (ND each),
  //  extent (M), extent given]
  constexpr int L = 4 + 3 * N + 3 * ND + 3 * N + 3 * ND + M + 1;
  enum : int { F_SHAPE = 4, F_LO = F_SHAPE + N, F_HI = F_LO + N, T_SHAPE = F_HI + N };
  enum : int { T_LO = T_SHAPE + ND, T_HI = T_LO + ND, S_START = T_HI + ND, S_STEP = S_START + N, S_MAP = S_STEP + N };
  enum : int {
    D_START = S_MAP + N,
    D_STEP = D_START + ND,
    D_MAP = D_STEP + ND,
    J_EXT = D_MAP + ND,
    J_GIVEN = J_EXT + M
  };
  std::array<index_t, L> mine{};
  mine[0] = from.is_null() ? 0 : 1;
  mine[1] = to.is_null() ? 0 : 1;
  if (!from.is_null()) {
    mine[2] = from.comm().size();
    for (int a = 0; a < N; ++a) {
      mine[F_SHAPE + a] = from.shape()[a];
      mine[F_LO + a] = from.owned().lo[a];
      mine[F_HI + a] = from.owned().hi[a];
    }
  }
  if (!to.is_null()) {
    mine[3] = to.comm().size();
    for (int b = 0; b < ND; ++b) {
      mine[T_SHAPE + b] = to.shape()[b];
      mine[T_LO + b] = to.owned().lo[b];
      mine[T_HI + b] = to.owned().hi[b];
    }
  }
  for (int a = 0; a < N; ++a) {
    mine[S_START + a] = sel.start[a];
    mine[S_STEP + a] = sel.step[a];
    mine[S_MAP + a] = sel.map[a];
  }
  for (int b = 0; b < ND; ++b) {
    mine[D_START + b] = dsel.start[b];
    mine[D_STEP + b] = dsel.step[b];
    mine[D_MAP + b] = dsel.map[b];
  }
  if (extent)
    for (int k = 0; k < M; ++k) mine[J_EXT + k] = (*extent)[k];
  mine[J_GIVEN] = extent ? 1 : 0;
  const std::vector<index_t> all = comm.allgather(mine.data(), L);
  auto at = [&](int r, int field) { return all[static_cast<std::size_t>(r) * L + field]; };
  auto src_box = [&](int r) { return box_from<N>(&all[static_cast<std::size_t>(r) * L + F_LO]); };
  auto dst_parent_box = [&](int r) { return box_from<ND>(&all[static_cast<std::size_t>(r) * L + T_LO]); };

  // ---- validation: every rank sees the same gathered data, so every rank reaches the same verdict
  int nfrom = 0, nto = 0, first_from = -1, first_to = -1;
  std::string err;
  for (int r = 0; r < p; ++r) {
    if (at(r, 0)) {
      ++nfrom;
      if (first_from < 0) first_from = r;
    }
    if (at(r, 1)) {
      ++nto;
      if (first_to < 0) first_to = r;
    }
  }
  Index<N> sshape{};
  Index<ND> dshape{};
  Index<M> jshape{};
  if (first_from < 0 || first_to < 0) {
    err = str(fn, ": no rank of the communicator (", p, " ranks) holds the ", first_from < 0 ? "source" : "destination",
              " distribution");
  } else {
    for (int a = 0; a < N; ++a) sshape[a] = at(first_from, F_SHAPE + a);
    for (int b = 0; b < ND; ++b) dshape[b] = at(first_to, T_SHAPE + b);
    for (int k = 0; k < M; ++k) jshape[k] = extent ? (*extent)[k] : dshape[k];
    for (int r = 0; r < p && err.empty(); ++r) {
      for (int f = S_START; f < L; ++f)
        if (at(r, f) != at(0, f)) err = str(fn, ": rank ", r, " passed another selection than rank 0");
      if (at(r, 0)) {
        if (at(r, 2) != nfrom)
          err = str(fn, ": the source distribution's communicator has ", at(r, 2), " ranks but ", nfrom,
                    " ranks of the transfer communicator hold it");
        for (int a = 0; a < N; ++a)
          if (at(r, F_SHAPE + a) != sshape[a]) err = str(fn, ": ranks disagree on the source shape");
      }
      if (at(r, 1)) {
        if (nto % at(r, 3) != 0)
          err = str(fn, ": the destination distribution's communicator has ", at(r, 3), " ranks but ", nto,
                    " ranks of the transfer communicator hold it (or a replica of it)");
        for (int b = 0; b < ND; ++b)
          if (at(r, T_SHAPE + b) != dshape[b]) err = str(fn, ": ranks disagree on the destination shape");
      }
    }
  }
  // A selection s of an R-d array of `shape` over the destination index box [0, jshape): steps
  // nonzero, maps in range, every destination axis fed once, every index read inside the shape.
  auto check_selection = [&](const auto& s, const auto& shape, const char* role) {
    constexpr int R = static_cast<int>(std::tuple_size<std::decay_t<decltype(shape)>>::value);
    std::array<int, M> fed{};
    for (int a = 0; a < R && err.empty(); ++a) {
      const int k = s.map[a];
      if (k >= 0 && k < M && s.step[a] == 0) {
        err = str(fn, ": ", role, " selection ", s.describe(), " has step 0 along ", role, " axis ", a);
        break;
      }
      if (k < -1 || k >= M) {
        err = str(fn, ": ", role, " selection ", s.describe(), " maps ", role, " axis ", a, " to ", k,
                  ", not to -1 or 0..", M - 1);
        break;
      }
      if (k >= 0) ++fed[k];
      bool ok = true;
      if (k < 0)
        ok = s.start[a] >= 0 && s.start[a] < shape[a];
      else if (jshape[k] > 0) {
        const index_t last = s.start[a] + s.step[a] * (jshape[k] - 1);
        ok = s.start[a] >= 0 && s.start[a] < shape[a] && last >= 0 && last < shape[a];
      }
      if (!ok) {
        err = !extent && N == M && role[0] == 's'
                  ? str(fn, ": source shape ", shape_str(sshape), " and destination shape ", shape_str(dshape),
                        " do not match (selection ", sel.describe(), ", source axis ", a, ")")
                  : str(fn, ": ", role, " selection ", s.describe(), " of extent ", shape_str(jshape),
                        " reaches outside ", role, " shape ", shape_str(shape), " along ", role, " axis ", a);
        break;
      }
    }
    for (int k = 0; k < M && err.empty(); ++k)
      if (fed[k] != 1)
        err = str(fn, ": ", role, " selection ", s.describe(), " feeds destination axis ", k, " from ", fed[k], " ",
                  role, " axes (must be exactly one)");
  };
  if (err.empty()) check_selection(sel, sshape, "source");
  if (err.empty() && extent) check_selection(dsel, dshape, "destination");
  if (!err.empty()) throw Error(err, true);

  // ---- geometry: one box of destination indices per ordered pair of ranks
  backend_ = resolve_backend<Mem>(comm, backend, fn);
  staged_ = backend_ == Backend::mpi && !host_accessible<Mem>() && !mpi_cuda_aware();
  tag_ = comm.reserve_tags(1);
  for (int a = 0; a < N; ++a) {
    coef_[a] = sel.map[a] < 0 ? 0 : static_cast<int>(sel.step[a]);
    axis_[a] = sel.map[a] < 0 ? 0 : sel.map[a];
  }
  for (int b = 0; b < ND; ++b) {
    dcoef_[b] = dsel.map[b] < 0 ? 0 : static_cast<int>(dsel.step[b]);
    daxis_[b] = dsel.map[b] < 0 ? 0 : dsel.map[b];
  }
  const Box<M> whole{Index<M>{}, jshape};
  // The destination indices rank r owns: those whose destination index dsel(j) it owns.
  auto dst_box = [&](int r) { return selection_intersect(dsel, dst_parent_box(r), whole); };
  // sb, db: the owned boxes (source, destination array) of the ranks that hold the segment.
  auto segment = [&](const Box<M>& j, const Box<N>& sb, const Box<ND>& db, index_t offset) {
    seg_t g{};
    for (int a = 0; a < N; ++a) {
      const int k = sel.map[a];
      const index_t i = k < 0 ? sel.start[a] : sel.start[a] + sel.step[a] * j.lo[k];
      g.src[a] = from_.is_null() ? 0 : static_cast<int>(i - sb.lo[a] + from_.halo()[a]);
    }
    for (int b = 0; b < ND; ++b) {
      const int k = dsel.map[b];
      const index_t i = k < 0 ? dsel.start[b] : dsel.start[b] + dsel.step[b] * j.lo[k];
      g.dst[b] = to_.is_null() ? 0 : static_cast<int>(i - db.lo[b] + to_.halo()[b]);
    }
    for (int k = 0; k < M; ++k) g.ext[k] = static_cast<int>(j.extent(k));
    g.offset = offset;
    g.count = j.size();
    return g;
  };
  index_t biggest = 0;
  if (!from.is_null()) {
    const Box<N> mine_src = from.owned();
    for (int q = 0; q < p; ++q) {
      if (!at(q, 1)) continue;
      const Box<M> j = selection_intersect(sel, mine_src, dst_box(q));
      if (j.size() == 0) continue;
      if (q == me) {
        self_ = segment(j, mine_src, to.owned(), 0);
        continue;
      }
      send_segs_host_.push_back(segment(j, mine_src, dst_parent_box(q), send_total_));
      sends_.push_back(Peer{q, send_total_, j.size()});
      send_total_ += j.size();
      biggest = std::max(biggest, j.size());
    }
  }
  if (!to.is_null()) {
    const Box<M> mine_dst = dst_box(me);
    for (int r = 0; r < p; ++r) {
      if (!at(r, 0) || r == me) continue;
      const Box<M> j = selection_intersect(sel, src_box(r), mine_dst);
      if (j.size() == 0) continue;
      recv_segs_host_.push_back(segment(j, src_box(r), to.owned(), recv_total_));
      recvs_.push_back(Peer{r, recv_total_, j.size()});
      recv_total_ += j.size();
    }
  }
  // Every pair's box is seen by both ends, so the sender alone may judge the size.
  comm.check(biggest * static_cast<index_t>(sizeof(T)) <= INT_MAX,
             str(fn, ": a message of ", biggest, " elements is larger than MPI's int count of bytes"));
  if (self_.count > 0) self_segs_host_.push_back(self_);
  self_segs_ = upload(self_segs_host_, "spmd::redistribute::self_segment");
  send_segs_ = upload(send_segs_host_, "spmd::redistribute::send_segments");
  recv_segs_ = upload(recv_segs_host_, "spmd::redistribute::recv_segments");
  auto alloc = [](const char* label, index_t n) {
    return buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), static_cast<std::size_t>(n));
  };
  send_buf_ = alloc("spmd::redistribute::send_buffer", send_total_);
  recv_buf_ = alloc("spmd::redistribute::recv_buffer", recv_total_);
  if (staged_) {
    send_host_ = Kokkos::View<T*, staging>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::redistribute::send_staging")),
        static_cast<std::size_t>(send_total_));
    recv_host_ = Kokkos::View<T*, staging>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::redistribute::recv_staging")),
        static_cast<std::size_t>(recv_total_));
  }
  requests_.reserve(sends_.size() + recvs_.size());
  p2p_send_.reserve(sends_.size());
  p2p_recv_.reserve(recvs_.size());
}

template <class T, int N, int M, class Mem, int ND>
Kokkos::View<RegionSegment<N, M, ND>*, Mem> RegionPlan<T, N, M, Mem, ND>::upload(const std::vector<seg_t>& v,
                                                                                 const char* label) {
  Kokkos::View<seg_t*, Mem> dev(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.size());
  auto host = Kokkos::create_mirror_view(dev);
  for (std::size_t i = 0; i < v.size(); ++i) host(i) = v[i];
  Kokkos::deep_copy(dev, host);
  return dev;
}

template <class T, int N, int M, class Mem, int ND>
template <RegionOp Op>
void RegionPlan<T, N, M, Mem, ND>::run(const std::vector<seg_t>& host_segs, const Kokkos::View<const seg_t*, Mem>& segs,
                                       index_t total, const src_view& s, const dst_view& d, const buffer& buf,
                                       const char* label) const {
  if (total == 0) return;
  using Move = RegionMove<src_view, dst_view, N, M, Op, ND>;
  const Move mv{s, d, buf, coef_, axis_, dcoef_, daxis_};
  const execution_space exec;
  if constexpr (host_accessible<typename execution_space::memory_space>()) {
    if (!flat_) {
      for (const auto& g : host_segs) {
        RegionCopyBox<Move, N, M> k{mv, g, {}};
        std::array<int, M> ext{};
        index_t st = 1;
        for (int dd = M - 1; dd >= 0; --dd) {
          k.stride[dd] = st;
          st *= g.ext[dd];
          ext[dd] = g.ext[dd];
        }
        Kokkos::parallel_for(label, nd_policy<M>(exec, ext), k);
      }
      return;
    }
  }
  RegionCopyFlat<Move, N, M> k{mv, segs, static_cast<int>(host_segs.size())};
  Kokkos::parallel_for(label, Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_t>>(exec, 0, total), k);
}

template <class T, int N, int M, class Mem, int ND>
void RegionPlan<T, N, M, Mem, ND>::apply(const src_array& src, const dst_array& dst) const {
  const char* fn = fn_.c_str();
  if (!from_.is_null() && src.distribution() != from_)
    throw Error(str(fn_, ": source array '", src.label(), "' has distribution (",
                    src.is_null() ? std::string("null") : src.distribution().describe(),
                    ") but the plan was built for (", from_.describe(), ")"),
                true);
  if (!to_.is_null() && dst.distribution() != to_)
    throw Error(str(fn_, ": destination array '", dst.label(), "' has distribution (",
                    dst.is_null() ? std::string("null") : dst.distribution().describe(),
                    ") but the plan was built for (", to_.describe(), ")"),
                true);
  const src_view s = src.local_with_halo();
  const dst_view d = dst.local_with_halo();
  const execution_space exec;
  const bool nccl = backend_ == Backend::nccl;
  // ---- post receives (MPI), pack, send
  requests_.clear();
  MPI_Comm raw = comm_.raw();
  constexpr int unit = static_cast<int>(sizeof(T));
  if (!nccl) {
    char* rbase = reinterpret_cast<char*>(staged_ ? recv_host_.data() : recv_buf_.data());
    for (const auto& m : recvs_) {
      MPI_Request r;
      SPMD_MPI_CHECK(
          MPI_Irecv(rbase + m.offset * unit, static_cast<int>(m.count) * unit, MPI_BYTE, m.rank, tag_, raw, &r), fn);
      requests_.push_back(r);
    }
  }
  run<RegionOp::pack>(send_segs_host_, send_segs_, send_total_, s, d, send_buf_, "spmd::redistribute::pack");
  if (nccl) {
    p2p_send_.clear();
    p2p_recv_.clear();
    for (const auto& m : recvs_)
      p2p_recv_.push_back({recv_buf_.data() + m.offset, static_cast<std::size_t>(m.count) * sizeof(T), m.rank});
    for (const auto& m : sends_)
      p2p_send_.push_back({send_buf_.data() + m.offset, static_cast<std::size_t>(m.count) * sizeof(T), m.rank});
    nccl_exchange(comm_, stream_of(exec), p2p_send_.data(), static_cast<int>(p2p_send_.size()), p2p_recv_.data(),
                  static_cast<int>(p2p_recv_.size()));
  } else {
    if (staged_ && send_total_ > 0)
      Kokkos::deep_copy(exec, range(send_host_, 0, send_total_), range(send_buf_, 0, send_total_));
    fence(exec, "spmd::redistribute::apply before MPI_Isend");
    char* sbase = reinterpret_cast<char*>(staged_ ? send_host_.data() : send_buf_.data());
    for (const auto& m : sends_) {
      MPI_Request r;
      SPMD_MPI_CHECK(
          MPI_Isend(sbase + m.offset * unit, static_cast<int>(m.count) * unit, MPI_BYTE, m.rank, tag_, raw, &r), fn);
      requests_.push_back(r);
    }
  }
  // ---- this rank's own part, while messages travel: directly, or through a buffer when the
  // source and destination storage overlap
  if (self_.count > 0) {
    const T* s0 = s.data();
    const T* s1 = s0 + s.span();
    const T* d0 = d.data();
    const T* d1 = d0 + d.span();
    if (s0 < d1 && d0 < s1) {
      if (static_cast<index_t>(self_buf_.extent(0)) < self_.count)
        self_buf_ = buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::redistribute::self")),
                           static_cast<std::size_t>(self_.count));
      run<RegionOp::pack>(self_segs_host_, self_segs_, self_.count, s, d, self_buf_, "spmd::redistribute::pack_self");
      run<RegionOp::unpack>(self_segs_host_, self_segs_, self_.count, s, d, self_buf_,
                            "spmd::redistribute::unpack_self");
    } else {
      run<RegionOp::direct>(self_segs_host_, self_segs_, self_.count, s, d, buffer(), "spmd::redistribute::copy_self");
    }
  }
  // ---- receive, unpack
  const int nr = nccl ? 0 : static_cast<int>(recvs_.size());
  if (!nccl) {
    SPMD_MPI_CHECK(MPI_Waitall(nr, requests_.data(), MPI_STATUSES_IGNORE), fn);
    if (staged_ && recv_total_ > 0)
      Kokkos::deep_copy(exec, range(recv_buf_, 0, recv_total_), range(recv_host_, 0, recv_total_));
  }
  run<RegionOp::unpack>(recv_segs_host_, recv_segs_, recv_total_, s, d, recv_buf_, "spmd::redistribute::unpack");
  if (!nccl)
    SPMD_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()) - nr, requests_.data() + nr, MPI_STATUSES_IGNORE),
                   fn);
  fence(exec, "spmd::redistribute::apply after unpack");
}

}  // namespace impl

/// A reusable plan copying arrays from one distribution to another of the same global shape
/// (other process grid, halo widths, or a sub-communicator).
template <class T, int N, class Mem = DefaultMemorySpace>
class Redistribution {
 public:
  /// Plan over `from`'s communicator. On ranks outside `to`'s sub-communicator pass a null
  /// Distribution<N>() as `to`. Collective over from.comm(); throws the same spmd::Error on every
  /// rank when the global shapes differ.
  Redistribution(const Distribution<N>& from, const Distribution<N>& to, Backend backend = Backend::automatic)
      : plan_(from, impl::Selection<N, N>::identity(), to, backend, "spmd::Redistribution") {}
  /// Plan over `comm`, of which the communicators of `from` and `to` are sub-communicators
  /// (either may be null on ranks outside it). Collective over `comm`.
  Redistribution(const Comm& comm, const Distribution<N>& from, const Distribution<N>& to,
                 Backend backend = Backend::automatic)
      : plan_(comm, from, impl::Selection<N, N>::identity(), to, backend, "spmd::Redistribution") {}
  /// Copy the owned points of `src` into the owned points of `dst` (halos untouched). Either may
  /// be a null Array on ranks that do not hold its distribution. Collective.
  void apply(const Array<T, N, Mem>& src, const Array<T, N, Mem>& dst) const { plan_.apply(src, dst); }
  /// The underlying plan (message counts, backend). Local.
  const impl::RegionPlan<T, N, N, Mem>& plan() const { return plan_; }

 private:
  impl::RegionPlan<T, N, N, Mem> plan_;
};

/// dst = src where the two have the same global shape and any distributions; builds a plan and
/// applies it once (keep a Redistribution to repeat). Every rank of src's communicator calls it;
/// ranks outside dst's sub-communicator pass a null Array as dst. Collective.
template <class T, int N, class Mem>
void redistribute(const Array<T, N, Mem>& src, const Array<T, N, Mem>& dst) {
  Redistribution<T, N, Mem>(src.distribution(), dst.distribution()).apply(src, dst);
}

/// The transpose of a 2-D array (a.T in NumPy): shape (n1, n0), on an automatic process grid of
/// a's communicator, halo widths swapped (halos zero). Collective.
template <class T, class Mem>
Array<T, 2, Mem> transpose(const Array<T, 2, Mem>& a) {
  impl::DistributionOptions opts;
  opts.halo = {a.halo()[1], a.halo()[0]};
  const Distribution<2> to(a.comm(), Index<2>{a.extent(1), a.extent(0)}, opts);
  Array<T, 2, Mem> out(to, "spmd::transpose");
  impl::Selection<2, 2> sel;
  sel.start = {0, 0};
  sel.step = {1, 1};
  sel.map = {1, 0};  // source axis 0 is destination axis 1 and vice versa
  impl::RegionPlan<T, 2, 2, Mem>(a.distribution(), sel, to, Backend::automatic, "spmd::transpose").apply(a, out);
  return out;
}

}  // namespace spmd
