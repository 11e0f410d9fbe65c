#pragma once
// spmd::impl::RegionPlan: copies an affine selection of a source array (NumPy slices with steps,
// dropped axes, permuted axes) into a destination array, or into an affine selection of one, on
// any other distribution: the plan behind spmd::Redistribution, spmd::transpose, slices assigned
// across distributions, the operands expressions move, and spmd::gather / scatter.
//
// How a plan is made (collective over the transfer communicator, once):
//   1. every rank contributes, in ONE MPI_Allgather, the source and destination shapes, the
//      boxes it owns in each (if it holds that distribution at all) and the selections;
//   2. every rank validates the gathered description alike (so errors are agreed without
//      another collective) and, for each peer, intersects its own source box with the peer's
//      destination box (what it sends) and the peer's source box with its own destination box
//      (what it receives). Along each axis the destination indices j whose source index
//      start + step * j falls into a block form one interval, computed exactly (floor/ceil
//      division; negative steps included), so each pair of ranks exchanges one box of the
//      destination index space, in row-major order of that box: ONE message per peer;
//   3. the message plan (impl/messages.hpp) and the segment tables (impl/box_copy.hpp) of the
//      one communication engine are made here.
// apply() then allocates nothing: it packs every outgoing box in one kernel, starts the
// messages, copies this rank's own part directly (source to destination, or through a buffer
// when the two share storage), waits, and unpacks in one kernel. Only owned points move: halos
// are neither read nor written.
//
// Sub-communicators: the destination (or the source) distribution may live on a sub-communicator
// (Comm::split) of the transfer communicator. The plan is collective over the transfer
// communicator (the source's by default); a rank outside the destination's sub-communicator
// passes a null Distribution (and a null Array to apply()): it sends its source data and receives
// nothing. Ranks are matched through the transfer communicator, so the sub-communicator's rank
// order does not matter. The destination may be replicated: several disjoint sub-communicators
// each hold a distribution of the destination shape (one per process row, say), and each replica
// receives all the data (blas.hpp's gemv broadcasts x that way; spmd::allgather uses one replica
// per rank).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/box_copy.hpp"
#include "spmd/impl/messages.hpp"
#include "spmd/impl/selection.hpp"

namespace spmd::impl {

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

  /// dst = sel(src) over the owned points of dst, on `exec`. src (dst) must be on the plan's
  /// source (destination) distribution, or null on ranks that hold none. src and dst may share
  /// storage. Collective over the plan's communicator.
  void apply(const execution_space& exec, const dst_array& dst, const src_array& src) const;
  void apply(const dst_array& dst, const src_array& src) const { apply(execution_space(), dst, src); }

  /// Local queries.
  const Comm& comm() const { return comm_; }
  Backend backend() const { return msgs_->backend(); }
  bool staged() const { return msgs_->staged(); }
  /// Messages this rank sends / receives per apply (its own part is no message).
  int num_sends() const { return static_cast<int>(msgs_->sends().size()); }
  int num_recvs() const { return static_cast<int>(msgs_->recvs().size()); }
  /// Points this rank sends to other ranks / copies within itself per apply.
  index_t send_points() const { return msgs_->send_total(); }
  index_t local_points() const { return self_.total(); }

 private:
  void build(const Selection<N, M>& sel, const Selection<ND, M>& dsel, const Index<M>* extent, Backend backend);

  Comm comm_;
  Distribution<N> from_;
  Distribution<ND> to_;
  std::string fn_;
  std::optional<MessagePlan<T, Mem>> msgs_;
  BoxCopies<T, M, Mem> pack_, unpack_, self_;
  mutable Kokkos::View<T*, Mem> self_buf_;  // made on the first apply whose src and dst share storage
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
  if (!err.empty()) throw Error::replicated(err);

  // ---- geometry: one box of destination indices per ordered pair of ranks
  Kokkos::Array<index_t, N> sstride{};
  Kokkos::Array<index_t, ND> dstride{};
  if (!from_.is_null()) sstride = strides_of<N>(from_.local_extents_with_halo());
  if (!to_.is_null()) dstride = strides_of<ND>(to_.local_extents_with_halo());
  // Per destination axis k, the element step on each side: a sum over the axes it feeds.
  Kokkos::Array<index_t, M> scoef{}, dcoef{};
  for (int a = 0; a < N; ++a)
    if (sel.map[a] >= 0) scoef[sel.map[a]] += sel.step[a] * sstride[a];
  for (int b = 0; b < ND; ++b)
    if (dsel.map[b] >= 0) dcoef[dsel.map[b]] += dsel.step[b] * dstride[b];
  const Box<M> whole{Index<M>{}, jshape};
  // The destination indices rank r owns: those whose destination index dsel(j) it owns.
  auto dst_box = [&](int r) { return selection_intersect(dsel, dst_parent_box(r), whole); };
  // The segment of destination box j; sb, db: the owned boxes (source, destination array) of the
  // ranks that hold the segment.
  auto segment = [&](const Box<M>& j, const Box<N>& sb, const Box<ND>& db, index_t offset) {
    CopySegment<M> g{};
    for (int a = 0; a < N && !from_.is_null(); ++a) {
      const int k = sel.map[a];
      const index_t i = k < 0 ? sel.start[a] : sel.start[a] + sel.step[a] * j.lo[k];
      g.src += (i - sb.lo[a] + from_.halo()[a]) * sstride[a];
    }
    for (int b = 0; b < ND && !to_.is_null(); ++b) {
      const int k = dsel.map[b];
      const index_t i = k < 0 ? dsel.start[b] : dsel.start[b] + dsel.step[b] * j.lo[k];
      g.dst += (i - db.lo[b] + to_.halo()[b]) * dstride[b];
    }
    for (int k = 0; k < M; ++k) g.ext[k] = static_cast<int>(j.extent(k));
    g.offset = offset;
    g.count = j.size();
    return g;
  };
  std::vector<Message> sends, recvs;
  std::vector<CopySegment<M>> pack, unpack, self;
  index_t send_total = 0, recv_total = 0;
  if (!from.is_null()) {
    const Box<N> mine_src = from.owned();
    for (int q = 0; q < p; ++q) {
      if (!at(q, 1)) continue;
      const Box<M> j = selection_intersect(sel, mine_src, dst_box(q));
      if (j.size() == 0) continue;
      if (q == me) {
        self.push_back(segment(j, mine_src, to.owned(), 0));
        continue;
      }
      pack.push_back(segment(j, mine_src, dst_parent_box(q), send_total));
      sends.push_back(Message{q, send_total, j.size()});
      send_total += j.size();
    }
  }
  if (!to.is_null()) {
    const Box<M> mine_dst = dst_box(me);
    for (int r = 0; r < p; ++r) {
      if (!at(r, 0) || r == me) continue;
      const Box<M> j = selection_intersect(sel, src_box(r), mine_dst);
      if (j.size() == 0) continue;
      unpack.push_back(segment(j, src_box(r), to.owned(), recv_total));
      recvs.push_back(Message{r, recv_total, j.size()});
      recv_total += j.size();
    }
  }
  msgs_.emplace(comm, std::move(sends), send_total, std::move(recvs), recv_total, backend, fn, "spmd::redistribute");
  pack_ = BoxCopies<T, M, Mem>(std::move(pack), scoef, dcoef, "spmd::redistribute::pack_segments");
  unpack_ = BoxCopies<T, M, Mem>(std::move(unpack), scoef, dcoef, "spmd::redistribute::unpack_segments");
  self_ = BoxCopies<T, M, Mem>(std::move(self), scoef, dcoef, "spmd::redistribute::self_segments");
}

template <class T, int N, int M, class Mem, int ND>
void RegionPlan<T, N, M, Mem, ND>::apply(const execution_space& exec, const dst_array& dst,
                                         const src_array& src) const {
  if (!from_.is_null() && src.distribution() != from_)
    throw Error::replicated(str(fn_, ": source array '", src.label(), "' has distribution (",
                                src.is_null() ? std::string("null") : src.distribution().describe(),
                                ") but the plan was built for (", from_.describe(), ")"));
  if (!to_.is_null() && dst.distribution() != to_)
    throw Error::replicated(str(fn_, ": destination array '", dst.label(), "' has distribution (",
                                dst.is_null() ? std::string("null") : dst.distribution().describe(),
                                ") but the plan was built for (", to_.describe(), ")"));
  FieldPtrs<const T> s{};
  FieldPtrs<T> d{};
  s[0] = src.local_with_halo().data();
  d[0] = dst.local_with_halo().data();
  pack_.pack(exec, "spmd::redistribute::pack", s, 1, msgs_->send_buffer());
  msgs_->start(exec);
  // This rank's own part, while the messages travel: directly, or through a buffer when the
  // source and destination storage overlap.
  if (self_.total() > 0) {
    const auto& sv = src.local_with_halo();
    const auto& dv = dst.local_with_halo();
    const T* s0 = sv.data();
    const T* s1 = s0 + sv.span();
    const T* d0 = dv.data();
    const T* d1 = d0 + dv.span();
    if (s0 < d1 && d0 < s1) {
      if (static_cast<index_t>(self_buf_.extent(0)) < self_.total())
        self_buf_ = Kokkos::View<T*, Mem>(
            Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::redistribute::self")),
            static_cast<std::size_t>(self_.total()));
      self_.pack(exec, "spmd::redistribute::pack_self", s, 1, self_buf_.data());
      self_.unpack(exec, "spmd::redistribute::unpack_self", self_buf_.data(), d, 1);
    } else {
      self_.direct(exec, "spmd::redistribute::copy_self", s, d, 1);
    }
  }
  msgs_->wait_receives(exec);
  unpack_.unpack(exec, "spmd::redistribute::unpack", msgs_->recv_buffer(), d, 1);
  msgs_->wait_sends();
}

}  // namespace spmd::impl
