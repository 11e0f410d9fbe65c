#pragma once
// Expressions, evaluation: binding a tree for this rank (where each operand's elements lie),
// classifying operands (read in place through the halo, or moved into a cached temporary by an
// impl::RegionPlan), the per-array cache of moves, aliasing, and the drivers of assignment and
// reduction on the kernel layer. See expr.hpp's file comment for the semantics.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/impl/array_impl.hpp"
#include "spmd/impl/broadcast_plan.hpp"
#include "spmd/impl/expr_device.hpp"
#include "spmd/impl/expr_nodes.hpp"
#include "spmd/impl/kernels.hpp"
#include "spmd/impl/region_plan.hpp"
#include "spmd/impl/forms.hpp"

namespace spmd::impl {

// ---- binding: the device tree of an expression on this rank ------------------------------------

/// Where one array operand's elements are read on this rank: address of local point k = 0 and
/// address step per destination axis.
template <int M>
struct Source {
  const void* data = nullptr;
  Kokkos::Array<index_t, M> coef{};
};
/// The sources of an expression's K array operands, in tree order (no heap: hot loops build one
/// per assignment).
template <int M, std::size_t K>
struct Binding {
  std::array<Source<M>, (K > 0 ? K : 1)> sources{};
  std::size_t count = 0;               // filled so far
  std::size_t next = 0;                // bound so far
  Kokkos::Array<index_t, M> origin{};  // the box's first point (where generators start)
  Kokkos::Array<index_t, M> extent{};  // the box's extents (nodes whose lines need them)
  void push(const Source<M>& s) { sources[count++] = s; }
};

template <class S, int M, std::size_t K>
ScalarDev<S> bind(const ScalarExpr<S>& e, Binding<M, K>&) {
  return ScalarDev<S>{e.value};
}
template <class T, int Mo, int N, class Mem, int M, std::size_t K>
TermDev<T, M> bind(const ArrayView<T, Mo, N, Mem>&, Binding<M, K>& b) {  // Mo < M: a broadcast operand
  const Source<M>& s = b.sources[b.next++];
  return TermDev<T, M>{static_cast<const T*>(s.data), s.coef};
}
template <UnOp Op, class R, class A, int M, std::size_t K>
auto bind(const UnaryExpr<Op, R, A>& e, Binding<M, K>& b) {
  auto a = bind(e.a, b);
  return UnaryDev<Un<Op, R>, decltype(a)>{a};
}
template <BinOp Op, class R, class A, class B, int M, std::size_t K>
auto bind(const BinaryExpr<Op, R, A, B>& e, Binding<M, K>& b) {
  auto x = bind(e.a, b);
  auto y = bind(e.b, b);
  return BinaryDev<Bin<Op, R>, decltype(x), decltype(y)>{x, y};
}
template <class R, class C, class A, class B, int M, std::size_t K>
auto bind(const WhereExpr<R, C, A, B>& e, Binding<M, K>& b) {
  auto c = bind(e.c, b);
  auto x = bind(e.a, b);
  auto y = bind(e.b, b);
  return WhereDev<R, decltype(c), decltype(x), decltype(y)>{c, x, y};
}
template <class F, class A, int M, std::size_t K>
auto bind(const MapExpr<F, A>& e, Binding<M, K>& b) {
  auto a = bind(e.a, b);
  return MapDev<F, decltype(a)>{e.f, a};
}
template <class F, class T, int N, int M, std::size_t K>
GenDev<F, N, M> bind(const GenExpr<F, T, N>& e, Binding<M, K>& b) {
  static_assert(N <= M, "spmd: a generator has more axes than the expression");
  GenDev<F, N, M> g{e.f, {}, {}};
  for (int i = 0; i < N; ++i) {
    g.keep[i] = e.shape()[i] == 1 ? 0 : 1;  // broadcast along an axis of extent 1
    g.origin[i] = g.keep[i] * b.origin[M - N + i];
  }
  return g;
}

/// Where `a`'s elements at parent indices sel(box.lo + k) lie in this rank's storage (LayoutRight,
/// halo included): address of k = 0 and address step per axis of k.
template <class T, int N, int M, class Mem>
Source<M> source_of(const Array<T, N, Mem>& a, const Selection<N, M>& sel, const Box<M>& box) {
  const auto& v = a.local_with_halo();
  index_t stride[N];
  index_t s = 1;
  for (int d = N - 1; d >= 0; --d) {
    stride[d] = s;
    s *= static_cast<index_t>(v.extent(static_cast<unsigned>(d)));
  }
  Source<M> src;
  index_t offset = 0;
  for (int d = 0; d < N; ++d) {
    const int k = sel.map[d];
    const index_t i = sel.start[d] + (k >= 0 ? sel.step[d] * box.lo[k] : 0);
    offset += (i - a.owned().lo[d] + a.halo()[d]) * stride[d];
    if (k >= 0) src.coef[k] += sel.step[d] * stride[d];
  }
  // (an empty box is never read: keep the pointer inside the allocation)
  src.data = v.data() + (box.empty() ? 0 : offset);
  return src;
}

/// Row-major addressing of a compact buffer holding the box `box`.
template <int M>
Kokkos::Array<index_t, M> compact_coef(const Box<M>& box) {
  Kokkos::Array<index_t, M> c;
  index_t s = 1;
  for (int d = M - 1; d >= 0; --d) {
    c[d] = s;
    s *= box.extent(d);
  }
  return c;
}

// ---- launching (on the kernel layer) -------------------------------------------------------------

template <class Exec, class Dst, class Src, int M>
void launch_assign(const Exec& exec, const char* label, const Dst& dst, const Src& src, const Box<M>& box,
                   bool contig) {
  if (box.empty()) return;
  const auto items = BoxItems<M>::template make<Exec>(box.extents());
  if (contig)
    for_box(exec, label, items, AssignRows<Dst, Src, M, true>{dst, src});
  else
    for_box(exec, label, items, AssignRows<Dst, Src, M, false>{dst, src});
}

template <class R, Map F, class Exec, class Src, int M>
typename R::value_type launch_reduce(const Exec& exec, const char* label, const Src& src, const Box<M>& box,
                                     bool contig) {
  const auto items = BoxItems<M>::template make<Exec>(box.extents());
  if (contig) return reduce_box<R>(exec, label, items, ReduceRows<R, F, Src, M, true>{src});
  return reduce_box<R>(exec, label, items, ReduceRows<R, F, Src, M, false>{src});
}

/// The MPI operation of a C reduction.
template <Combine C>
constexpr Op op_of() {
  if constexpr (C == Combine::sum)
    return Op::sum;
  else if constexpr (C == Combine::prod)
    return Op::prod;
  else if constexpr (C == Combine::min)
    return Op::min;
  else  // max, absmax (an empty block contributes absmax's identity 0)
    return Op::max;
}

/// Whether C reductions into Acc combine across ranks with NumPy's NaN rule (ReductionOp) rather
/// than MPI's own operation (whose min / max of a NaN depends on the order of the operands).
template <Combine C, class Acc>
constexpr bool selects_nan() {
  return C != Combine::sum && C != Combine::prod && std::is_floating_point_v<Acc>;
}

/// MPI's user function for ReductionOp: inout = np_minimum / np_maximum(in, inout).
template <Combine C, class T>
void select_combine(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = C == Combine::min ? np_minimum(a[i], b[i]) : np_maximum(a[i], b[i]);
}

/// The MPI operation of a C reduction into Acc for the duration of one call: MPI's own, or
/// (selects_nan) a commutative user operation folding by NumPy's rule, so a NaN on any rank gives
/// NaN whatever the order MPI combines in (freed on destruction). Local.
template <Combine C, class Acc>
class ReductionOp {
 public:
  explicit ReductionOp(const char* fn) {
    if constexpr (selects_nan<C, Acc>())
      SPMD_MPI_CHECK(MPI_Op_create(&select_combine<C, Acc>, 1, &op_), fn);
    else
      op_ = mpi_op(op_of<C>());
  }
  ~ReductionOp() {
    if constexpr (selects_nan<C, Acc>()) MPI_Op_free(&op_);  // (a destructor cannot throw)
  }
  ReductionOp(const ReductionOp&) = delete;
  ReductionOp& operator=(const ReductionOp&) = delete;
  MPI_Op get() const { return op_; }

 private:
  MPI_Op op_ = MPI_OP_NULL;
};

/// The ranks' partial results of a C reduction combined, and the agreement on an error one rank
/// may have met before it (`error`: its message, "" for none) in the same MPI_Allreduce: a second
/// element of type Acc carries a failure flag that the reduction's own operation propagates
/// (sum, max: 1 on failure, 0 else; prod, min: 0 on failure, 1 else). When any rank failed,
/// Comm::check gives every rank the same spmd::Error (the lowest failing rank's message). So an
/// argument error seen by one rank alone cannot leave the others waiting, and costs nothing when
/// none occurs. Collective.
template <Combine C, class Acc>
Acc combine_ranks(const Comm& comm, const Acc local, const std::string& error = {}) {
  constexpr bool low = C == Combine::prod || C == Combine::min;
  const Acc ok = low ? Acc(1) : Acc(0), failed = low ? Acc(0) : Acc(1);
  Acc v[2] = {local, error.empty() ? ok : failed};
  const ReductionOp<C, Acc> op("spmd::reduce");
  comm.allreduce(v, 2, op.get());
  if (!(v[1] == ok)) comm.check(error.empty(), error);
  return v[0];
}

/// What a rank that met an argument error before a C reduction into Acc does: takes part in its
/// combine with the failure flag (see combine_ranks), then throws the agreed error. Collective.
template <Combine C, class Acc>
[[noreturn]] void fail_reduction(const Comm& comm, const std::string& error) {
  Acc identity;
  Rule<C, Acc>::init(identity);
  const std::string what = error.empty() ? std::string("spmd::reduce: error") : error;
  combine_ranks<C, Acc>(comm, identity, what);
  throw Error(what);  // not reached: with a message, combine_ranks throws the agreed error
}

// ---- classification and the cache of moves ------------------------------------------------------

/// How an operand is read: in place (its own block and halo); `shifted`: co-indexed and in place
/// except that it reads beyond its block along split axes where its array has no halo (read in
/// place where it reads the rank's own block, its part beyond brought into small buffers by an
/// assignment: assign_split; moved by a reduction); moved into a temporary; or (an operand of
/// another shape that broadcasts) its needed part brought into a buffer.
enum class Access { direct, shifted, moved, broadcast };

/// A cached move: the plan that copies an operand's selection into the target's layout, and the
/// temporary it fills (when the operand is read through one).
struct CachedMove {
  virtual ~CachedMove() = default;
  std::uint64_t used = 0;
  bool whole = false;  // holds (or fills) a whole temporary: a move, not a part's buffer
};
template <class To, int No, int M, class Mem, int Nd>
struct MoveEntry : CachedMove {
  Distribution<No> from;
  Selection<No, M> sel;
  Selection<Nd, M> dsel;
  Index<M> extent{};
  std::unique_ptr<RegionPlan<To, No, M, Mem, Nd>> plan;
  Array<To, Nd, Mem> temp;       // made on first use as an operand's temporary
  const void* source = nullptr;  // the array the temporary was last filled from (its identity)
};

/// A cached broadcast: the plan that brings the part of a broadcast operand (parent on `from`,
/// selection `sel`, shape `oshape`) this rank reads when evaluating over the target (parent on
/// `to`, selection `ts`, shape `tshape`) into the plan's buffer.
template <class To, int No, int Mo, class Mem, int Nd, int M>
struct BroadcastEntry : CachedMove {
  Distribution<No> from;
  Selection<No, Mo> sel;
  Index<Mo> oshape{};
  Distribution<Nd> to;
  Selection<Nd, M> ts;
  Index<M> tshape{};
  int part = 0;                         // 0: the rank's whole box; 1 + s: slot s of assign_split's frame
  std::array<index_t, 2 * Nd> frame{};  // (part > 0) the statement's shifts that shape the frame
  std::unique_ptr<BroadcastPlan<To, No, Mo, Mem>> plan;
  const void* source = nullptr;  // the array the buffer was last filled from (its identity)
};

/// Per-array state of the expression module (impl::slot, Slot::expr).
template <class T, class Mem>
struct ExprState {
  static constexpr std::size_t max_moves = 16;    // entries that move whole operands (temporaries)
  static constexpr std::size_t max_entries = 64;  // entries of any kind (broadcasts, assign_split's parts)
  std::vector<std::unique_ptr<CachedMove>> moves;
  std::uint64_t clock = 0;
  std::uint64_t epoch = 0;        // the clock when the current assignment began: its entries stay
  Kokkos::View<T*, Mem> scratch;  // the aliasing buffer (grows, never shrinks)
  Kokkos::View<T*, Mem> lagged;   // the ring and edge buffers of LaggedAssign (grows, never shrinks)
};

template <class T, int N, class Mem>
ExprState<T, Mem>& expr_state(const Array<T, N, Mem>& a) {
  auto& p = slot(a, Slot::expr);
  if (!p) p = std::make_shared<ExprState<T, Mem>>();
  return *static_cast<ExprState<T, Mem>*>(p.get());
}

template <int N, int M>
bool same_selection(const Selection<N, M>& a, const Selection<N, M>& b) {
  return a.start == b.start && a.step == b.step && a.map == b.map;
}

/// The expression cache's one lookup (find_move, find_broadcast): the entry of type E that
/// `match` accepts and no earlier operand of the current assignment has claimed (unless for the
/// same `source`; `*filled` then says its temporary is current), else a new one from `make`,
/// dropping the least recently used entry the current assignment does not read when the cache
/// is full (max_moves entries that move whole operands, max_entries in all). Collective when
/// `make` is (the keys hold replicated data only).
template <class E, class S, class Match, class Make>
E& find_cached(S& st, const Match& match, const Make& make, const void* source, bool* filled) {
  ++st.clock;
  if (filled) *filled = false;
  for (auto& m : st.moves) {
    auto* e = dynamic_cast<E*>(m.get());
    if (!e || !match(*e)) continue;
    const bool claimed = e->used >= st.epoch;  // by an earlier operand of this assignment
    if (claimed && !(source && e->source == source)) continue;
    if (filled) *filled = claimed;
    e->used = st.clock;
    e->source = source;
    return *e;
  }
  std::unique_ptr<E> e = make();
  e->source = source;
  e->used = st.clock;
  // the least recently used entry the current assignment does not read (of the whole kind only
  // when `whole_only`), if any
  auto evict = [&](bool whole_only) {
    std::size_t oldest = st.moves.size();
    for (std::size_t i = 0; i < st.moves.size(); ++i)
      if (st.moves[i]->used < st.epoch && (!whole_only || st.moves[i]->whole) &&
          (oldest == st.moves.size() || st.moves[i]->used < st.moves[oldest]->used))
        oldest = i;
    if (oldest < st.moves.size()) st.moves.erase(st.moves.begin() + static_cast<std::ptrdiff_t>(oldest));
  };
  if (e->whole) {
    std::size_t wholes = 0;
    for (const auto& m : st.moves) wholes += m->whole ? 1 : 0;
    if (wholes >= S::max_moves) evict(true);
  }
  if (st.moves.size() >= S::max_entries) evict(false);
  st.moves.push_back(std::move(e));
  return static_cast<E&>(*st.moves.back());
}

/// The cached move of `src` into the layout of `target` at selection dsel (built on first use:
/// collective over the target's communicator; every rank looks up the same entries, because
/// the key holds replicated data only). An entry serves one array per assignment: operands of
/// two arrays with one key (`u[1:-1, 0]` and `p[1:-1, 0]`, arrays on one distribution) get two
/// entries, each with its own temporary; when `source` (the operand's array identity, the same
/// relation on every rank) is given, a repeat of an operand the current assignment has already
/// moved finds its entry again, and `*filled` tells the caller that its temporary is current.
template <class To, int No, int M, class Mem, class Td, int Nd>
MoveEntry<To, No, M, Mem, Nd>& find_move(ExprState<Td, Mem>& st, const Array<Td, Nd, Mem>& target,
                                         const ArrayView<To, M, No, Mem>& src, const Selection<Nd, M>& dsel,
                                         const char* fn, const void* source = nullptr, bool* filled = nullptr) {
  using E = MoveEntry<To, No, M, Mem, Nd>;
  const auto match = [&](const E& e) {
    return e.from == src.parent().distribution() && same_selection(e.sel, src.selection()) &&
           same_selection(e.dsel, dsel) && e.extent == src.shape();
  };
  const auto make = [&] {
    auto e = std::make_unique<E>();
    e->whole = true;
    e->from = src.parent().distribution();
    e->sel = src.selection();
    e->dsel = dsel;
    e->extent = src.shape();
    e->plan = std::make_unique<RegionPlan<To, No, M, Mem, Nd>>(target.comm(), e->from, e->sel, target.distribution(),
                                                               dsel, e->extent, Backend::automatic, fn);
    return e;
  };
  return find_cached<E>(st, match, make, source, filled);
}

/// The operand indices of an operand of shape `oshape` (aligned with the last axes of the
/// target's M) that the target box `box` reads: index 0 along an operand axis of extent 1, the
/// box's range along the others; empty when the box is. Local.
template <int Mo, int M>
Box<Mo> broadcast_need(const std::common_type_t<Index<Mo>>& oshape, const Box<M>& box) {
  Box<Mo> need;
  if (box.empty()) return need;
  for (int i = 0; i < Mo; ++i) {
    const int k = M - Mo + i;
    need.lo[i] = oshape[i] == 1 ? 0 : box.lo[k];
    need.hi[i] = oshape[i] == 1 ? 1 : box.hi[k];
  }
  return need;
}

/// The cached broadcast of operand `src` for the target (parent `target`, selection ts, shape
/// tshape, this rank's box `box`), built on first use (collective over the target's
/// communicator; the key holds replicated data only, so every rank hits and misses alike). An
/// entry serves one array per assignment, as in find_move (`source`, `filled`). `part` (part of
/// the key): 0 for the rank's whole box; 1 + s for slot s of assign_split's frame, `box` then
/// being this rank's part (an operand of the target's shape: its part beyond the rank's block
/// with it), and `frame` (then part of the key too) the statement's smallest and largest shift
/// along each parent axis, which with the key's distribution and selection fix every rank's
/// parts (replicated, where the parts themselves are not). Collective.
template <class To, int Mo, int No, class Mem, class Td, int Nd, int M>
BroadcastEntry<To, No, Mo, Mem, Nd, M>& find_broadcast(ExprState<Td, Mem>& st, const Array<Td, Nd, Mem>& target,
                                                       const ArrayView<To, Mo, No, Mem>& src,
                                                       const Selection<Nd, M>& ts,
                                                       const std::common_type_t<Index<M>>& tshape, const Box<M>& box,
                                                       const char* fn, const void* source, bool* filled, int part = 0,
                                                       const std::array<index_t, 2 * Nd>& frame = {}) {
  using E = BroadcastEntry<To, No, Mo, Mem, Nd, M>;
  const auto match = [&](const E& e) {
    return e.part == part && e.frame == frame && e.from == src.parent().distribution() &&
           same_selection(e.sel, src.selection()) && e.oshape == src.shape() && e.to == target.distribution() &&
           same_selection(e.ts, ts) && e.tshape == tshape;
  };
  const auto make = [&] {
    auto e = std::make_unique<E>();
    e->from = src.parent().distribution();
    e->sel = src.selection();
    e->oshape = src.shape();
    e->to = target.distribution();
    e->ts = ts;
    e->tshape = tshape;
    e->part = part;
    e->frame = frame;
    e->plan = std::make_unique<BroadcastPlan<To, No, Mo, Mem>>(
        target.comm(), e->from, e->sel, e->oshape, broadcast_need<Mo>(e->oshape, box), Backend::automatic, fn);
    return e;
  };
  return find_cached<E>(st, match, make, source, filled);
}

/// True when the two communicators have the same ranks in the same order (MPI_Comm_compare is
/// local).
inline bool congruent(const Comm& a, const Comm& b) {
  if (a == b) return true;
  int result = MPI_UNEQUAL;
  SPMD_MPI_CHECK(MPI_Comm_compare(a.raw(), b.raw(), &result), "spmd::assign");
  return result == MPI_IDENT || result == MPI_CONGRUENT;
}

/// A shift by `delta` along parent axis a of `d` as a halo read sees it. On a periodic axis the
/// periodic halo holds index i of the axis also at i + n and i - n, so a shift beyond the halo is
/// one by delta - n (or delta + n) when that fits in the halo: column 0 read for column n - 1 (a
/// periodic boundary column of CFD codes) is a shift by +1. Otherwise delta. Local.
template <int N>
index_t halo_shift(const Distribution<N>& d, int a, index_t delta) {
  const index_t h = d.halo()[a], n = d.extent(a);
  if (!d.periodic()[a] || (delta < 0 ? -delta : delta) <= h) return delta;
  const index_t wrapped = delta > 0 ? delta - n : delta + n;
  return (wrapped < 0 ? -wrapped : wrapped) <= h ? wrapped : delta;
}
/// The selection a halo read of an operand (selection s, parent distribution d) reads through:
/// s with each start at the target's start plus halo_shift (s itself unless an axis wraps).
/// Local.
template <int No, int Nd, int M>
Selection<No, M> halo_selection(const Distribution<No>& d, Selection<No, M> s, const Selection<Nd, M>& ts) {
  if constexpr (No == Nd)
    for (int a = 0; a < No; ++a) s.start[a] = ts.start[a] + halo_shift(d, a, s.start[a] - ts.start[a]);
  return s;
}

/// How operand `o` is read when evaluating over the target (parent `tp`, selection `ts`, the
/// view the destination or the reduction's first operand is). From replicated data only. Throws
/// the collective "halo too narrow" error.
template <class To, int No, int M, class Mem, class Td, int Nd, class Name>
Access classify(const char* fn, const ArrayView<To, M, No, Mem>& o, const Array<Td, Nd, Mem>& tp,
                const Selection<Nd, M>& ts, const Name& target_name) {
  const auto& op = o.parent();
  if (op.is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
  if (!congruent(op.comm(), tp.comm()))
    throw Error::replicated(str(fn, ": operand ", o.describe(), " lives on another communicator than ", target_name(),
                                " (use spmd::redistribute to move it first)"));
  if constexpr (No != Nd) {
    return Access::moved;
  } else {
    const auto& os = o.selection();
    if (op.shape() != tp.shape()) return Access::moved;
    for (int a = 0; a < No; ++a)
      if (os.map[a] != ts.map[a] || (os.map[a] >= 0 && os.step[a] != ts.step[a])) return Access::moved;
    // Co-indexed: operand index = target index + delta along every parent axis (on a periodic
    // axis, modulo its length: see halo_shift).
    bool moved = false, shifted = false;
    for (int a = 0; a < No; ++a) {
      const index_t delta = halo_shift(op.distribution(), a, os.start[a] - ts.start[a]);
      if (delta == 0) continue;
      const index_t reach = delta < 0 ? -delta : delta;
      const int h = op.halo()[a];
      if (os.map[a] >= 0 && h > 0 && reach > h)
        throw Error::replicated(str(fn, ": operand ", o.describe(), " reads '", op.label(), "' shifted by ", delta,
                                    " along axis ", a, " relative to ", target_name(), ", but the halo of '",
                                    op.label(), "' is ", h, " wide there: widen the halo (spmd::halo), or give '",
                                    op.label(), "' no halo along axis ", a,
                                    " to have the operand moved automatically (halo reads read "
                                    "what the halo holds: call spmd::exchange_halo first)"));
      // no halo along a kept axis: shifted; another plane of a dropped axis: moved; neither when
      // the process grid does not split the axis (every rank's block spans it, so the shift reads
      // the rank's own block: a NumPy program's `u[1:-1, 2:]` on arrays without a halo is read in
      // place)
      if (reach > h && op.distribution().dims()[a] > 1) (os.map[a] >= 0 ? shifted : moved) = true;
    }
    if (moved || !op.distribution().same_layout(tp.distribution()) || !(op.comm() == tp.comm())) return Access::moved;
    return shifted ? Access::shifted : Access::direct;
  }
}

/// The view axes along which a `shifted` operand `o` reads beyond its block (bit k for view axis
/// k: a kept axis the process grid splits, where o's array has no halo and o is shifted against
/// the target selection ts). From replicated data only. Local.
template <class To, int No, int M, class Mem, int Nd>
unsigned shifted_axes(const ArrayView<To, M, No, Mem>& o, const Selection<Nd, M>& ts) {
  unsigned mask = 0;
  if constexpr (No == Nd) {
    const auto& op = o.parent();
    for (int a = 0; a < No; ++a)
      if (o.selection().map[a] >= 0 && o.selection().start[a] != ts.start[a] && op.halo()[a] == 0 &&
          op.distribution().dims()[a] > 1)
        mask |= 1u << o.selection().map[a];
  }
  return mask;
}

/// The global index range a selection covers along parent axis a, as [lo, hi] (empty: lo > hi).
template <int N, int M>
std::pair<index_t, index_t> covered(const Selection<N, M>& s, const std::common_type_t<Index<M>>& shape, int a) {
  const int k = s.map[a];
  if (k < 0) return {s.start[a], s.start[a]};
  if (shape[k] == 0) return {1, 0};
  const index_t last = s.start[a] + s.step[a] * (shape[k] - 1);
  return {s.start[a] < last ? s.start[a] : last, s.start[a] < last ? last : s.start[a]};
}
/// True when the two selections of one parent may share an element (bounding boxes meet).
template <int N, int M>
bool may_overlap(const Selection<N, M>& a, const std::common_type_t<Index<M>>& sa, const Selection<N, M>& b,
                 const std::common_type_t<Index<M>>& sb) {
  for (int d = 0; d < N; ++d) {
    const auto x = covered(a, sa, d), y = covered(b, sb, d);
    if (x.first > x.second || y.first > y.second || x.second < y.first || y.second < x.first) return false;
  }
  return true;
}

template <class Exec, class T, class Mem, class Src, int M>
void launch_lagged(const Exec& exec, ExprState<T, Mem>& st, const DstDev<T, M>& dst, const Src& src, const Box<M>& box,
                   const index_t reach, const bool contig, const char* label) {
  LaggedAssign<DstDev<T, M>, Src, M, false> k{dst, src, {}, 0, 0, 0, 0, nullptr, nullptr, false};
  for (int d = 0; d < M; ++d) k.ext[d] = box.extent(d);
  if constexpr (M == 1) {
    k.unit = host_chunk;
    k.nunits = (k.ext[0] + host_chunk - 1) / host_chunk;
    k.lag = (reach + host_chunk - 1) / host_chunk;
  } else {
    k.unit = box.size() / k.ext[0];
    k.nunits = k.ext[0];
    k.lag = reach;
  }
  const index_t conc = static_cast<index_t>(exec.concurrency());
  const index_t want = forms<Mem>().bands > 0 ? forms<Mem>().bands : conc;
  k.nbands = std::max<index_t>(1, std::min(want, k.nunits));
  const auto need = static_cast<std::size_t>(k.nbands * (3 * k.lag + 1) * k.unit);
  if (st.lagged.extent(0) < need)
    st.lagged = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::lagged"), need);
  k.ring = st.lagged.data();
  k.edge = k.ring + k.nbands * (k.lag + 1) * k.unit;
  const auto policy = ItemPolicy<Exec>(exec, 0, k.nbands);
  auto run = [&](auto kernel) {
    Kokkos::parallel_for(label ? label : "spmd::expr::assign_lagged", policy, kernel);
    if (kernel.lag == 0) return;
    kernel.phase2 = true;
    Kokkos::parallel_for(label ? label : "spmd::expr::assign_lagged_edges", policy, kernel);
  };
  if (contig)
    run(LaggedAssign<DstDev<T, M>, Src, M, true>{k.dst, k.src, k.ext, k.unit, k.nunits, k.lag, k.nbands, k.ring, k.edge,
                                                 false});
  else
    run(k);
}

/// dst = src in place on a 2-D box by the one-pass tiled form (TiledAssign) on `exec`, when
/// `forms` asks for it and the reaches are within its limits (at most 4 rows and 32 columns);
/// false otherwise: the caller then buffers (the default form, measured faster). Local.
template <class Exec, class T, class Mem, class Src, int M>
bool launch_tiled(const Exec& exec, const Forms& forms, ExprState<T, Mem>& st, const DstDev<T, M>& dst, const Src& src,
                  const Box<M>& box, const index_t reach, const index_t reach_last, const char* label) {
  if constexpr (M != 2) {
    (void)exec, (void)forms, (void)st, (void)dst, (void)src, (void)box, (void)reach, (void)reach_last, (void)label;
    return false;
  } else {
    constexpr index_t max_lag = 4, max_creach = 32;
    if (!forms.tiled_alias || reach > max_lag || reach_last > max_creach) return false;
    using K = TiledAssign<DstDev<T, 2>, Src>;
    K k{dst, src, box.extent(0), box.extent(1), reach, reach_last, 0, 0, 0, 0, nullptr, false};
    const bool host = host_accessible<Mem>();
    // A GPU: a tile row per thread block, rows of 256 (fewer for narrow boxes, whole warps). A
    // host (the tests' path; host spaces run LaggedAssign): one thread per team, tiles of 8
    // columns, so that tile edges are crossed on small arrays.
    const index_t team = host ? 1 : std::min<index_t>(256, (k.cols + 31) / 32 * 32);
    k.width = host ? std::min<index_t>(8, k.cols) : team;
    k.tiles = (k.cols + k.width - 1) / k.width;
    if (host) {
      const index_t bands = forms.bands > 0 ? forms.bands : 3;
      k.band = std::max<index_t>(1, (k.rows + bands - 1) / bands);
    } else {
      // enough tiles to fill the GPU (about 2048), bands of 8 to 64 rows, whole steps of rows
      const index_t want = std::max<index_t>(1, k.rows * k.tiles / 2048);
      const index_t lo = std::max<index_t>(8, 2 * reach + K::step);
      k.band = (std::min<index_t>(64, std::max(lo, want)) + K::step - 1) / K::step * K::step;
    }
    const index_t bands = (k.rows + k.band - 1) / k.band;
    k.edge_size = K::edge_values(k.lag, k.creach, k.band, k.width);
    const auto need = static_cast<std::size_t>(bands * k.tiles * k.edge_size);
    if (st.lagged.extent(0) < need)
      st.lagged = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::lagged"), need);
    k.edge = st.lagged.data();
    const auto policy = Kokkos::TeamPolicy<Exec>(exec, static_cast<int>(bands * k.tiles), static_cast<int>(team))
                            .set_scratch_size(0, Kokkos::PerTeam(k.ring_bytes()));
    Kokkos::parallel_for(kernel_label(label ? label : "spmd::expr::assign_tiled"), policy, k);
    if (need > 0) {
      k.phase2 = true;
      Kokkos::parallel_for(kernel_label(label ? label : "spmd::expr::assign_tiled_edges"), policy, k);
    }
    return true;
  }
}

/// How a broadcast operand `o` (of another shape than the target's `tshape`, which it must
/// broadcast to) is read: through a BroadcastPlan's buffer. From replicated data only. Throws
/// the collective errors of a null operand, another communicator, or a shape that does not
/// broadcast to the target's (an expression's shape is always one its operands broadcast to;
/// this guards the reduction anchor).
template <int M, class To, int Mo, int No, class Mem, class Td, int Nd, class Name>
Access classify_broadcast(const char* fn, const ArrayView<To, Mo, No, Mem>& o, const Array<Td, Nd, Mem>& tp,
                          const std::common_type_t<Index<M>>& tshape, const Name& target_name) {
  static_assert(Mo <= M, "spmd: an operand has more axes than the expression");
  const auto& op = o.parent();
  if (op.is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
  if (!congruent(op.comm(), tp.comm()))
    throw Error::replicated(str(fn, ": operand ", o.describe(), " lives on another communicator than ", target_name(),
                                " (use spmd::redistribute to move it first)"));
  if (!broadcasts_to(o.shape(), tshape))
    throw Error::replicated(str(fn, ": operand ", o.describe(), " of shape ", np_shape_str(o.shape()),
                                " does not broadcast to the shape ", np_shape_str(tshape), " of ", target_name()));
  return Access::broadcast;
}

/// Whether an operand read in place also reads the written storage at other positions, and how
/// far along view axis 0 and along the view's last axis (in view indices).
struct Alias {
  bool aliased = false;
  index_t reach = 0;
  index_t reach_last = 0;
};

/// Resolves every array operand of `e` against the target view (parent tp, selection ts, box J
/// of this rank): classification, moves into cached temporaries (on `exec`), and where each is
/// read. Returns the binding and fills `alias` (only meaningful when the target is written).
/// target_name() names the target in errors (called only then).
///
/// `verdicts` (K entries, or null): when given, `shifted` operands are left to the caller
/// (assign_split: a null source is bound for each, and the verdicts are copied out); when null,
/// they are moved like the operands that must be.
template <class Exec, class E, class Td, int Nd, class Mem, int M, class Name>
Binding<M, terminal_count<E>::value> resolve(const Exec& exec, const char* fn, const E& e, const Array<Td, Nd, Mem>& tp,
                                             const Selection<Nd, M>& ts, const std::common_type_t<Index<M>>& tshape,
                                             const Box<M>& box, ExprState<Td, Mem>& st, const Name& target_name,
                                             Alias& alias, Access* verdicts = nullptr) {
  constexpr std::size_t K = terminal_count<E>::value;
  std::array<Access, (K > 0 ? K : 1)> how{};
  std::size_t counted = 0;
  auto classify_one = [&](const auto& o) {
    using O = std::decay_t<decltype(o)>;
    if constexpr (O::rank != M) {
      how[counted++] = classify_broadcast<M>(fn, o, tp, tshape, target_name);
    } else {
      if (o.shape() == tshape)
        how[counted++] = classify(fn, o, tp, ts, target_name);
      else
        how[counted++] = classify_broadcast<M>(fn, o, tp, tshape, target_name);
    }
  };
  visit_terminals(e, classify_one);  // all verdicts first: an error leaves nothing half done
  for (std::size_t t = 0; t < counted; ++t) {
    if (how[t] == Access::shifted && !verdicts) how[t] = Access::moved;
    if (verdicts) verdicts[t] = how[t];
  }
  Binding<M, K> b;
  for (int d = 0; d < M; ++d) {
    b.origin[d] = box.lo[d];
    b.extent[d] = box.extent(d);
  }
  alias = Alias{};
  st.epoch = st.clock + 1;
  std::size_t t = 0;
  auto resolve_one = [&](const auto& o) {
    using O = std::decay_t<decltype(o)>;
    constexpr int Mo = O::rank;
    const Access verdict = how[t++];
    if (verdict == Access::broadcast) {
      const Region region("spmd::expr::broadcast");
      bool filled = false;
      auto& m = find_broadcast(st, tp, o, ts, tshape, box, fn, &slot(o.parent(), Slot::expr), &filled);
      if (!filled) m.plan->apply(exec, o.parent());
      // the buffer holds the needed box compactly; address step 0 along broadcast axes
      Source<M> src;
      src.data = m.plan->data();
      for (int i = 0; i < Mo; ++i) src.coef[M - Mo + i] = o.shape()[i] == 1 ? 0 : m.plan->dcoef()[i];
      b.push(src);
      return;
    }
    if constexpr (Mo != M) {
      return;  // not reached: an operand of another rank always broadcasts
    } else if (verdict == Access::direct || verdict == Access::shifted) {
      // a shifted operand's source depends on the part of the box (assign_split binds it)
      if (verdict == Access::direct)
        b.push(source_of(o.parent(), halo_selection(o.parent().distribution(), o.selection(), ts), box));
      else
        b.push(Source<M>{});
      if constexpr (std::is_same_v<std::decay_t<decltype(o.parent())>, Array<Td, Nd, Mem>>) {
        const auto* mine = tp.local_with_halo().data();
        if (mine && o.parent().local_with_halo().data() == mine && !same_selection(o.selection(), ts) &&
            may_overlap(o.selection(), o.shape(), ts, tshape)) {
          // read in place, so co-indexed: a shift of delta along the parent axis of view axis 0
          // reads ceil(|delta| / |step|) view indices away along it
          alias.aliased = true;
          for (int a = 0; a < Nd; ++a)
            if (ts.map[a] >= 0) {
              const index_t delta = std::abs(o.selection().start[a] - ts.start[a]), step = std::abs(ts.step[a]);
              const index_t r = (delta + step - 1) / step;
              if (ts.map[a] == 0) alias.reach = std::max(alias.reach, r);
              if (ts.map[a] == M - 1) alias.reach_last = std::max(alias.reach_last, r);
            }
        }
      }
    } else {
      const Region region("spmd::expr::move");
      bool filled = false;
      auto& m = find_move(st, tp, o, ts, fn, &slot(o.parent(), Slot::expr), &filled);
      using Tmp = std::decay_t<decltype(m.temp)>;
      if (m.temp.is_null()) m.temp = Tmp(tp.distribution(), Label{"spmd::expr::moved"}, Init::none);
      if (!filled) m.plan->apply(exec, m.temp, o.parent());
      b.push(source_of(m.temp, ts, box));
    }
  };
  visit_terminals(e, resolve_one);
  return b;
}

/// True when every source's last address step is 1.
template <int M, std::size_t K>
bool sources_contiguous(const Binding<M, K>& b) {
  for (std::size_t t = 0; t < b.count; ++t)
    if (b.sources[t].coef[M - 1] != 1) return false;
  return true;
}
/// True when the destination's (dst_coef) and every source's last address step are 1.
template <int M, std::size_t K>
bool contiguous(const Binding<M, K>& b, const std::common_type_t<Kokkos::Array<index_t, M>>& dst_coef) {
  return dst_coef[M - 1] == 1 && sources_contiguous(b);
}

// ---- parts of a rank's box (assign_split, assign_overlapped) -------------------------------------

/// The frame of J around I, in 2M fixed slots: slot 2a is the slab [J.lo, I.lo) along axis a,
/// slot 2a + 1 the slab [I.hi, J.hi), each with I's range along the axes before a and J's along
/// those after. Disjoint, and together with I they cover J, for any I with J.lo <= I.lo <= I.hi
/// <= J.hi along every axis (an empty I included). Local.
template <int M>
std::array<Box<M>, 2 * M> frame_slots(const Box<M>& whole, const Box<M>& inner) {
  std::array<Box<M>, 2 * M> out;
  for (int a = 0; a < M; ++a) {
    Box<M> lo = whole, hi = whole;
    for (int b = 0; b < a; ++b) {
      lo.lo[b] = hi.lo[b] = inner.lo[b];
      lo.hi[b] = hi.hi[b] = inner.hi[b];
    }
    lo.hi[a] = inner.lo[a];
    hi.lo[a] = inner.hi[a];
    out[2 * a] = lo;
    out[2 * a + 1] = hi;
  }
  return out;
}

/// The parts of J outside I (frame_slots' non-empty slabs). An empty I gives J itself. Local.
template <int M>
std::vector<Box<M>> frame_of(const Box<M>& whole, const Box<M>& inner) {
  std::vector<Box<M>> out;
  if (whole.empty()) return out;
  if (inner.empty()) {
    out.push_back(whole);
    return out;
  }
  for (const Box<M>& part : frame_slots(whole, inner))
    if (!part.empty()) out.push_back(part);
  return out;
}

/// The element sizes of e's array operands, in binding order. Local.
template <class E>
std::array<std::size_t, (terminal_count<E>::value > 0 ? terminal_count<E>::value : 1)> element_sizes(const E& e) {
  std::array<std::size_t, (terminal_count<E>::value > 0 ? terminal_count<E>::value : 1)> size{};
  std::size_t t = 0;
  auto size_of = [&](const auto& o) { size[t++] = sizeof(typename std::decay_t<decltype(o)>::value_type); };
  visit_terminals(e, size_of);
  return size;
}

/// Address offset of the first point of `part` from that of `whole` for address steps `coef`.
template <int M>
index_t part_offset(const std::common_type_t<Kokkos::Array<index_t, M>>& coef, const Box<M>& whole,
                    const Box<M>& part) {
  index_t off = 0;
  for (int k = 0; k < M; ++k) off += coef[k] * (part.lo[k] - whole.lo[k]);
  return off;
}

/// The binding `b` made for the box `whole`, moved to `part` (inside it): an operand's address of
/// point k of the part is its address of k + part.lo - whole.lo (`size`: element sizes, from
/// element_sizes). Null sources stay null. Local.
template <int M, std::size_t K, class Sizes>
Binding<M, K> rebased(Binding<M, K> b, const Sizes& size, const Box<M>& whole, const Box<M>& part) {
  b.next = 0;
  for (int k = 0; k < M; ++k) {
    b.origin[k] = part.lo[k];
    b.extent[k] = part.extent(k);
  }
  for (std::size_t s = 0; s < b.count; ++s)
    if (b.sources[s].data)
      b.sources[s].data = static_cast<const char*>(b.sources[s].data) +
                          part_offset(b.sources[s].coef, whole, part) * static_cast<index_t>(size[s]);
  return b;
}

/// dst = src over `box` on `exec`, handling a destination read at other positions (`alias`,
/// from resolve): on the host in place a few units behind (LaggedAssign); on a device into the
/// state's scratch buffer, then copied back, or (Forms::tiled_alias) in place by tiles of a 2-D
/// box (TiledAssign). `src_contig`: every source's last address step is 1. `label`: the user's
/// kernel name or null. Local.
template <class Exec, class Td, class Mem, int M, class Src>
void launch_into(const Exec& exec, ExprState<Td, Mem>& st, const DstDev<Td, M>& out, const Src& src, const Box<M>& box,
                 const Alias& alias, bool src_contig, const char* label) {
  const bool contig = src_contig && out.coef[M - 1] == 1;
  if (!alias.aliased) {
    launch_assign(exec, label ? label : "spmd::expr::assign", out, src, box, contig);
    return;
  }
  if (box.empty()) return;
  const Forms forms_here = forms<typename Exec::memory_space>();
  if constexpr (host_accessible<typename Exec::memory_space>()) {
    if (!forms_here.device_alias) {
      launch_lagged(exec, st, out, src, box, alias.reach, contig, label);
      return;
    }
  }
  if (launch_tiled(exec, forms_here, st, out, src, box, alias.reach, alias.reach_last, label)) return;
  const auto n = static_cast<std::size_t>(box.size());
  if (st.scratch.extent(0) < n)
    st.scratch = Kokkos::View<Td*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::scratch"), n);
  const Kokkos::Array<index_t, M> cc = compact_coef(box);
  launch_assign(exec, label ? label : "spmd::expr::assign_buffered", DstDev<Td, M>{st.scratch.data(), cc}, src, box,
                src_contig);
  launch_assign(exec, "spmd::expr::copy_back", out, TermDev<Td, M>{st.scratch.data(), cc}, box, out.coef[M - 1] == 1);
}

/// Narrows `inner` (view indices) along the view axes in `axes` to the points at which operand o
/// reads its rank's own block. Local.
template <class To, int No, int M, class Mem>
void narrow_to_own(const ArrayView<To, M, No, Mem>& o, unsigned axes, Box<M>& inner) {
  const auto& sel = o.selection();
  const Box<No> own = o.parent().owned();
  for (int a = 0; a < No; ++a) {
    const int k = sel.map[a];
    if (k < 0 || ((axes >> k) & 1u) == 0) continue;
    const auto iv = affine_interval(sel.start[a], sel.step[a], own.lo[a], own.hi[a]);
    inner.lo[k] = std::max(inner.lo[k], iv.first);
    inner.hi[k] = std::min(inner.hi[k], iv.second);
  }
}

/// dst = e when some operands are `shifted` (they read beyond their rank's block along split
/// axes of arrays without a halo: a NumPy program's `u[1:-1, 2:]` on a split grid): this rank's
/// box J is split into the interior I, where every operand reads its own block and is read in
/// place, and the frame around it (frame_slots: 2 slabs per axis), where each shifted operand
/// that reads beyond its block along that slab's axis or a later one is read from a buffer
/// holding exactly the slab's part of it (a BroadcastPlan per operand and slab: this rank's own
/// rows copied, the neighbours' received). So a shift moves the rows it reads across a block
/// edge, not the operand (impl::RegionPlan into a temporary, the way before, copied the whole
/// grid per operand). The slots, and which operands they buffer, follow from replicated data
/// only, so every rank applies the same plans in the same order (empty ones included).
///
/// Order: every buffer is filled before anything is written (the buffers are snapshots); the
/// slabs are evaluated (into the scratch buffer when the destination's storage is read at other
/// positions: NumPy's as-if-through-a-temporary result), then the interior (in place, with the
/// assignment's own aliasing forms), then the slabs copied back. `b`, `how` and `alias` come
/// from resolve over J (shifted operands unbound). Collective (the plans).
template <class Exec, class Td, int M, int Nd, class Mem, class E, std::size_t K, class How>
void assign_split(const Exec& exec, const ArrayView<Td, M, Nd, Mem>& dst, const E& e, const char* fn,
                  ExprState<Td, Mem>& st, const Binding<M, K>& b, const How& how, const Alias& alias,
                  const char* label) {
  const auto& tp = dst.parent();
  const auto& ts = dst.selection();
  const Box<M> box = dst.owned();
  constexpr std::size_t KA = K > 0 ? K : 1;
  // the interior: where every shifted operand reads its own block (clamped into J, so that the
  // frame's slots partition J even when it is empty)
  std::array<unsigned, KA> axes{};  // per operand: the view axes it reads beyond its block along
  unsigned active = 0;
  Box<M> inner = box;
  // the smallest and largest shift along each parent axis (0 without one): with the destination's
  // distribution and selection they fix every rank's interior and slabs (the cache's key)
  std::array<index_t, 2 * Nd> frame{};
  {
    std::size_t t = 0;
    auto narrow = [&](const auto& o) {
      const std::size_t i = t++;
      if constexpr (std::decay_t<decltype(o)>::rank == M) {
        if (how[i] != Access::shifted) return;
        axes[i] = shifted_axes(o, ts);
        active |= axes[i];
        narrow_to_own(o, axes[i], inner);
        if constexpr (std::decay_t<decltype(o.parent())>::rank == Nd) {  // (braced: nvcc 13 needs it)
          for (int a = 0; a < Nd; ++a) {
            const index_t delta = o.selection().start[a] - ts.start[a];
            frame[2 * a] = std::min(frame[2 * a], delta);
            frame[2 * a + 1] = std::max(frame[2 * a + 1], delta);
          }
        }
      }
    };
    visit_terminals(e, narrow);
  }
  for (int k = 0; k < M; ++k) {
    inner.lo[k] = std::min(std::max(inner.lo[k], box.lo[k]), box.hi[k]);
    inner.hi[k] = std::max(std::min(inner.hi[k], box.hi[k]), inner.lo[k]);
  }
  const std::array<Box<M>, 2 * M> slots = frame_slots(box, inner);
  // the buffers, slot by slot (the slots along axes no operand is shifted on are empty on every
  // rank); an operand reads beyond its block in slot 2k or 2k + 1 only along axis k or later
  std::array<std::array<Source<M>, KA>, 2 * M> buffered{};
  {
    const Region region("spmd::expr::shift");
    for (int s = 0; s < 2 * M; ++s) {
      const int k = s / 2;
      if (((active >> k) & 1u) == 0) continue;
      std::size_t t = 0;
      auto fill = [&](const auto& o) {
        const std::size_t i = t++;
        if constexpr (std::decay_t<decltype(o)>::rank == M) {
          if (how[i] != Access::shifted || (axes[i] >> k) == 0) return;
          bool filled = false;
          auto& m = find_broadcast(st, tp, o, ts, dst.shape(), slots[static_cast<std::size_t>(s)], fn,
                                   &slot(o.parent(), Slot::expr), &filled, 1 + s, frame);
          if (!filled) m.plan->apply(exec, o.parent());
          Source<M>& src = buffered[static_cast<std::size_t>(s)][i];
          src.data = m.plan->data();
          for (int d = 0; d < M; ++d) src.coef[d] = o.shape()[d] == 1 ? 0 : m.plan->dcoef()[d];
        }
      };
      visit_terminals(e, fill);
    }
  }
  if (box.empty()) return;
  const auto size = element_sizes(e);
  // the binding of a part: b moved to it, the shifted operands read from the slot's buffers
  // (s >= 0) or in place
  auto part_binding = [&](const Box<M>& part, int s) {
    Binding<M, K> c = rebased(b, size, box, part);
    std::size_t t = 0;
    auto bind_shifted = [&](const auto& o) {
      const std::size_t i = t++;
      if constexpr (std::decay_t<decltype(o)>::rank == M) {
        if (how[i] != Access::shifted) return;
        if (s >= 0 && (axes[i] >> (s / 2)) != 0)
          c.sources[i] = buffered[static_cast<std::size_t>(s)][i];
        else
          c.sources[i] = source_of(o.parent(), halo_selection(o.parent().distribution(), o.selection(), ts), part);
      }
    };
    visit_terminals(e, bind_shifted);
    return c;
  };
  const Source<M> d = source_of(tp, ts, box);
  auto out_of = [&](const Box<M>& part) {
    return DstDev<Td, M>{static_cast<Td*>(const_cast<void*>(d.data)) + part_offset(d.coef, box, part), d.coef};
  };
  const char* boundary = label ? label : "spmd::expr::assign_boundary";
  if (alias.aliased && st.scratch.extent(0) < static_cast<std::size_t>(box.size()))
    st.scratch = Kokkos::View<Td*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::expr::scratch"),
                                        static_cast<std::size_t>(box.size()));
  // the slabs (after the interior's part of the scratch buffer when it is used)
  index_t off = inner.size();
  for (int s = 0; s < 2 * M; ++s) {
    const Box<M>& part = slots[static_cast<std::size_t>(s)];
    if (part.empty()) continue;
    Binding<M, K> c = part_binding(part, s);
    if (alias.aliased) {
      launch_assign(exec, boundary, DstDev<Td, M>{st.scratch.data() + off, compact_coef(part)}, bind(e, c), part,
                    sources_contiguous(c));
      off += part.size();
    } else {
      launch_assign(exec, boundary, out_of(part), bind(e, c), part, contiguous(c, d.coef));
    }
  }
  if (!inner.empty()) {
    Binding<M, K> c = part_binding(inner, -1);
    launch_into(exec, st, out_of(inner), bind(e, c), inner, alias, sources_contiguous(c), label);
  }
  if (!alias.aliased) return;
  off = inner.size();
  for (const Box<M>& part : slots) {
    if (part.empty()) continue;
    launch_assign(exec, "spmd::expr::copy_back", out_of(part),
                  TermDev<Td, M>{st.scratch.data() + off, compact_coef(part)}, part, d.coef[M - 1] == 1);
    off += part.size();
  }
}

/// dst = e on `exec`, dst a view (see expr.hpp's file comment). `state`: the cache to use
/// (default: the destination array's own). `label`: the user's name for the kernels that
/// evaluate e (default: spmd::expr::assign, or assign_lagged / assign_lagged_edges /
/// assign_buffered when dst is read at other positions; the copy back keeps its own name).
template <class Exec, class Td, int M, int Nd, class Mem, class E>
void assign_expr(const Exec& exec, const ArrayView<Td, M, Nd, Mem>& dst, const E& e, const char* fn,
                 ExprState<Td, Mem>* state = nullptr, const char* label = nullptr) {
  static_assert(E::rank <= M, "spmd::assign: the expression has more axes than the destination");
  const auto& tp = dst.parent();
  if (tp.is_null()) throw Error::replicated(str(fn, ": the destination is a null array"));
  // NumPy's `dst[...] = e`: e's shape broadcasts to the destination's (a row (m,) into (n, m)
  // is stretched along axis 0); the destination is never broadcast.
  bool stretched = false;
  if constexpr (E::rank > 0) {
    if constexpr (E::rank == M)
      stretched = !(e.shape() == dst.shape());
    else
      stretched = true;
    if (stretched && !broadcasts_to(e.shape(), dst.shape()))
      throw Error::replicated(str(fn, ": could not broadcast the expression of shape ", np_shape_str(e.shape()),
                                  " into destination ", dst.describe(), " of shape ", np_shape_str(dst.shape())));
  }
  (void)stretched;
  ExprState<Td, Mem>& st = state ? *state : expr_state(tp);
  const Region timer(label ? label : "spmd::expr::assign", KernelName{});
  const Box<M> box = dst.owned();
  // A view of another array that cannot be read in place: one plan straight into the destination.
  auto name = [&] { return "destination " + dst.describe(); };
  if constexpr (is_view<E>::value && std::is_same_v<typename E::value_type, Td> && E::rank == M) {
    if (!stretched && classify(fn, e, tp, dst.selection(), name) != Access::direct) {
      st.epoch = st.clock + 1;
      const Region region("spmd::expr::move");
      find_move(st, tp, e, dst.selection(), fn).plan->apply(exec, tp, e.parent());
      return;
    }
  }
  constexpr std::size_t K = terminal_count<E>::value;
  std::array<Access, (K > 0 ? K : 1)> how{};
  Alias alias;
  auto b = resolve(exec, fn, e, tp, dst.selection(), dst.shape(), box, st, name, alias, how.data());
  for (std::size_t t = 0; t < b.count; ++t)
    if (how[t] == Access::shifted) {
      assign_split(exec, dst, e, fn, st, b, how, alias, label);
      return;
    }
  const auto src = bind(e, b);
  const Source<M> d = source_of(tp, dst.selection(), box);
  launch_into(exec, st, DstDev<Td, M>{static_cast<Td*>(const_cast<void*>(d.data)), d.coef}, src, box, alias,
              sources_contiguous(b), label);
}

/// Binds `e` for a reduction on this rank against the array operand `anchor` (of e's shape: its
/// layout is the reference) and calls run(src, box, contiguous, anchor). Collective (moves may
/// communicate).
template <class Exec, class E, class Anchor, class Run>
auto bind_to_anchor(const Exec& exec, const char* fn, const E& e, const Anchor& anchor, const Run& run) {
  const auto& tp = anchor.parent();
  if (tp.is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
  const Box<Anchor::rank> box = anchor.owned();
  Alias alias;
  auto& st = expr_state(tp);
  auto name = [&] { return "the first operand " + anchor.describe(); };
  auto b = resolve(exec, fn, e, tp, anchor.selection(), anchor.shape(), box, st, name, alias);
  const auto src = bind(e, b);
  Kokkos::Array<index_t, Anchor::rank> unit{};
  unit[Anchor::rank - 1] = 1;
  return run(src, box, contiguous(b, unit), anchor);
}

/// Binds `e` for a reduction on this rank and calls run(src, box, contiguous, anchor): the
/// anchor is the first array operand of e's whole shape (the first operand, unless it is
/// broadcast). When every array operand is broadcast (a column plus a row), the anchor is a new
/// array of e's shape on an automatic distribution that lends its layout only: its storage (of
/// bytes, uninitialised) is never read, and the plans made for it are not kept. Collective.
template <class Exec, class E, class Run>
auto bind_for_reduction(const Exec& exec, const char* fn, const E& e, const Run& run) {
  static_assert(E::rank > 0, "spmd: reductions take an array, a view or an expression");
  constexpr int M = E::rank;
  const auto& first = first_terminal(e);
  using First = std::decay_t<decltype(first)>;
  if constexpr (First::rank == M) {
    if (first.shape() == e.shape()) return bind_to_anchor(exec, fn, e, first, run);
  }
  using Mem = typename First::memory_space;
  using Layout = ArrayView<char, M, M, Mem>;
  using Result = decltype(bind_to_anchor(exec, fn, e, std::declval<const Layout&>(), run));
  constexpr bool none = std::is_void_v<Result>;
  std::optional<std::conditional_t<none, int, Result>> result;
  bool found = false;
  auto try_one = [&](const auto& o) {
    if constexpr (std::decay_t<decltype(o)>::rank == M) {
      if (found || !(o.shape() == e.shape())) return;
      found = true;
      if constexpr (none) {
        bind_to_anchor(exec, fn, e, o, run);
        result.emplace(0);
      } else {
        result.emplace(bind_to_anchor(exec, fn, e, o, run));
      }
    }
  };
  visit_terminals(e, try_one);
  if (!found) {
    if (first.parent().is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
    const Array<char, M, Mem> layout(Distribution<M>(first.comm(), e.shape()), Label{"spmd::reduce::layout"},
                                     Init::none);
    if constexpr (none) {
      bind_to_anchor(exec, fn, e, view_of(layout), run);
      fence(exec, "spmd::reduce: broadcast plans released");  // they go with `layout`
    } else {
      result.emplace(bind_to_anchor(exec, fn, e, view_of(layout), run));
      fence(exec, "spmd::reduce: broadcast plans released");
    }
  }
  if constexpr (!none) return std::move(*result);
}

/// A collective error for a reduction without identity over a zero-size operand.
template <class E>
void require_nonempty_expr(const char* fn, const E& e) {
  if (expr_size(e) == 0)
    throw Error::replicated(str(fn, ": zero-size operand (shape ", shape_str(e.shape()), ") has no ", fn + 6,
                                " (the reduction has no identity)"));
}

/// The communicator of a reduction's operand; a null operand is an error (on the ranks that
/// pass one: a null array has no communicator to agree on). Local.
template <class E>
const Comm& reduction_comm(const char* fn, const E& e) {
  const auto& tp = first_terminal(e).parent();
  if (tp.is_null()) throw Error::replicated(str(fn, ": operand is a null array"));
  return tp.comm();
}

/// Runs the local part of a reduction, run(), and returns its result, or the message of the
/// spmd::Error it threw in `error` (then the identity of rule R). Local.
template <class R, class Run>
typename R::value_type local_part(std::string& error, const Run& run) {
  try {
    return run();
  } catch (const Error& e) {
    error = e.what();
  }
  typename R::value_type identity;
  R::init(identity);
  return identity;
}

/// Reduce map(e) with C over its elements into Acc, on `exec`; the same result on every rank.
/// fn names the public function in errors, label the kernel. `nonempty`: a zero-size operand is
/// an error (a reduction without identity). An argument error found on some ranks only is agreed
/// in the reduction's own MPI_Allreduce (combine_ranks). Collective.
template <Combine C, Map F, class Acc, class Exec, class E>
Acc reduce_expr(const Exec& exec, const char* fn, const char* label, const E& e, bool nonempty = false) {
  const Region timer(label, KernelName{});  // Kokkos Tools sees the kernel of the same name
  const Comm& comm = reduction_comm(fn, e);
  std::string error;
  const Acc local = local_part<Rule<C, Acc>>(error, [&] {
    if (nonempty) require_nonempty_expr(fn, e);
    return bind_for_reduction(exec, fn, e, [&](const auto& src, const auto& box, bool contig, const auto&) {
      return launch_reduce<Rule<C, Acc>, F>(exec, label, src, box, contig);
    });
  });
  return combine_ranks<C>(comm, local, error);
}

/// f(a * b) for `fn` (a dot product: a and b must have one shape, no broadcasting); when the
/// shapes differ on this rank, or building a * b is an error there, fail(message)
/// instead, which takes part in the reduction's combine with the error and throws the agreed
/// spmd::Error (fail_reduction), so that ranks that saw no error are not left waiting. Collective.
template <class A, class B, class Fail, class F>
auto with_product(const char* fn, const A& a, const B& b, const Fail& fail, const F& f) {
  using E = decltype(a * b);
  std::optional<E> e;
  std::string error;
  using NA = node_t<A>;
  using NB = node_t<B>;
  bool same = NA::rank == NB::rank;
  if constexpr (NA::rank == NB::rank) same = as_node(a).shape() == as_node(b).shape();
  if (!same) {
    error = str(fn, ": operand shapes ", shape_str(as_node(a).shape()), " and ", shape_str(as_node(b).shape()),
                " differ (dot takes operands of one shape; it does not broadcast)");
  } else {
    try {
      e.emplace(a * b);
    } catch (const Error& x) {
      error = x.what();
    }
  }
  if (!e) {
    fail(error);
    throw Error(error);  // not reached: fail throws the agreed error
  }
  return f(*e);
}

/// The view index (row-major over e's shape) of e's smallest (Less) or largest element, lowest
/// index first among equals, on `exec`; the same on every rank. A zero-size operand is an error
/// (agreed as in reduce_expr). Collective.
template <bool Less, class Exec, class E>
index_t arg_expr(const Exec& exec, const char* fn, const char* label, const E& e) {
  const Region timer(label, KernelName{});  // Kokkos Tools sees the kernel of the same name
  using V = typename E::value_type;
  using R = ArgRule<V, Less>;
  constexpr int M = E::rank;
  const Comm& comm = reduction_comm(fn, e);
  std::string error;
  const ValueIndex<V> local = local_part<R>(error, [&] {
    require_nonempty_expr(fn, e);
    return bind_for_reduction(exec, fn, e, [&](const auto& src, const Box<M>& box, bool contig, const auto&) {
      Kokkos::Array<index_t, M> coef;
      index_t st = 1, base = 0;
      for (int d = M - 1; d >= 0; --d) {
        coef[d] = st;
        base += box.lo[d] * st;
        st *= e.shape()[d];
      }
      const auto items = BoxItems<M>::template make<Exec>(box.extents());
      using Src = std::decay_t<decltype(src)>;
      if (contig) return reduce_box<R>(exec, label, items, ArgRows<R, Src, M, true>{src, base, coef});
      return reduce_box<R>(exec, label, items, ArgRows<R, Src, M, false>{src, base, coef});
    });
  });
  // the best value (NaN when some rank's is), then the lowest index holding it (a rank's own best
  // index is its first NaN when it has one); a rank without elements takes part with the identity
  const V mine = local.index >= 0 ? local.value : select_identity<V, Less>::value;
  const V best = combine_ranks < Less ? Combine::min : Combine::max > (comm, mine, error);
  const bool holds = local.index >= 0 && (local.value == best || (is_nan(local.value) && is_nan(best)));
  return comm.allreduce(holds ? local.index : std::numeric_limits<index_t>::max(), Op::min);
}

/// spmd::copy(e, opts...): a new array holding e's values on an automatic distribution of its
/// shape over the first operand's communicator. Collective.
template <class E, class... Opts>
auto copy_expr(const E& e, const Opts&... opts) {
  static_assert(E::rank > 0 && terminal_count<E>::value > 0, "spmd::copy: needs an array operand");
  const auto& anchor = first_terminal(e);
  using Mem = typename std::decay_t<decltype(anchor)>::memory_space;
  using T = typename E::value_type;
  auto out = make_array<T, Mem>("spmd::copy", anchor.comm(), e.shape(), Init::none, opts...);
  ExprState<T, Mem> once;  // plans for a one-off copy are not kept
  assign_expr(typename Mem::execution_space(), view_of(out), e, "spmd::copy", &once);
  return out;
}

}  // namespace spmd::impl
