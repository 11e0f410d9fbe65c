#pragma once
// spmd::impl::BroadcastPlan: brings the part of a broadcast operand of an expression that this
// rank reads (NumPy broadcasting: an operand with fewer axes, or of extent 1 along axes where the
// expression is longer) into a compact buffer on this rank, on the one communication engine.
//
// The evaluating rank's box J of expression indices reads, of an operand of shape `oshape`
// aligned with the expression's trailing axes, only the box `need`: along an operand axis of
// extent 1, index 0; along the others, J's range on the matching expression axis. So a row
// (m,) against (n, m) on a 2 x 2 grid sends each rank the row's part over its own column range,
// once per evaluation, and the kernel reads the buffer with address step 0 along the broadcast
// axes (impl/expr_eval.hpp binds it so). Nothing is replicated beyond what a rank reads, and
// nothing is communicated per point.
//
// Made once (collective over the communicator, one MPI_Allgather of every rank's source box,
// needed box, operand shape and selection; the shape and selection must agree, else every rank
// throws the same spmd::Error); cached by the expression module per destination (ExprState);
// apply() allocates nothing: one pack kernel, the messages, this rank's own part copied storage
// to buffer, one unpack kernel.

#include <Kokkos_Core.hpp>

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/box_copy.hpp"
#include "spmd/impl/messages.hpp"
#include "spmd/impl/selection.hpp"

namespace spmd::impl {

/// Copies the box `need` of an Mo-d operand (view index j reads parent index sel(j) of an N-d
/// array on `from`) into a compact row-major buffer on each rank. See the file comment.
template <class T, int N, int Mo, class Mem>
class BroadcastPlan {
 public:
  using execution_space = typename Mem::execution_space;

  /// Plan over `comm` (congruent with from's communicator: every rank holds `from`). `need` is
  /// this rank's box of operand indices (inside [0, oshape); empty for none). Collective.
  BroadcastPlan(const Comm& comm, const Distribution<N>& from, const Selection<N, Mo>& sel, const Index<Mo>& oshape,
                const Box<Mo>& need, Backend backend, const char* fn)
      : from_(from), need_(need), fn_(fn) {
    ++plan_counts().broadcast_plans;
    plan_counts().broadcast_points += need.empty() ? 0 : static_cast<long>(need.size());
    const int p = comm.size(), me = comm.rank();
    // [source lo, hi (N each), need lo, hi (Mo each), operand shape (Mo), start, step, map (N each)]
    constexpr int L = 2 * N + 3 * Mo + 3 * N;
    enum : int { S_LO = 0, S_HI = N, N_LO = 2 * N, N_HI = 2 * N + Mo, O_SHAPE = 2 * N + 2 * Mo, SEL = O_SHAPE + Mo };
    std::array<index_t, L> mine{};
    for (int a = 0; a < N; ++a) {
      mine[S_LO + a] = from.owned().lo[a];
      mine[S_HI + a] = from.owned().hi[a];
      mine[SEL + a] = sel.start[a];
      mine[SEL + N + a] = sel.step[a];
      mine[SEL + 2 * N + a] = sel.map[a];
    }
    for (int k = 0; k < Mo; ++k) {
      mine[N_LO + k] = need.empty() ? 0 : need.lo[k];
      mine[N_HI + k] = need.empty() ? 0 : need.hi[k];
      mine[O_SHAPE + k] = oshape[k];
    }
    const std::vector<index_t> all = comm.allgather(mine.data(), L);
    auto at = [&](int r, int f) { return all[static_cast<std::size_t>(r) * L + f]; };
    // every rank sees the same gathered data, so every rank reaches the same verdict
    for (int r = 1; r < p; ++r)
      for (int f = O_SHAPE; f < L; ++f)
        if (at(r, f) != at(0, f)) {
          Index<Mo> s0{}, sr{};
          for (int k = 0; k < Mo; ++k) {
            s0[k] = at(0, O_SHAPE + k);
            sr[k] = at(r, O_SHAPE + k);
          }
          throw Error::replicated(str(fn, ": rank ", r, " passed another broadcast operand (shape ", shape_str(sr),
                                      ") than rank 0 (shape ", shape_str(s0), ", or another slice of its array)"));
        }
    auto src_box = [&](int r) { return box_from<N>(&all[static_cast<std::size_t>(r) * L + S_LO]); };
    auto need_box = [&](int r) { return box_from<Mo>(&all[static_cast<std::size_t>(r) * L + N_LO]); };

    const Kokkos::Array<index_t, N> sstride = strides_of<N>(from.local_extents_with_halo());
    Kokkos::Array<index_t, Mo> scoef{};
    for (int a = 0; a < N; ++a)
      if (sel.map[a] >= 0) scoef[sel.map[a]] += sel.step[a] * sstride[a];
    dcoef_ = Kokkos::Array<index_t, Mo>{};
    {
      index_t s = 1;
      for (int k = Mo - 1; k >= 0; --k) {
        dcoef_[k] = s;
        s *= need.extent(k);
      }
    }
    const Box<N> mine_src = from.owned();
    // Segment j (operand indices): source element in this rank's storage, buffer element in
    // the compact buffer of `need`.
    auto segment = [&](const Box<Mo>& j, bool with_src, bool with_dst, index_t offset) {
      CopySegment<Mo> g{};
      for (int a = 0; a < N && with_src; ++a) {
        const int k = sel.map[a];
        const index_t i = k < 0 ? sel.start[a] : sel.start[a] + sel.step[a] * j.lo[k];
        g.src += (i - mine_src.lo[a] + from.halo()[a]) * sstride[a];
      }
      for (int k = 0; k < Mo && with_dst; ++k) g.dst += (j.lo[k] - need.lo[k]) * dcoef_[k];
      for (int k = 0; k < Mo; ++k) g.ext[k] = static_cast<int>(j.extent(k));
      g.offset = offset;
      g.count = j.size();
      return g;
    };
    std::vector<Message> sends, recvs;
    std::vector<CopySegment<Mo>> pack, unpack, self;
    index_t send_total = 0, recv_total = 0;
    for (int q = 0; q < p; ++q) {
      const Box<Mo> nq = need_box(q);
      if (nq.empty()) continue;
      const Box<Mo> j = selection_intersect(sel, mine_src, nq);
      if (j.size() == 0) continue;
      if (q == me) {
        self.push_back(segment(j, true, true, 0));
        continue;
      }
      pack.push_back(segment(j, true, false, send_total));
      sends.push_back(Message{q, send_total, j.size()});
      send_total += j.size();
    }
    if (!need.empty())
      for (int r = 0; r < p; ++r) {
        if (r == me) continue;
        const Box<Mo> j = selection_intersect(sel, src_box(r), need);
        if (j.size() == 0) continue;
        unpack.push_back(segment(j, false, true, recv_total));
        recvs.push_back(Message{r, recv_total, j.size()});
        recv_total += j.size();
      }
    msgs_.emplace(comm, std::move(sends), send_total, std::move(recvs), recv_total, backend, fn,
                  "spmd::expr::broadcast");
    pack_ = BoxCopies<T, Mo, Mem>(std::move(pack), scoef, dcoef_, "spmd::expr::broadcast::pack_segments");
    unpack_ = BoxCopies<T, Mo, Mem>(std::move(unpack), scoef, dcoef_, "spmd::expr::broadcast::unpack_segments");
    self_ = BoxCopies<T, Mo, Mem>(std::move(self), scoef, dcoef_, "spmd::expr::broadcast::self_segments");
    buf_ = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::expr::broadcast")),
                                 static_cast<std::size_t>(need.empty() ? 0 : need.size()));
  }
  BroadcastPlan(const BroadcastPlan&) = delete;
  BroadcastPlan& operator=(const BroadcastPlan&) = delete;

  /// Fills the buffer from `src` (on the plan's source distribution), on `exec`; later work on
  /// `exec` sees it. Collective over the plan's communicator.
  void apply(const execution_space& exec, const Array<T, N, Mem>& src) const {
    if (src.distribution() != from_)
      throw Error::replicated(str(fn_, ": broadcast operand '", src.label(), "' has distribution (",
                                  src.distribution().describe(), ") but the plan was built for (", from_.describe(),
                                  ")"));
    FieldPtrs<const T> s{};
    FieldPtrs<T> d{};
    s[0] = src.local_with_halo().data();
    d[0] = buf_.data();
    pack_.pack(exec, "spmd::expr::broadcast::pack", s, 1, msgs_->send_buffer());
    msgs_->start(exec);
    self_.direct(exec, "spmd::expr::broadcast::copy_self", s, d, 1);
    msgs_->wait_receives(exec);
    unpack_.unpack(exec, "spmd::expr::broadcast::unpack", msgs_->recv_buffer(), d, 1);
    msgs_->wait_sends();
  }

  /// The buffer (operand index need().lo + k at element dcoef() . k). Local.
  const T* data() const { return buf_.data(); }
  const Kokkos::Array<index_t, Mo>& dcoef() const { return dcoef_; }
  const Box<Mo>& need() const { return need_; }
  /// Messages this rank sends / receives per apply, and the points it receives (its own part
  /// included). Local.
  int num_sends() const { return static_cast<int>(msgs_->sends().size()); }
  int num_recvs() const { return static_cast<int>(msgs_->recvs().size()); }
  index_t points() const { return buf_.extent(0); }

 private:
  Distribution<N> from_;
  Box<Mo> need_;
  std::string fn_;
  Kokkos::Array<index_t, Mo> dcoef_{};
  std::optional<MessagePlan<T, Mem>> msgs_;
  BoxCopies<T, Mo, Mem> pack_, unpack_, self_;
  Kokkos::View<T*, Mem> buf_;
};

}  // namespace spmd::impl
