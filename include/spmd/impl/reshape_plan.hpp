#pragma once
// spmd::impl::ReshapePlan: moves the elements of an N-d array into an M-d array of the same size
// in C (row-major) order, element f of the flattened source going to element f of the flattened
// destination: the plan behind spmd::reshape and spmd::ravel. It runs on the communication
// engine (impl/messages.hpp, impl/box_copy.hpp): one message per pair of ranks that share
// elements, one pack kernel, one unpack kernel, one kernel for this rank's own part.
//
// Why not RegionPlan: a reshape is not an affine selection of boxes (a block of the new shape is,
// in flat order, a union of runs of the old one), so the plan works on runs instead. A run is a
// piece of one row (last axis) of a rank's source block that, in flat order, also lies in one row
// of one destination block: contiguous in both storages (LayoutRight; halos only pad between
// rows). Each sender walks the rows of its source block and cuts them where the destination owner
// or the destination row changes; each receiver walks the rows of its destination block and cuts
// them where the source owner or row changes. Both sides list a pair's elements in increasing flat
// order, so the sender's packed order is the receiver's unpacked order, whatever the two cuts.
// Runs adjacent in a storage (no halo, whole rows) merge, so reshaping blocks of whole rows makes
// few runs; the table holds one entry per run (a 1-D segment of the engine's box copies).
//
// Building is local (host loops over the rows of this rank's blocks, no collective besides the
// message plan's own: its largest-message agreement and the backend). Only owned points move:
// halos are neither read nor written.

#include <Kokkos_Core.hpp>

#include <climits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/box_copy.hpp"
#include "spmd/impl/messages.hpp"
#include "spmd/impl/profiling.hpp"

namespace spmd::impl {

/// One run: `n` elements at storage element `src` (source side) and `dst` (destination side).
struct ReshapeRun {
  index_t src;
  index_t dst;
  index_t n;
};

/// Appends a run to `runs`, merged with the last one when it continues it on the sides that
/// matter (`src_side`, `dst_side`: a buffer side is always contiguous).
inline void add_run(std::vector<ReshapeRun>& runs, index_t src, index_t dst, index_t n, bool src_side, bool dst_side) {
  if (!runs.empty()) {
    ReshapeRun& l = runs.back();
    if ((!src_side || l.src + l.n == src) && (!dst_side || l.dst + l.n == dst) && l.n + n <= INT_MAX) {
      l.n += n;
      return;
    }
  }
  runs.push_back(ReshapeRun{src, dst, n});
}

/// The C-order flat index of global index i of `shape`.
template <int R>
index_t flat_index(const Index<R>& shape, const Index<R>& i) {
  index_t f = 0;
  for (int d = 0; d < R; ++d) f = f * shape[d] + i[d];
  return f;
}

/// The storage element (halo included) of owned global index i of a rank whose owned box is b.
template <int R>
index_t storage_offset(const Distribution<R>& d, const Box<R>& b, const Index<R>& i) {
  const auto ext = d.local_extents_with_halo();
  index_t off = 0;
  for (int a = 0; a < R; ++a) off = off * ext[a] + (i[a] - b.lo[a] + d.halo()[a]);
  return off;
}

/// Calls f(row start) for every row (all axes but the last fixed, the last at b.lo) of box b,
/// in row-major order.
template <int R, class F>
void for_each_row(const Box<R>& b, const F& f) {
  if (b.size() == 0) return;
  Index<R> i = b.lo;
  while (true) {
    f(i);
    int a = R - 2;
    for (; a >= 0; --a) {
      if (++i[a] < b.hi[a]) break;
      i[a] = b.lo[a];
    }
    if (a < 0) return;
  }
}

/// Cuts the flat range [f0, f0 + len) at the block and row boundaries of distribution `d` (of
/// another rank than the range's, possibly): calls f(owner, first flat index, count, global index
/// of the first element in d's shape, the owner's box) for each piece, in order.
template <int R, class F>
void for_each_piece(const Distribution<R>& d, index_t f0, index_t len, const F& f) {
  const auto& shape = d.shape();
  const auto& dims = d.dims();
  index_t at = f0;
  const index_t end = f0 + len;
  while (at < end) {
    Index<R> i{};
    index_t r = at;
    for (int a = R - 1; a >= 0; --a) {
      i[a] = r % shape[a];
      r /= shape[a];
    }
    std::array<int, R> c{};
    Box<R> b{};
    for (int a = 0; a < R; ++a) {
      c[a] = block_of(shape[a], dims[a], i[a]);
      b.lo[a] = block_start(shape[a], dims[a], c[a]);
      b.hi[a] = b.lo[a] + block_extent(shape[a], dims[a], c[a]);
    }
    const index_t n = std::min(end - at, b.hi[R - 1] - i[R - 1]);
    f(d.rank_of(c), at, n, i, b);
    at += n;
  }
}

/// The plan: dst (M-d) = src (N-d) in C order; both of one size, on communicators of one size
/// whose rank numbers agree (the caller checks). See the file comment.
template <class T, int N, int M, class Mem>
class ReshapePlan {
 public:
  using execution_space = typename Mem::execution_space;

  /// Plan from `from` to `to`, messages over from's communicator. Collective over it.
  ReshapePlan(const Distribution<N>& from, const Distribution<M>& to, const char* fn) : from_(from), to_(to) {
    const Comm& comm = from.comm();
    const int p = comm.size(), me = comm.rank();
    std::vector<std::vector<ReshapeRun>> sends(static_cast<std::size_t>(p)), recvs(static_cast<std::size_t>(p));
    std::vector<ReshapeRun> self;
    const Box<N> sb = from.owned();
    const Box<M> db = to.owned();
    const index_t srow = sb.size() > 0 ? sb.extent(N - 1) : 0;
    const index_t drow = db.size() > 0 ? db.extent(M - 1) : 0;
    // Sender side: my source rows, cut by destination block and row.
    for_each_row<N>(sb, [&](const Index<N>& i) {
      const index_t f0 = flat_index<N>(from.shape(), i);
      const index_t s0 = storage_offset<N>(from, sb, i);
      for_each_piece<M>(to, f0, srow, [&](int q, index_t f, index_t n, const Index<M>& j, const Box<M>& qb) {
        const index_t s = s0 + (f - f0);
        if (q == me)
          add_run(self, s, storage_offset<M>(to, qb, j), n, true, true);
        else
          add_run(sends[static_cast<std::size_t>(q)], s, 0, n, true, false);
      });
    });
    // Receiver side: my destination rows, cut by source block and row.
    for_each_row<M>(db, [&](const Index<M>& j) {
      const index_t f0 = flat_index<M>(to.shape(), j);
      const index_t d0 = storage_offset<M>(to, db, j);
      for_each_piece<N>(from, f0, drow, [&](int r, index_t f, index_t n, const Index<N>&, const Box<N>&) {
        if (r != me) add_run(recvs[static_cast<std::size_t>(r)], 0, d0 + (f - f0), n, false, true);
      });
    });
    std::vector<Message> smsg, rmsg;
    std::vector<CopySegment<1>> pack, unpack, own;
    index_t stotal = 0, rtotal = 0, ototal = 0;
    auto segment = [](const ReshapeRun& u, index_t offset) {
      CopySegment<1> g{};
      g.ext[0] = static_cast<int>(u.n);
      g.src = u.src;
      g.dst = u.dst;
      g.offset = offset;
      g.count = u.n;
      return g;
    };
    for (int q = 0; q < p; ++q) {
      index_t count = 0;
      for (const auto& u : sends[static_cast<std::size_t>(q)]) {
        pack.push_back(segment(u, stotal + count));
        count += u.n;
      }
      if (count > 0) smsg.push_back(Message{q, stotal, count});
      stotal += count;
      count = 0;
      for (const auto& u : recvs[static_cast<std::size_t>(q)]) {
        unpack.push_back(segment(u, rtotal + count));
        count += u.n;
      }
      if (count > 0) rmsg.push_back(Message{q, rtotal, count});
      rtotal += count;
    }
    for (const auto& u : self) {
      own.push_back(segment(u, ototal));
      ototal += u.n;
    }
    const Kokkos::Array<index_t, 1> unit{{1}};
    msgs_.emplace(comm, std::move(smsg), stotal, std::move(rmsg), rtotal, Backend::automatic, fn, "spmd::reshape");
    pack_ = BoxCopies<T, 1, Mem>(std::move(pack), unit, unit, "spmd::reshape::pack_segments");
    unpack_ = BoxCopies<T, 1, Mem>(std::move(unpack), unit, unit, "spmd::reshape::unpack_segments");
    self_ = BoxCopies<T, 1, Mem>(std::move(own), unit, unit, "spmd::reshape::self_segments");
  }
  ReshapePlan(const ReshapePlan&) = delete;
  ReshapePlan& operator=(const ReshapePlan&) = delete;

  /// dst = src in C order, on `exec` (dst on the plan's destination distribution, src on its
  /// source one; they must not share storage). Collective.
  void apply(const execution_space& exec, const Array<T, M, Mem>& dst, const Array<T, N, Mem>& src) const {
    FieldPtrs<const T> s{};
    FieldPtrs<T> d{};
    s[0] = src.local_with_halo().data();
    d[0] = dst.local_with_halo().data();
    pack_.pack(exec, "spmd::reshape::pack", s, 1, msgs_->send_buffer());
    msgs_->start(exec);
    self_.direct(exec, "spmd::reshape::copy_self", s, d, 1);
    msgs_->wait_receives(exec);
    unpack_.unpack(exec, "spmd::reshape::unpack", msgs_->recv_buffer(), d, 1);
    msgs_->wait_sends();
  }

  /// Messages this rank sends / receives per apply; runs of the three tables. Local.
  int num_sends() const { return static_cast<int>(msgs_->sends().size()); }
  int num_recvs() const { return static_cast<int>(msgs_->recvs().size()); }
  index_t local_points() const { return self_.total(); }

 private:
  Distribution<N> from_;
  Distribution<M> to_;
  std::optional<MessagePlan<T, Mem>> msgs_;
  BoxCopies<T, 1, Mem> pack_, unpack_, self_;
};

}  // namespace spmd::impl
