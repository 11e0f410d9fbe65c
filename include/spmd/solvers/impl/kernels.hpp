#pragma once
// Fused vector kernels of the Krylov solvers: each iteration's vector updates run as few passes
// over memory as the algorithm allows, and the local parts of its dot products are summed in the
// same pass (several sums in one reduction), ready for one MPI_Allreduce.
//
// The kernels run over the owned points of the solver's vectors (N-d, with or without halo), on
// a default instance of the vectors' execution space. Bodies are functors (CUDA: no generic
// device lambdas).

#include <Kokkos_Core.hpp>

#include <array>
#include <string>
#include <utility>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/box.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::solvers::impl {

using spmd::impl::int_t;

/// K partial sums reduced together (one Kokkos reduction, then one MPI_Allreduce of K numbers).
template <class T, int K>
struct Sums {
  T v[K];
};

/// parallel_for functor over N local indices: body(i...).
template <class Body, class Seq>
struct ForPoints;
template <class Body, std::size_t... D>
struct ForPoints<Body, std::index_sequence<D...>> {
  Body body;
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const int_t<D>... i) const { body(i...); }
};

/// parallel_reduce functor over N local indices summing K values: body(sums, i...).
template <class Body, class T, int K, class Seq>
struct SumPoints;
template <class Body, class T, int K, std::size_t... D>
struct SumPoints<Body, T, K, std::index_sequence<D...>> {
  using value_type = Sums<T, K>;
  Body body;
  KOKKOS_INLINE_FUNCTION void init(value_type& s) const {
    for (int k = 0; k < K; ++k) s.v[k] = T(0);
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, const value_type& b) const {
    for (int k = 0; k < K; ++k) a.v[k] += b.v[k];
  }
  // Kokkos before 3.7 joins through volatile references.
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, const volatile value_type& b) const {
    for (int k = 0; k < K; ++k) a.v[k] += b.v[k];
  }
  KOKKOS_FORCEINLINE_FUNCTION void operator()(const int_t<D>... i, value_type& s) const { body(s, i...); }
};

/// Host form: the owned box as rows along its last axis, cut into chunks of at most `chunk`
/// points; one work item per chunk. The loop over a chunk keeps its partial sums in local
/// variables: with Kokkos' per-point form the accumulator lives in the thread's reduction
/// scratch, which the compiler must assume the kernel's stores may alias, and a kernel that
/// writes a vector while it sums ran at a quarter of the bandwidth.
template <int N>
struct Chunking {
  Kokkos::Array<int, N> ext;  // owned extents
  int chunk;                  // points per work item along the last axis
  index_t per_row;            // work items per row

  explicit Chunking(const std::array<int, N>& extents, int chunk_ = 4096) : ext(), chunk(chunk_) {
    for (int d = 0; d < N; ++d) ext[d] = extents[d];
    per_row = (ext[N - 1] + chunk - 1) / chunk;
  }
  index_t work_items() const {
    index_t rows = 1;
    for (int d = 0; d < N - 1; ++d) rows *= ext[d];
    return rows * per_row;
  }
  /// The first N-1 coordinates of work item w in idx, and its range [lo, hi) on the last axis.
  KOKKOS_INLINE_FUNCTION void decode(index_t w, Kokkos::Array<int, N>& idx, int& lo, int& hi) const {
    index_t row = w / per_row;
    lo = static_cast<int>(w - row * per_row) * chunk;
    hi = lo + chunk < ext[N - 1] ? lo + chunk : ext[N - 1];
    for (int d = N - 2; d >= 0; --d) {
      idx[d] = static_cast<int>(row % ext[d]);
      row /= ext[d];
    }
  }
};

/// Host parallel_for functor over chunks: body(i...) for each point of the chunk.
template <class Body, int N, class Seq>
struct ForChunks;
template <class Body, int N, std::size_t... D>
struct ForChunks<Body, N, std::index_sequence<D...>> {
  Body body;
  Chunking<N> c;
  KOKKOS_INLINE_FUNCTION void operator()(const index_t w) const {
    Kokkos::Array<int, N> idx;
    int lo, hi;
    c.decode(w, idx, lo, hi);
    for (int j = lo; j < hi; ++j) {
      idx[N - 1] = j;
      body(idx[D]...);
    }
  }
};

/// Host parallel_reduce functor over chunks: K sums of body(sums, i...), kept in locals.
template <class Body, class T, int K, int N, class Seq>
struct SumChunks;
template <class Body, class T, int K, int N, std::size_t... D>
struct SumChunks<Body, T, K, N, std::index_sequence<D...>> : SumPoints<Body, T, K, std::index_sequence<D...>> {
  using value_type = Sums<T, K>;
  Chunking<N> c;
  SumChunks(const Body& b, const Chunking<N>& ch) : SumPoints<Body, T, K, std::index_sequence<D...>>{b}, c(ch) {}
  KOKKOS_INLINE_FUNCTION void operator()(const index_t w, value_type& s) const {
    Kokkos::Array<int, N> idx;
    int lo, hi;
    c.decode(w, idx, lo, hi);
    value_type local;
    for (int k = 0; k < K; ++k) local.v[k] = T(0);
    for (int j = lo; j < hi; ++j) {
      idx[N - 1] = j;
      this->body(local, idx[D]...);
    }
    for (int k = 0; k < K; ++k) s.v[k] += local.v[k];
  }
};

template <class Exec>
using ChunkPolicy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<index_t>>;

/// Run body(i...) over the box [0, ext) of local coordinates on a default instance of Exec:
/// chunks of rows on the host, one work item per point on a device. Local.
template <class Exec, std::size_t R, class Body>
void for_extents(const char* label, const std::array<int, R>& ext, const Body& body) {
  constexpr int N = static_cast<int>(R);
  for (int d = 0; d < N; ++d)
    if (ext[d] <= 0) return;
  if constexpr (spmd::impl::host_accessible<typename Exec::memory_space>()) {
    const Chunking<N> c(ext);
    Kokkos::parallel_for(label, ChunkPolicy<Exec>(0, c.work_items()),
                         ForChunks<Body, N, std::make_index_sequence<N>>{body, c});
  } else {
    Kokkos::parallel_for(label, spmd::impl::nd_policy<N>(Exec(), ext),
                         ForPoints<Body, std::make_index_sequence<N>>{body});
  }
}

/// Sum K values of body(sums, i...) over the box [0, ext); zeros for an empty box. Waits for
/// the kernel. Local.
template <int K, class T, class Exec, std::size_t R, class Body>
Sums<T, K> sum_extents(const char* label, const std::array<int, R>& ext, const Body& body) {
  constexpr int N = static_cast<int>(R);
  Sums<T, K> s{};
  for (int d = 0; d < N; ++d)
    if (ext[d] <= 0) return s;
  if constexpr (spmd::impl::host_accessible<typename Exec::memory_space>()) {
    const Chunking<N> c(ext);
    Kokkos::parallel_reduce(label, ChunkPolicy<Exec>(0, c.work_items()),
                            SumChunks<Body, T, K, N, std::make_index_sequence<N>>(body, c), s);
  } else {
    Kokkos::parallel_reduce(label, spmd::impl::nd_policy<N>(Exec(), ext),
                            SumPoints<Body, T, K, std::make_index_sequence<N>>{body}, s);
  }
  return s;
}

/// Run body(i...) over the owned points of `like` (local owned coordinates). Local.
template <class T, int N, class M, class Body>
void for_points(const char* label, const Array<T, N, M>& like, const Body& body) {
  for_extents<typename M::execution_space>(label, spmd::impl::owned_extents(like.owned()), body);
}

/// Sum K values of body(sums, i...) over the owned points of `like`: this rank's partial sums.
/// Local.
template <int K, class T, int N, class M, class Body>
Sums<T, K> sum_points(const char* label, const Array<T, N, M>& like, const Body& body) {
  return sum_extents<K, T, typename M::execution_space>(label, spmd::impl::owned_extents(like.owned()), body);
}

/// Kernel-side access to a vector's owned points.
template <class V>
using Acc = spmd::impl::OwnedAccess<typename V::view_type, V::rank>;

// ---- CG ------------------------------------------------------------------------------------------

/// r = b - q, p = z = D r (D = diag(A)^-1 or I); sums (b.b, r.r, r.z).
template <class A, class T, bool Jacobi>
struct CgStart {
  A b, q, r, p, dinv;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 3>& s, I... i) const {
    const T bi = b(i...);
    const T ri = bi - q(i...);
    T zi = ri;
    if constexpr (Jacobi) zi = dinv(i...) * ri;
    r(i...) = ri;
    p(i...) = zi;
    s.v[0] += bi * bi;
    s.v[1] += ri * ri;
    s.v[2] += ri * zi;
  }
};

/// sums (p.q).
template <class A, class T>
struct Dot {
  A p, q;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 1>& s, I... i) const {
    s.v[0] += p(i...) * q(i...);
  }
};

/// r -= alpha q; sums (r.r, r.z) with z = D r.
template <class A, class T, bool Jacobi>
struct CgResidual {
  A r, q, dinv;
  T alpha;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 2>& s, I... i) const {
    const T ri = r(i...) - alpha * q(i...);
    r(i...) = ri;
    T zi = ri;
    if constexpr (Jacobi) zi = dinv(i...) * ri;
    s.v[0] += ri * ri;
    s.v[1] += ri * zi;
  }
};

/// x += alpha p, then p = z + beta p with z = D r: the last iteration's solution update and the
/// next direction in one pass.
template <class A, class T, bool Jacobi>
struct CgDirection {
  A x, p, r, dinv;
  T alpha, beta;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T pi = p(i...);
    x(i...) += alpha * pi;
    T zi = r(i...);
    if constexpr (Jacobi) zi *= dinv(i...);
    p(i...) = zi + beta * pi;
  }
};

/// y += a x.
template <class A, class T>
struct Axpy {
  A y, x;
  T a;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    y(i...) += a * x(i...);
  }
};

/// d = 1 / d; sums (number of zero or non-finite diagonal entries).
template <class A, class T>
struct Invert {
  A d;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 1>& s, I... i) const {
    const T v = d(i...);
    const bool bad = v == T(0) || !(v - v == T(0));  // zero, NaN or infinite
    d(i...) = bad ? T(0) : T(1) / v;
    if (bad) s.v[0] += T(1);
  }
};

// ---- pipelined CG (Ghysels & Vanroose 2014, Algorithm 4 with Jacobi as M) ---------------------

/// r = b - n; u = D r (Jacobi only; u is r otherwise).
template <class A, class T, bool Jacobi>
struct PcgResidual {
  A b, n, r, u, dinv;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T ri = b(i...) - n(i...);
    r(i...) = ri;
    if constexpr (Jacobi) u(i...) = dinv(i...) * ri;
  }
};

/// m = D w (Jacobi only); z = q = s = p = 0; sums (r.u, w.u, r.r, b.b).
template <class A, class T, bool Jacobi>
struct PcgStart {
  A b, r, u, w, m, z, q, s, p, dinv;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 4>& sum, I... i) const {
    const T ri = r(i...), wi = w(i...), bi = b(i...);
    T ui = ri;
    if constexpr (Jacobi) {
      ui = u(i...);
      m(i...) = dinv(i...) * wi;
      q(i...) = T(0);
    }
    z(i...) = T(0);
    s(i...) = T(0);
    p(i...) = T(0);
    sum.v[0] += ri * ui;
    sum.v[1] += wi * ui;
    sum.v[2] += ri * ri;
    sum.v[3] += bi * bi;
  }
};

/// One pipelined CG iteration's vector work in one pass (n = A m was just computed):
///   z = n + beta z;  q = m + beta q;  s = w + beta s;  p = u + beta p;
///   x += alpha p;    r -= alpha s;    u -= alpha q;   w -= alpha z;   m = D w;
/// and the next iteration's sums (r.u, w.u, r.r). Without a preconditioner u is r, m is w and
/// q is s, and those lines drop out.
template <class A, class T, bool Jacobi>
struct PcgUpdate {
  A n, z, m, q, w, s, u, p, x, r, dinv;
  T alpha, beta;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 3>& sum, I... i) const {
    const T wi = w(i...), ri = r(i...);
    const T zi = n(i...) + beta * z(i...);
    const T si = wi + beta * s(i...);
    T ui = ri, qi = si;
    if constexpr (Jacobi) {
      ui = u(i...);
      qi = m(i...) + beta * q(i...);
      q(i...) = qi;
    }
    const T pi = ui + beta * p(i...);
    z(i...) = zi;
    s(i...) = si;
    p(i...) = pi;
    x(i...) += alpha * pi;
    const T rn = ri - alpha * si;
    const T wn = wi - alpha * zi;
    r(i...) = rn;
    w(i...) = wn;
    T un = rn;
    if constexpr (Jacobi) {
      un = ui - alpha * qi;
      u(i...) = un;
      m(i...) = dinv(i...) * wn;
    }
    sum.v[0] += rn * un;
    sum.v[1] += wn * un;
    sum.v[2] += rn * rn;
  }
};

}  // namespace spmd::solvers::impl
