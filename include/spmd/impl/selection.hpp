#pragma once
// Affine selections of an N-d index space, the core of slicing and of every redistribution: a
// destination index j (rank M) reads source index i with i[a] = start[a] + step[a] * j[map[a]]
// (kept axes) or i[a] = start[a] (dropped axes). Local computations only.

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "spmd/box.hpp"
#include "spmd/error.hpp"

namespace spmd::impl {

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

}  // namespace spmd::impl
