#pragma once
// Per-axis reductions, implementation: the axes a call names (checked), the groups of ranks that
// share the other grid coordinates (a sub-communicator), the local kernel (on the kernel layer),
// and the combination among the ranks of a group.
//
// Layout of a reduction's result: the operand's process grid, with extent 1 along each reduced
// axis (NumPy's keepdims shape). Balanced blocks give the rank at grid coordinate 0 along the
// reduced axes the one index there, and it owns the block of the kept axes that the operand's
// ranks of its group own: the group reduces onto it (MPI_Reduce on the sub-communicator) and
// no data moves along the kept axes. Without keepdims the reduced axes are then dropped by a
// move onto an automatic distribution of the smaller shape (one exchange).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/expr_eval.hpp"
#include "spmd/impl/kernels.hpp"
#include "spmd/math.hpp"

namespace spmd::impl {

/// The reduced axes as a mask, from a list that may count from the end (-1 is the last axis).
/// Throws the same spmd::Error on every rank (the arguments are replicated) for an axis out of
/// range or named twice, naming the shape. Local.
template <int N, std::size_t K>
std::array<bool, N> axis_mask(const char* fn, const std::array<int, K>& list, const Index<N>& shape) {
  std::array<bool, N> mask{};
  for (const int a0 : list) {
    const int a = a0 < 0 ? a0 + N : a0;
    if (a < 0 || a >= N)
      throw Error::replicated(
          str(fn, ": axis ", a0, " is out of bounds for an operand of shape ", shape_str(shape), " (", N, " axes)"));
    if (mask[a]) throw Error::replicated(str(fn, ": axis ", a0, " is named twice (shape ", shape_str(shape), ")"));
    mask[a] = true;
  }
  return mask;
}

/// The sub-communicator of the ranks that share this rank's grid coordinates along the axes
/// where `mask` is false, ordered by their coordinates along the others (row-major): key 0 is the
/// rank at coordinate 0 along every masked axis. Collective over d's communicator (one
/// MPI_Comm_split; not cached: a cache must make the same hit-or-miss decision on every rank of
/// the communicator, and would keep communicators alive).
template <int N>
Comm axis_group(const Distribution<N>& d, const std::common_type_t<std::array<bool, N>>& mask) {
  int color = 0, key = 0;
  for (int a = 0; a < N; ++a) {
    if (mask[a])
      key = key * d.dims()[a] + d.coords()[a];
    else
      color = color * d.dims()[a] + d.coords()[a];
  }
  return d.comm().split(color, key);
}

/// The local fold of a per-axis reduction: for each point of the output box (the operand's box
/// with extent 1 along the reduced axes), rule R over the reduced points of map F of the values;
/// with `center`, of (value - center[o] / cdiv)^2 instead (the second pass of a variance).
template <class R, Map F, class Src, int N, bool Contig>
struct AxisPartial {
  using Acc = typename R::value_type;
  Src src;
  Acc* out;                        // compact (row-major) over the output box oext
  Kokkos::Array<index_t, N> oext;  // the operand's box with extent 1 along reduced axes
  Kokkos::Array<index_t, N> rext;  // the box's extents along reduced axes, 1 along the others
  index_t outer;                   // product of rext over the axes before the last
  bool last_reduced;
  const Acc* center;  // nullptr, or the sums whose means are subtracted
  Acc cdiv;
  template <class V>
  KOKKOS_FORCEINLINE_FUNCTION void add(Acc& acc, const V v, const Acc c) const {
    if constexpr (F == Map::nonzero && is_complex_v<V>) {
      R::add(acc, static_cast<Acc>(v == V(0) ? 0 : 1));  // a complex value is true when nonzero
    } else if constexpr (F == Map::nonzero) {
      R::add(acc, static_cast<Acc>(v ? 1 : 0));
    } else {
      if (center) {
        const Acc d = static_cast<Acc>(v) - c;
        R::add(acc, d * d);
      } else {
        R::add(acc, static_cast<Acc>(v));
      }
    }
  }
  /// Values folded into each output point on this rank: the reduced rows, times the row length
  /// when the last axis is reduced too.
  index_t reduced_count() const { return last_reduced ? outer * rext[N - 1] : outer; }
  /// The reduced points' row (p with p[N-1] = 0) of reduced point t of output point o.
  KOKKOS_FORCEINLINE_FUNCTION Kokkos::Array<index_t, N> reduced_row(const Kokkos::Array<index_t, N>& o,
                                                                    index_t t) const {
    Kokkos::Array<index_t, N> p = o;
    for (int d = N - 2; d >= 0; --d)
      if (rext[d] != 1) {
        p[d] = t % rext[d];
        t /= rext[d];
      }
    p[N - 1] = 0;
    return p;
  }
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi) const {
    if (!last_reduced && hi - lo > 1) {
      // A host row chunk of output points, the last axis kept: stream each reduced row once,
      // contiguously, folding into the chunk's results in place (they stay in cache). (Point
      // by point, each output point would walk its own column: one cache line per value.)
      Kokkos::Array<index_t, N> o = k;
      o[N - 1] = lo;
      index_t at = 0;
      for (int d = 0; d < N; ++d) at = at * oext[d] + o[d];
      Acc* res = out + at - lo;  // res[i]: output point i of the row
      for (index_t i = lo; i < hi; ++i) R::init(res[i]);
      index_t t = 0;
      if (!center) {
        // four rows at a time: one load and one store of each result per four values (the
        // values are loaded first: the compiler cannot know that the rows and results differ)
        for (; t + 4 <= outer; t += 4) {
          const auto r0 = row_at<Contig>(src, reduced_row(o, t));
          const auto r1 = row_at<Contig>(src, reduced_row(o, t + 1));
          const auto r2 = row_at<Contig>(src, reduced_row(o, t + 2));
          const auto r3 = row_at<Contig>(src, reduced_row(o, t + 3));
          for (index_t i = lo; i < hi; ++i) {
            const auto v0 = r0(i), v1 = r1(i), v2 = r2(i), v3 = r3(i);
            Acc r = res[i];
            add(r, v0, Acc(0));
            add(r, v1, Acc(0));
            add(r, v2, Acc(0));
            add(r, v3, Acc(0));
            res[i] = r;
          }
        }
      }
      for (; t < outer; ++t) {
        const auto row = row_at<Contig>(src, reduced_row(o, t));
        if (center) {
          for (index_t i = lo; i < hi; ++i) add(res[i], row(i), center[at - lo + i] / cdiv);
        } else {
          for (index_t i = lo; i < hi; ++i) add(res[i], row(i), Acc(0));
        }
      }
      return;
    }
    for (index_t i = lo; i < hi; ++i) {
      Kokkos::Array<index_t, N> o = k;
      o[N - 1] = i;
      index_t at = 0;
      for (int d = 0; d < N; ++d) at = at * oext[d] + o[d];
      const Acc c = center ? center[at] / cdiv : Acc(0);
      Acc acc;
      R::init(acc);
      for (index_t t = 0; t < outer; ++t) {
        const auto row = row_at<Contig>(src, reduced_row(o, t));
        if (last_reduced) {
          // four partial results: independent chains the CPU can overlap (and vectorise)
          Acc a1, a2, a3;
          R::init(a1);
          R::init(a2);
          R::init(a3);
          const index_t m = rext[N - 1];
          index_t j = 0;
          for (; j + 4 <= m; j += 4) {
            add(acc, row(j), c);
            add(a1, row(j + 1), c);
            add(a2, row(j + 2), c);
            add(a3, row(j + 3), c);
          }
          for (; j < m; ++j) add(acc, row(j), c);
          R::join(a1, a3);
          R::join(acc, a2);
          R::join(acc, a1);
        } else {
          add(acc, row(i), c);
        }
      }
      out[at] = acc;
    }
  }
};

/// Rule R as a Kokkos reducer (for the lanes of a vector group, which fold their partial results
/// by shuffles on a GPU). Device-callable.
template <class R>
struct RuleReducer {
  using reducer = RuleReducer;
  using value_type = typename R::value_type;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  value_type* value;
  KOKKOS_INLINE_FUNCTION explicit RuleReducer(value_type& v) : value(&v) {}
  KOKKOS_INLINE_FUNCTION void join(value_type& a, const value_type& b) const { R::join(a, b); }
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, const volatile value_type& b) const { R::join(a, b); }
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const { R::init(v); }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(value); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

/// How the device form of a per-axis fold divides its work: each output point's `len` reduced
/// values into `chunks` chunks of `per` values (the last may have fewer), each chunk folded by one
/// vector group of `lanes` lanes (consecutive values go to consecutive lanes: coalesced loads when
/// the last axis is reduced), `team` vector groups to a team. A GPU has about 2^18 threads to
/// fill: few output points get many chunks (a 16-column sum over a million rows is 16 x 16384
/// chunks, not 16 threads), many output points one chunk each.
struct AxisWork {
  index_t n = 0, len = 0, chunks = 1, per = 0;
  int lanes = 1, team = 1;
  /// `n` output points of `len` values; `vector`: the values of a point are consecutive in
  /// memory (lanes up to 32), else one lane; `host`: a host space (the form run under a testing
  /// knob: one group per team, the lanes run in turn).
  static AxisWork make(index_t n, index_t len, bool vector, bool host) {
    constexpr index_t threads = index_t(1) << 18, min_per_lane = 4;
    AxisWork w;
    w.n = n;
    w.len = len;
    if (vector)
      while (w.lanes < 32 && index_t(w.lanes) * 2 * min_per_lane <= len) w.lanes *= 2;
    const index_t want = (threads / w.lanes + n - 1) / (n > 0 ? n : 1);  // chunks per point wanted
    const index_t most = len / (index_t(w.lanes) * min_per_lane);        // chunks of >= 4 per lane
    w.chunks = want < most ? want : most;
    if (w.chunks < 1) w.chunks = 1;
    w.per = len > 0 ? (len + w.chunks - 1) / w.chunks : 0;
    if (w.per > 0) w.chunks = (len + w.per - 1) / w.per;  // no empty chunk
    w.team = host ? 1 : 256 / w.lanes;
    return w;
  }
  KOKKOS_INLINE_FUNCTION index_t items() const { return n * chunks; }
  /// Whether the device fold of `n` output points of `len` values each is chunked, as measured on
  /// an H100 (docs/performance.md): with the last axis kept, when there are fewer than 4096 output
  /// points (a sum of 16 columns over 2^20 rows: 549 ms as 16 threads, 0.86 ms chunked; 4096
  /// columns: 2.6 ms as 4096 threads, slower chunked); with it reduced, when each point has at
  /// least 256 values (4096 x 4096: 0.70 ms as a thread per row, 0.48 ms chunked; rows of 16: 0.65
  /// ms as a thread per row, 0.90 ms chunked).
  static bool chunked(index_t n, index_t len, bool last_reduced) { return last_reduced ? len >= 256 : n < 4096; }
  index_t league() const { return (items() + team - 1) / team; }
};

/// The device form of a per-axis reduction's local fold (GPUs; host spaces only under
/// Forms::point_items): chunk c of output point q folded by one vector group into
/// part[q * chunks + c]. When the last axis is reduced, a chunk is a run of the point's reduced
/// values in row order and adjacent lanes read adjacent values; when it is kept, adjacent groups
/// (one lane each) take adjacent output points, which lie side by side in memory.
template <class R, Map F, class Src, int N, bool Contig, class Exec>
struct AxisChunks {
  using Acc = typename R::value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  AxisPartial<R, F, Src, N, Contig> fold;  // the operand, the boxes, add() and reduced_row()
  Acc* part;
  AxisWork w;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& m) const {
    const index_t item = index_t(m.league_rank()) * w.team + m.team_rank();
    if (item >= w.items()) return;
    index_t q, c;  // the output point and the chunk
    if (fold.last_reduced) {
      q = item / w.chunks;
      c = item - q * w.chunks;
    } else {
      c = item / w.n;
      q = item - c * w.n;
    }
    Kokkos::Array<index_t, N> o;
    index_t r = q;
    for (int d = N - 1; d >= 0; --d) {
      o[d] = r % fold.oext[d];
      r /= fold.oext[d];
    }
    const Acc cen = fold.center ? fold.center[q] / fold.cdiv : Acc(0);
    const index_t lo = c * w.per, hi = lo + w.per < w.len ? lo + w.per : w.len;
    Acc acc;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(m, w.lanes),
        [&](const int lane, Acc& a) {
          if (fold.last_reduced) {
            const index_t L = fold.rext[N - 1];
            index_t u = lo + lane;  // value u of the point: row u / L, position u % L in it
            while (u < hi) {
              const index_t t = u / L;
              const auto row = row_at<Contig>(fold.src, fold.reduced_row(o, t));
              const index_t end = (t + 1) * L < hi ? (t + 1) * L : hi;
              for (; u < end; u += w.lanes) fold.add(a, row(u - t * L), cen);
            }
          } else {
            for (index_t t = lo + lane; t < hi; t += w.lanes)
              fold.add(a, row_at<Contig>(fold.src, fold.reduced_row(o, t))(o[N - 1]), cen);
          }
        },
        RuleReducer<R>(acc));
    Kokkos::single(Kokkos::PerThread(m), [&] { part[q * w.chunks + c] = acc; });
  }
};

/// out[q] = the fold (rule R) of part[q * chunks ...][chunks]: the chunks of AxisChunks, one
/// vector group per output point.
template <class R, class Exec>
struct AxisJoinChunks {
  using Acc = typename R::value_type;
  using Member = typename Kokkos::TeamPolicy<Exec>::member_type;
  const Acc* part;
  Acc* out;
  AxisWork w;  // n output points of len = the chunks of the first pass
  KOKKOS_INLINE_FUNCTION void operator()(const Member& m) const {
    const index_t q = index_t(m.league_rank()) * w.team + m.team_rank();
    if (q >= w.n) return;
    Acc acc;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(m, w.lanes),
        [&](const int lane, Acc& a) {
          for (index_t c = lane; c < w.len; c += w.lanes) R::join(a, part[q * w.len + c]);
        },
        RuleReducer<R>(acc));
    Kokkos::single(Kokkos::PerThread(m), [&] { out[q] = acc; });
  }
};

/// The device form of the fold (see AxisChunks) into `into` (n results), on `exec`: one kernel,
/// and a second that joins the chunks when a point has several. Asynchronous. Local.
template <class R, Map F, class Src, int N, bool Contig, class Exec, class Mem>
void fold_axes_device(const Exec& exec, const char* label, const AxisPartial<R, F, Src, N, Contig>& fold,
                      const Kokkos::View<typename R::value_type*, Mem>& into) {
  using Acc = typename R::value_type;
  const index_t n = static_cast<index_t>(into.extent(0));
  const index_t len = fold.reduced_count();
  if (n == 0) return;
  const bool host = host_accessible<Mem>();
  const AxisWork w = AxisWork::make(n, len, fold.last_reduced, host);
  const auto policy = [&](const AxisWork& v) {
    return Kokkos::TeamPolicy<Exec>(exec, static_cast<int>(v.league()), v.team, host ? 1 : v.lanes);
  };
  if (w.chunks == 1) {
    Kokkos::parallel_for(label, policy(w), AxisChunks<R, F, Src, N, Contig, Exec>{fold, into.data(), w});
    return;
  }
  const Kokkos::View<Acc*, Mem> part(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::reduce::axis_chunks"),
                                     static_cast<std::size_t>(w.items()));
  Kokkos::parallel_for(label, policy(w), AxisChunks<R, F, Src, N, Contig, Exec>{fold, part.data(), w});
  AxisWork j = AxisWork::make(n, w.chunks, true, host);
  j.chunks = 1;  // one vector group reads all the chunks of a point
  Kokkos::parallel_for(label, policy(j), AxisJoinChunks<R, Exec>{part.data(), into.data(), j});
  fence(exec, "spmd::reduce (per axis): chunk results released");
}

}  // namespace spmd::impl

namespace spmd::impl {

/// What a per-axis reduction computes from its fold: the fold itself, the mean, or the variance
/// or standard deviation (a second pass around the means; divided by count - ddof).
enum class Moment { none, mean, var, std };

/// The divisor of a variance of `count` values: NumPy's max(count - ddof, 0), so ddof >= count
/// gives inf (NaN for 0 / 0), never a negative variance. Local.
inline index_t var_divisor(index_t count, index_t ddof) {
  return std::max<index_t>(count - ddof, 0);
}

/// out[t] = Out(part[t] / div), or its square root (std).
template <class Out, class Acc>
struct AxisStore {
  Out* out;
  const Acc* part;
  Acc div;
  bool divide, root;
  KOKKOS_INLINE_FUNCTION void operator()(const index_t t) const {
    const Acc v = divide ? part[t] / div : part[t];
    if constexpr (std::is_floating_point_v<Acc>) {
      out[t] = static_cast<Out>(root ? math::sqrt(v) : v);
    } else {
      out[t] = static_cast<Out>(v);
    }
  }
};

/// Combines a group's partial blocks (host-staged): onto its rank 0 (MPI_Reduce), or onto every
/// member (`all`: MPI_Allreduce). Collective over `group`.
template <Combine C, class Exec, class Acc, class Mem>
void combine_group(const Exec& exec, const char* fn, const Comm& group, const Kokkos::View<Acc*, Mem>& part, bool all) {
  const index_t n = static_cast<index_t>(part.extent(0));
  if (group.size() <= 1 || n == 0) return;
  auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), part);
  Kokkos::deep_copy(exec, host, part);
  fence(exec, "spmd::reduce (per axis) before MPI_Reduce");
  const ReductionOp<C, Acc> reduction(fn);  // min / max: NumPy's NaN rule (impl/select.hpp)
  const MPI_Op op = reduction.get();
  const int count = static_cast<int>(n);
  if (all) {
    SPMD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, host.data(), count, mpi_type<Acc>(), op, group.raw()), fn);
  } else {
    const bool root = group.rank() == 0;
    SPMD_MPI_CHECK(MPI_Reduce(root ? MPI_IN_PLACE : host.data(), root ? host.data() : nullptr, count, mpi_type<Acc>(),
                              op, 0, group.raw()),
                   fn);
    if (!root) return;
  }
  Kokkos::deep_copy(exec, part, host);
  fence(exec, "spmd::reduce (per axis): staging released");
}

/// The reduction (rule C of map F into Acc, stored as Out, finished as `moment` says with
/// `ddof`) of e over the axes in `mask`, in NumPy's keepdims shape, laid out as the file comment
/// says, on `exec`. Collective over e's communicator.
template <Combine C, Map F, class Acc, class Out, class Exec, class E>
Array<Out, E::rank, typename E::memory_space> reduce_axes_keep(const Exec& exec, const char* fn, const char* label,
                                                               const E& e, const std::array<bool, E::rank>& mask,
                                                               Moment moment, index_t ddof = 0) {
  constexpr int N = E::rank;
  using Mem = typename E::memory_space;
  const auto& anchor = first_terminal(e);
  using Anchor = std::decay_t<decltype(anchor)>;
  if constexpr (Anchor::parent_type::rank != N) {
    // the first operand drops axes of its array: reduce a copy laid out on its own
    const auto whole = copy_expr(e);
    return reduce_axes_keep<C, F, Acc, Out>(exec, fn, label, view_of(whole), mask, moment, ddof);
  } else {
    const auto& parent = anchor.parent();
    if (!(parent.shape() == e.shape() && same_selection(anchor.selection(), Selection<N, N>::identity()))) {
      const auto whole = copy_expr(e);  // a slice: reduce a copy laid out on its own
      return reduce_axes_keep<C, F, Acc, Out>(exec, fn, label, view_of(whole), mask, moment, ddof);
    }
    const Distribution<N>& d = parent.distribution();
    Index<N> oshape{};
    index_t count = 1;  // elements folded into each result
    bool empty_out = false;
    for (int a = 0; a < N; ++a) {
      oshape[a] = mask[a] ? 1 : e.shape()[a];
      if (mask[a]) count *= e.shape()[a];
      empty_out = empty_out || oshape[a] == 0;
    }
    if ((C == Combine::min || C == Combine::max) && count == 0 && !empty_out)
      throw Error::replicated(str(fn, ": zero-size reduction over the axes of an operand of shape ",
                                  shape_str(e.shape()), " (the reduction has no identity)"));
    Array<Out, N, Mem> out(
        Distribution<N>(d.comm(), oshape, ProcessGrid{std::vector<int>(d.dims().begin(), d.dims().end())}),
        Label{label}, Init::none);
    // (the distribution's box, not the view's: an empty view box may lose its other extents)
    const Box<N> box = d.owned();
    Kokkos::Array<index_t, N> oext, rext;
    index_t outer = 1, n = 1;
    for (int a = 0; a < N; ++a) {
      oext[a] = mask[a] ? 1 : box.extent(a);
      rext[a] = mask[a] ? box.extent(a) : 1;
      if (a < N - 1) outer *= rext[a];
      n *= oext[a];
    }
    const bool second = moment == Moment::var || moment == Moment::std;
    auto make = [&](const char* what) {
      return Kokkos::View<Acc*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(what)),
                                     static_cast<std::size_t>(n));
    };
    Kokkos::View<Acc*, Mem> part = make("spmd::reduce::axis_partial"), sums;
    auto fold = [&](const Kokkos::View<Acc*, Mem>& into, const Acc* center) {
      using R = Rule<C, Acc>;
      bind_for_reduction(exec, fn, e, [&](const auto& src, const auto&, bool contig, const auto&) {
        using Src = std::decay_t<decltype(src)>;
        const auto items = BoxItems<N>::template make<Exec>(oext);
        const bool last = mask[N - 1];
        const Acc cdiv = static_cast<Acc>(count);
        // host spaces: row chunks of output points; a GPU: a thread per output point, or chunks
        // of the reduced values over vector groups where that leaves the GPU idle or reads
        // long rows uncoalesced (AxisWork::chunked)
        const bool device_form = forms<Mem>().point_items;
        const auto run = [&](auto contig_tag) {
          constexpr bool Contig = decltype(contig_tag)::value;
          const AxisPartial<R, F, Src, N, Contig> body{src, into.data(), oext, rext, outer, last, center, cdiv};
          if (device_form && AxisWork::chunked(items.points, body.reduced_count(), last))
            fold_axes_device(exec, label, body, into);
          else
            for_box(exec, label, items, body);
        };
        if (contig)
          run(std::true_type{});
        else
          run(std::false_type{});
      });
    };
    const Comm group = axis_group(d, mask);
    fold(part, nullptr);
    if (second) {  // every member needs the group's sums, then folds the squares around the means
      combine_group<C>(exec, fn, group, part, true);
      sums = part;
      part = make("spmd::reduce::axis_partial_squares");
      fold(part, sums.data());
    }
    combine_group<C>(exec, fn, group, part, false);
    const index_t mine = out.owned().size();
    if (mine > 0) {
      const index_t div = second ? var_divisor(count, ddof) : count;
      AxisStore<Out, Acc> store{out.local_with_halo().data(), part.data(), static_cast<Acc>(div),
                                moment != Moment::none, moment == Moment::std};
      Kokkos::parallel_for(label, ItemPolicy<Exec>(exec, 0, mine), store);
    }
    if (second) fence(exec, "spmd::reduce (per axis): sums released");
    return out;
  }
}

/// The keepdims result with the reduced axes dropped: a new array on an automatic distribution
/// of the kept shape (one move). Collective.
template <int K, class T, int N, class Mem>
Array<T, N - K, Mem> drop_axes(const Array<T, N, Mem>& keep, const std::common_type_t<std::array<bool, N>>& mask) {
  constexpr int M = N - K;
  Selection<N, M> sel{};
  Index<M> shape{};
  int j = 0;
  for (int a = 0; a < N; ++a) {
    sel.start[a] = 0;
    sel.step[a] = 1;
    sel.map[a] = mask[a] ? -1 : j;
    if (!mask[a]) shape[j++] = keep.shape()[a];
  }
  return copy_expr(ArrayView<T, M, N, Mem>(keep, sel, shape));
}

}  // namespace spmd::impl

namespace spmd::impl {

/// The local fold of a per-axis argmin/argmax: for each point of the output box (the operand's
/// box with extent 1 along `axis`), the best value and its global index along the axis (-1 for
/// an empty block along the axis). Body of for_box over the output box.
template <bool Less, class V, class Src, int N, bool Contig>
struct AxisArgPartial {
  Src src;
  V* val;                          // compact (row-major) over the output box oext
  index_t* idx;                    // the same
  Kokkos::Array<index_t, N> oext;  // the operand's box with extent 1 along the axis
  int axis;
  index_t len;  // the box's extent along the axis
  index_t lo;   // the box's first global index along the axis
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t a, const index_t b) const {
    for (index_t i = a; i < b; ++i) {
      Kokkos::Array<index_t, N> o = k;
      o[N - 1] = i;
      index_t at = 0;
      for (int d = 0; d < N; ++d) at = at * oext[d] + o[d];
      V best{};
      index_t where = -1;
      for (index_t j = 0; j < len; ++j) {
        Kokkos::Array<index_t, N> p = o;
        p[axis] = j;
        const index_t col = p[N - 1];
        p[N - 1] = 0;
        const auto row = row_at<Contig>(src, p);
        const V x = static_cast<V>(row(col));
        if (arg_beats<Less>(x, lo + j, best, where)) {
          best = x;
          where = lo + j;
        }
      }
      val[at] = best;
      idx[at] = where;
    }
  }
};

/// argmin (Less) or argmax of e along the one axis in `mask` (global indices along it, first
/// occurrence, NaN first), in NumPy's keepdims shape laid out as reduce_axes_keep's results, on
/// `exec`. The ranks along the axis gather their partial blocks (values and indices) onto the
/// one at grid coordinate 0 (MPI_Gather on the sub-communicator), which keeps the best of each.
/// Collective over e's communicator.
template <bool Less, class Exec, class E>
Array<index_t, E::rank, typename E::memory_space> arg_axis_keep(const Exec& exec, const char* fn, const char* label,
                                                                const E& e, const std::array<bool, E::rank>& mask) {
  constexpr int N = E::rank;
  using Mem = typename E::memory_space;
  using V = typename E::value_type;
  const auto& anchor = first_terminal(e);
  using Anchor = std::decay_t<decltype(anchor)>;
  if constexpr (Anchor::parent_type::rank != N) {
    const auto whole = copy_expr(e);  // the first operand drops axes of its array: a copy
    return arg_axis_keep<Less>(exec, fn, label, view_of(whole), mask);
  } else {
    const auto& parent = anchor.parent();
    if (!(parent.shape() == e.shape() && same_selection(anchor.selection(), Selection<N, N>::identity()))) {
      const auto whole = copy_expr(e);  // a slice: reduce a copy laid out on its own
      return arg_axis_keep<Less>(exec, fn, label, view_of(whole), mask);
    }
    const Distribution<N>& d = parent.distribution();
    int axis = 0;
    Index<N> oshape{};
    bool empty_out = false;
    for (int a = 0; a < N; ++a) {
      if (mask[a]) axis = a;
      oshape[a] = mask[a] ? 1 : e.shape()[a];
      empty_out = empty_out || oshape[a] == 0;
    }
    if (e.shape()[axis] == 0 && !empty_out)
      throw Error::replicated(str(fn, ": attempt to get ", fn + 6, " of an empty sequence (axis ", axis, " of shape ",
                                  shape_str(e.shape()), " has length 0)"));
    Array<index_t, N, Mem> out(
        Distribution<N>(d.comm(), oshape, ProcessGrid{std::vector<int>(d.dims().begin(), d.dims().end())}),
        Label{label}, Init::none);
    const Box<N> box = d.owned();
    Kokkos::Array<index_t, N> oext;
    index_t n = 1;
    for (int a = 0; a < N; ++a) {
      oext[a] = mask[a] ? 1 : box.extent(a);
      n *= oext[a];
    }
    const Comm group = axis_group(d, mask);
    // MPI counts are int: agreed on the whole communicator (groups differ in block sizes)
    d.comm().check(static_cast<double>(n) * group.size() <= 2147483647.0,
                   str(fn, ": a partial block of ", n, " results x ", group.size(),
                       " ranks is larger than MPI's int count (use more ranks across the kept axes)"));
    Kokkos::View<V*, Mem> val(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::reduce::arg_values")),
                              static_cast<std::size_t>(n));
    Kokkos::View<index_t*, Mem> idx(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::reduce::arg_indices")),
        static_cast<std::size_t>(n));
    // (every rank binds: other operands of the expression may move)
    bind_for_reduction(exec, fn, e, [&](const auto& src, const auto&, bool contig, const auto&) {
      using Src = std::decay_t<decltype(src)>;
      const auto items = BoxItems<N>::template make<Exec>(oext);
      const index_t len = box.extent(axis), lo = box.lo[axis];
      if (contig)
        for_box(exec, label, items,
                AxisArgPartial<Less, V, Src, N, true>{src, val.data(), idx.data(), oext, axis, len, lo});
      else
        for_box(exec, label, items,
                AxisArgPartial<Less, V, Src, N, false>{src, val.data(), idx.data(), oext, axis, len, lo});
    });
    if (group.size() > 1 && n > 0) {
      auto hv = Kokkos::create_mirror_view(Kokkos::HostSpace(), val);
      auto hi = Kokkos::create_mirror_view(Kokkos::HostSpace(), idx);
      Kokkos::deep_copy(exec, hv, val);
      Kokkos::deep_copy(exec, hi, idx);
      fence(exec, "spmd::reduce (argmin/argmax per axis) before MPI_Gather");
      const bool root = group.rank() == 0;
      const std::size_t all = root ? static_cast<std::size_t>(n) * static_cast<std::size_t>(group.size()) : 0;
      // (Views, not std::vector: argmax of a bool mask is common, and vector<bool> has no data())
      Kokkos::View<V*, Kokkos::HostSpace> gv(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::reduce::arg_gv"),
                                             all);
      Kokkos::View<index_t*, Kokkos::HostSpace> gi(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::reduce::arg_gi"), all);
      const int count = static_cast<int>(n);
      SPMD_MPI_CHECK(MPI_Gather(hv.data(), count, mpi_type<V>(), gv.data(), count, mpi_type<V>(), 0, group.raw()), fn);
      SPMD_MPI_CHECK(
          MPI_Gather(hi.data(), count, mpi_type<index_t>(), gi.data(), count, mpi_type<index_t>(), 0, group.raw()), fn);
      if (root) {
        for (int r = 1; r < group.size(); ++r)
          for (index_t t = 0; t < n; ++t) {
            const std::size_t s =
                static_cast<std::size_t>(r) * static_cast<std::size_t>(n) + static_cast<std::size_t>(t);
            if (gi(s) >= 0 && arg_beats<Less>(gv(s), gi(s), hv(t), hi(t))) {
              hv(t) = gv(s);
              hi(t) = gi(s);
            }
          }
        Kokkos::deep_copy(exec, idx, hi);
        fence(exec, "spmd::reduce (argmin/argmax per axis): staging released");
      }
    }
    const index_t mine = out.owned().size();
    if (mine > 0) {
      const Kokkos::View<index_t*, Mem, Kokkos::MemoryUnmanaged> dst(out.local_with_halo().data(),
                                                                     static_cast<std::size_t>(mine));
      Kokkos::deep_copy(exec, dst, Kokkos::subview(idx, std::make_pair(index_t(0), mine)));
    }
    return out;
  }
}

}  // namespace spmd::impl
