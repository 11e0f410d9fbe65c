#pragma once
/// \file box.hpp
/// spmd::Box<N>: a half-open box of global indices, [lo, hi) along every axis. All Local.

#include <algorithm>
#include <array>
#include <ostream>

#include "spmd/types.hpp"

namespace spmd {

/// Half-open box [lo, hi) of global indices, N axes. Local.
template <int N>
struct Box {
  static_assert(N >= 1, "spmd::Box: N must be at least 1");
  Index<N> lo{};  ///< first index along each axis
  Index<N> hi{};  ///< one past the last index along each axis

  /// Length along axis d (0 when empty). Local.
  index_t extent(int d) const { return std::max<index_t>(0, hi[d] - lo[d]); }
  /// Extents along every axis. Local.
  Index<N> extents() const {
    Index<N> e{};
    for (int d = 0; d < N; ++d) e[d] = extent(d);
    return e;
  }
  /// Number of indices in the box. Local.
  index_t size() const {
    index_t s = 1;
    for (int d = 0; d < N; ++d) s *= extent(d);
    return s;
  }
  /// Local.
  bool empty() const { return size() == 0; }
  /// Local.
  bool contains(const Index<N>& i) const {
    for (int d = 0; d < N; ++d)
      if (i[d] < lo[d] || i[d] >= hi[d]) return false;
    return true;
  }
  /// The common part of two boxes (empty when they do not meet). Local.
  Box intersect(const Box& o) const {
    Box r;
    for (int d = 0; d < N; ++d) {
      r.lo[d] = std::max(lo[d], o.lo[d]);
      r.hi[d] = std::max(r.lo[d], std::min(hi[d], o.hi[d]));
    }
    return r;
  }
  /// The box moved by `by`. Local.
  Box shift(const Index<N>& by) const {
    Box r = *this;
    for (int d = 0; d < N; ++d) {
      r.lo[d] += by[d];
      r.hi[d] += by[d];
    }
    return r;
  }
  /// Row-major position of global index i inside the box (i must be contained). Local.
  index_t offset_of(const Index<N>& i) const {
    index_t off = 0;
    for (int d = 0; d < N; ++d) off = off * extent(d) + (i[d] - lo[d]);
    return off;
  }
  /// Same corners. Local.
  bool operator==(const Box& o) const { return lo == o.lo && hi == o.hi; }
  /// Different corners. Local.
  bool operator!=(const Box& o) const { return !(*this == o); }
};

/// Call f(index) for every index of the box in row-major order (host loop). Local.
template <int N, class F>
void for_each_index(const Box<N>& b, F&& f) {
  if (b.empty()) return;
  Index<N> i = b.lo;
  while (true) {
    f(static_cast<const Index<N>&>(i));
    int d = N - 1;
    while (d >= 0) {
      if (++i[d] < b.hi[d]) break;
      i[d] = b.lo[d];
      --d;
    }
    if (d < 0) return;
  }
}

/// Prints `[lo0:hi0, lo1:hi1)`. Local.
template <int N>
std::ostream& operator<<(std::ostream& os, const Box<N>& b) {
  os << '[';
  for (int d = 0; d < N; ++d) os << (d ? ", " : "") << b.lo[d] << ':' << b.hi[d];
  return os << ')';
}

}  // namespace spmd
