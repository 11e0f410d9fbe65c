#pragma once
// The Krylov basis kernels of GMRES and FGMRES (solvers/gmres.hpp): one pass over memory that
// touches many vectors of one layout at once.
//
//   dots         s_q = v_q . w for q < c (and w . w): the first pass of classical Gram-Schmidt
//   update_dots  w -= sum_q h_q v_q, then s_q = v_q . w and w . w: the second pass (CGS2), one
//                sweep of the vectors (each row chunk is updated, then dotted while it is in
//                cache)
//   combine      dst = a (src - sum_q h_q v_q): the normalised new basis vector, or the
//                solution's correction sum_q y_q v_q
//
// Every vector of the basis comes from the operator's make_vector, so all have one layout: the
// kernels address them through raw pointers and one row offset (the storage strides and the
// first owned point's storage index), as the Laplacian's rows do. A kernel takes at most
// `chunk` vectors (32 on host spaces, 8 on devices, where a reduction's partial result lives in
// registers and shared memory); more are done in several kernels whose local sums are combined
// in ONE all-reduce by the caller. On host spaces each work item is a chunk of a row: the inner
// loops over it are contiguous and the rows stay in cache between the vectors. Within a kernel
// the vectors are swept four at a time (BasisSweep: four independent sums per pass, where one
// sum per vector, a serial chain of additions, made GMRES(30) latency-bound).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

#include "spmd/array.hpp"
#include "spmd/error.hpp"
#include "spmd/impl/kernels.hpp"

namespace spmd::solvers::impl {

/// K sums folded straight into the thread's partial result (the kernel layer's fold_in_place).
template <class T, int K>
struct BasisSumsRule : spmd::impl::SumsRule<T, K> {
  static constexpr bool fold_in_place = true;
};

/// Where the rows of the basis's vectors lie in their storage.
template <int N>
struct BasisLayout {
  Kokkos::Array<int, N> lo;          // storage index of the first owned point
  Kokkos::Array<index_t, N> stride;  // storage strides (stride[N-1] == 1: LayoutRight)
  /// Storage offset of row k's first owned point.
  KOKKOS_FORCEINLINE_FUNCTION index_t row(const Kokkos::Array<index_t, N>& k) const {
    index_t off = lo[N - 1];
    for (int a = 0; a < N - 1; ++a) off += (k[a] + lo[a]) * stride[a];
    return off;
  }
};

/// The sweeps of a row chunk [lo, hi) that take the basis vectors G at a time, as PETSc's
/// VecMDot_Seq and VecMAXPY_Seq do: one pass over the chunk per G vectors reads w (or writes d)
/// once for them, and the G sums are independent accumulators, so a core overlaps G chains of
/// additions where one accumulator per vector waits for each addition in turn. G is fixed, so a
/// chunk's sums are the same whatever the data or the rank count. (Several accumulators per
/// vector, summed at the end, were slower with GCC: it vectorises them with shuffles.)
template <class T, int G>
struct BasisSweep {
  /// out[q] += p[q] . w over [lo, hi) for q < n (n <= K), in groups of G.
  template <std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void dots(const Kokkos::Array<const T*, K>& p, const int n, const index_t off,
                                               const T* w, const index_t lo, const index_t hi, T* out) {
    int q = 0;
    for (; q + G <= n; q += G) dots_group<G>(p, q, off, w, lo, hi, out);
    if (q < n) dots_rest<G - 1>(n - q, p, q, off, w, lo, hi, out);  // the rest: one pass of fixed width
  }
  /// d = a (s - sum_q h[q] p[q]) over [lo, hi) for q < n (s null: 0; s may be d), in groups of G:
  /// each point's terms are subtracted in the order of q, as one vector at a time would.
  template <std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void update(const Kokkos::Array<const T*, K>& p, const Kokkos::Array<T, K>& h,
                                                 const int n, const index_t off, const T* s, T* d, const T a,
                                                 const index_t lo, const index_t hi) {
    int q = 0;
    const T* from = s;
    for (; q + G < n; q += G) {  // every full group but the last
      update_group<G>(p, h, q, off, from, d, T(1), lo, hi);
      from = d;
    }
    update_rest<G>(n - q, p, h, q, off, from, d, a, lo, hi);  // the last group scales by a
  }
  /// out[2q] += p[q] . u and out[2q+1] += p[q] . w over [lo, hi) for q < n (n <= K), in groups
  /// of G: one pass reads u and w once for G vectors (2 G independent sums).
  template <std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void dots2(const Kokkos::Array<const T*, K>& p, const int n, const index_t off,
                                                const T* u, const T* w, const index_t lo, const index_t hi, T* out) {
    int q = 0;
    for (; q + G <= n; q += G) dots2_group<G>(p, q, off, u, w, lo, hi, out);
    if (q < n) dots2_rest<G - 1>(n - q, p, q, off, u, w, lo, hi, out);
  }
  /// Two updates in one pass over the p[q] (q < n), in groups of G, in place:
  ///   u = s (u - sum_q a[q] p[q]);  w = s (w - sum_q c[q] p[q] - cu u)   (u the new u)
  /// (s = 1 and cu = 0 for all but the last of several kernels).
  template <std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void update2(const Kokkos::Array<const T*, K>& p, const Kokkos::Array<T, K>& a,
                                                  const Kokkos::Array<T, K>& c, const int n, const index_t off, T* u,
                                                  T* w, const T s, const T cu, const index_t lo, const index_t hi) {
    int q = 0;
    for (; q + G < n; q += G) update2_group<G>(p, a, c, q, off, u, w, T(1), T(0), lo, hi);
    update2_rest<G>(n - q, p, a, c, q, off, u, w, s, cu, lo, hi);  // the last group scales
  }

 private:
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void dots2_rest(const int m, const Kokkos::Array<const T*, K>& p, const int q,
                                                     const index_t off, const T* u, const T* w, const index_t lo,
                                                     const index_t hi, T* out) {
    if constexpr (M >= 1) {
      if (m == M)
        dots2_group<M>(p, q, off, u, w, lo, hi, out);
      else
        dots2_rest<M - 1>(m, p, q, off, u, w, lo, hi, out);
    }
  }
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void dots2_group(const Kokkos::Array<const T*, K>& p, const int q,
                                                      const index_t off, const T* u, const T* w, const index_t lo,
                                                      const index_t hi, T* out) {
    static_assert(M >= 1 && M <= G, "spmd::solvers::impl::BasisSweep: a group of 1 to G vectors");
    const T* r[M];
    for (int g = 0; g < M; ++g) r[g] = p[q + g] + off;
    const T* ur = u + off;
    const T* wr = w + off;
    T su[M], sw[M];
    for (int g = 0; g < M; ++g) su[g] = sw[g] = T(0);
    for (index_t i = lo; i < hi; ++i) {
      const T ui = ur[i], wi = wr[i];
      for (int g = 0; g < M; ++g) {
        su[g] += r[g][i] * ui;
        sw[g] += r[g][i] * wi;
      }
    }
    for (int g = 0; g < M; ++g) {
      out[2 * (q + g)] += su[g];
      out[2 * (q + g) + 1] += sw[g];
    }
  }
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void update2_rest(const int m, const Kokkos::Array<const T*, K>& p,
                                                       const Kokkos::Array<T, K>& a, const Kokkos::Array<T, K>& c,
                                                       const int q, const index_t off, T* u, T* w, const T s,
                                                       const T cu, const index_t lo, const index_t hi) {
    if constexpr (M >= 1) {
      if (m == M) {
        update2_group<M>(p, a, c, q, off, u, w, s, cu, lo, hi);
        return;
      }
      update2_rest<M - 1>(m, p, a, c, q, off, u, w, s, cu, lo, hi);
    } else {
      update2_group<0>(p, a, c, q, off, u, w, s, cu, lo, hi);
    }
  }
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void update2_group(const Kokkos::Array<const T*, K>& p,
                                                        const Kokkos::Array<T, K>& a, const Kokkos::Array<T, K>& c,
                                                        const int q, const index_t off, T* u, T* w, const T s,
                                                        const T cu, const index_t lo, const index_t hi) {
    static_assert(M >= 0 && M <= G, "spmd::solvers::impl::BasisSweep: a group of 0 to G vectors");
    const T* r[M > 0 ? M : 1];
    T ca[M > 0 ? M : 1], cc[M > 0 ? M : 1];
    for (int g = 0; g < M; ++g) {
      r[g] = p[q + g] + off;
      ca[g] = a[q + g];
      cc[g] = c[q + g];
    }
    T* ur = u + off;
    T* wr = w + off;
    for (index_t i = lo; i < hi; ++i) {
      T t1 = ur[i], t2 = wr[i];
      for (int g = 0; g < M; ++g) {
        t1 -= ca[g] * r[g][i];
        t2 -= cc[g] * r[g][i];
      }
      t1 *= s;
      ur[i] = t1;
      wr[i] = (t2 - cu * t1) * s;
    }
  }
  // The group of the remaining m (<= M) vectors, m a run-time number.
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void dots_rest(const int m, const Kokkos::Array<const T*, K>& p, const int q,
                                                    const index_t off, const T* w, const index_t lo, const index_t hi,
                                                    T* out) {
    if constexpr (M >= 1) {
      if (m == M)
        dots_group<M>(p, q, off, w, lo, hi, out);
      else
        dots_rest<M - 1>(m, p, q, off, w, lo, hi, out);
    }
  }
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void update_rest(const int m, const Kokkos::Array<const T*, K>& p,
                                                      const Kokkos::Array<T, K>& h, const int q, const index_t off,
                                                      const T* s, T* d, const T a, const index_t lo, const index_t hi) {
    if constexpr (M >= 1) {
      if (m == M) {
        update_group<M>(p, h, q, off, s, d, a, lo, hi);
        return;
      }
      update_rest<M - 1>(m, p, h, q, off, s, d, a, lo, hi);
    } else {
      update_group<0>(p, h, q, off, s, d, a, lo, hi);
    }
  }
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void dots_group(const Kokkos::Array<const T*, K>& p, const int q,
                                                     const index_t off, const T* w, const index_t lo, const index_t hi,
                                                     T* out) {
    static_assert(M >= 1 && M <= G, "spmd::solvers::impl::BasisSweep: a group of 1 to G vectors");
    const T* r[M];
    for (int g = 0; g < M; ++g) r[g] = p[q + g] + off;
    const T* wr = w + off;
    T s[M];
    for (int g = 0; g < M; ++g) s[g] = T(0);
    for (index_t i = lo; i < hi; ++i)
      for (int g = 0; g < M; ++g) s[g] += r[g][i] * wr[i];
    for (int g = 0; g < M; ++g) out[q + g] += s[g];
  }
  template <int M, std::size_t K>
  static KOKKOS_FORCEINLINE_FUNCTION void update_group(const Kokkos::Array<const T*, K>& p,
                                                       const Kokkos::Array<T, K>& h, const int q, const index_t off,
                                                       const T* s, T* d, const T a, const index_t lo,
                                                       const index_t hi) {
    static_assert(M >= 0 && M <= G, "spmd::solvers::impl::BasisSweep: a group of 0 to G vectors");
    const T* r[M > 0 ? M : 1];
    T c[M > 0 ? M : 1];
    for (int g = 0; g < M; ++g) {
      r[g] = p[q + g] + off;
      c[g] = h[q + g];
    }
    T* dr = d + off;
    const T* sr = s != nullptr ? s + off : nullptr;
    for (index_t i = lo; i < hi; ++i) {
      T t = sr != nullptr ? sr[i] : T(0);
      for (int g = 0; g < M; ++g) t -= c[g] * r[g][i];
      dr[i] = a != T(1) ? t * a : t;
    }
  }
};

/// Basis vectors per pass (see BasisSweep): 4, PETSc's choice; 8 was no faster on a host core.
constexpr int basis_group = 4;

/// s_q += p_q . w over a row chunk for q < n (p_c = w itself for w . w).
template <class T, int N, int K, int G>
struct BasisDots {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> p;
  const T* w;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi,
                                         spmd::impl::Sums<T, K>& acc) const {
    BasisSweep<T, G>::dots(p, n, at.row(k), w, lo, hi, acc.v);
  }
};

/// Points of a row chunk that update_dots updates, then dots, while they are in cache.
constexpr index_t basis_block = 512;

/// w -= sum_q h_q v_q over a row chunk (q < c), then s_q += v_q . w and s_c += w . w (p_c = w).
template <class T, int N, int K, int G>
struct BasisUpdateDots {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> p;
  Kokkos::Array<T, K> h;
  T* w;
  int c;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi,
                                         spmd::impl::Sums<T, K>& acc) const {
    const index_t off = at.row(k);
    for (index_t b = lo; b < hi; b += basis_block) {
      const index_t e = hi - b > basis_block ? b + basis_block : hi;
      BasisSweep<T, G>::update(p, h, c, off, w, w, T(1), b, e);
      BasisSweep<T, G>::dots(p, c + 1, off, w, b, e, acc.v);
    }
  }
};

/// dst = a (src - sum_q h_q v_q) over a row chunk (src null: 0).
template <class T, int N, int K, int G>
struct BasisCombine {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> p;
  Kokkos::Array<T, K> h;
  const T* src;
  T* dst;
  T a;
  int c;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi) const {
    BasisSweep<T, G>::update(p, h, c, at.row(k), src, dst, a, lo, hi);
  }
};

/// s_{2q} += p_q . u, s_{2q+1} += p_q . w over a row chunk for q < n.
template <class T, int N, int K, int G>
struct BasisDots2 {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> p;
  const T* u;
  const T* w;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi,
                                         spmd::impl::Sums<T, 2 * K>& acc) const {
    BasisSweep<T, G>::dots2(p, n, at.row(k), u, w, lo, hi, acc.v);
  }
};

/// u = s (u - sum_q a_q v_q), w = s (w - sum_q c_q v_q - cu u) over a row chunk (q < n), in
/// blocks of basis_block points (the partial u and w stay in cache between the groups).
template <class T, int N, int K, int G>
struct BasisUpdate2 {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> p;
  Kokkos::Array<T, K> a, c;
  T* u;
  T* w;
  T s, cu;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi) const {
    const index_t off = at.row(k);
    for (index_t b = lo; b < hi; b += basis_block) {
      const index_t e = hi - b > basis_block ? b + basis_block : hi;
      BasisSweep<T, G>::update2(p, a, c, n, off, u, w, s, cu, b, e);
    }
  }
};

/// The basis kernels over vectors of one layout (that of `like`). Local: the sums are this
/// rank's; the caller combines them.
template <class V>
class BasisKernels {
 public:
  using T = typename V::value_type;
  using execution_space = typename V::execution_space;
  static constexpr int N = V::rank;
  /// Vectors one kernel takes (see the file comment).
  static constexpr int chunk = spmd::impl::host_accessible<typename execution_space::memory_space>() ? 32 : 8;

  BasisKernels() = default;
  /// For vectors laid out like `like` (its halo and storage). Local.
  explicit BasisKernels(const V& like) : halo_(like.halo()) {
    for (int d = 0; d < N; ++d) {
      at_.lo[d] = like.halo()[d];
      at_.stride[d] = static_cast<index_t>(like.local_with_halo().stride(d));
      ext_[d] = static_cast<int>(like.owned().extent(d));
    }
  }

  /// A local spmd::Error unless `v` has this layout (a vector of the operator's make_vector):
  /// the layout is this rank's block, so callers agree on it (impl::agree). Local.
  void check(const char* fn, const V& v) const {
    bool same = v.halo() == halo_;
    for (int d = 0; d < N && same; ++d)
      same = static_cast<int>(v.owned().extent(d)) == ext_[d] &&
             static_cast<index_t>(v.local_with_halo().stride(d)) == at_.stride[d];
    if (!same)
      throw Error(spmd::impl::str(fn, ": the operator's make_vector gave vectors of different layouts ('", v.label(),
                                  "' has halo ", spmd::impl::shape_str(v.halo()), ")"));
  }

  /// out[q] = this rank's v[q] . w (q < c), and out[c] = w . w when `norm`. Waits for the
  /// kernels. Local.
  void dots(const execution_space& exec, const T* const* v, const int c, const T* w, bool norm, T* out) const {
    for (int q0 = 0; q0 < c || (q0 == 0 && norm); q0 += chunk) {
      const int n = std::min(chunk, c - q0);
      const bool with_norm = norm && q0 + chunk >= c;
      BasisDots<T, N, chunk + 1, basis_group> body{at_, {}, w, n + (with_norm ? 1 : 0)};
      for (int q = 0; q < n; ++q) body.p[q] = v[q0 + q];
      if (with_norm) body.p[n] = w;
      const auto s = reduce("spmd::solvers::gmres::dots", exec, body);
      for (int q = 0; q < n; ++q) out[q0 + q] = s.v[q];
      if (with_norm) out[c] = s.v[n];
      if (n <= 0) break;
    }
  }

  /// w -= sum_q h[q] v[q] (q < c); then out[q] = v[q] . w and out[c] = w . w (this rank's).
  /// One sweep of the vectors when they fit one kernel. Waits. Local.
  void update_dots(const execution_space& exec, const T* const* v, const int c, const T* h, T* w, T* out) const {
    if (c <= chunk) {
      BasisUpdateDots<T, N, chunk + 1, basis_group> body{at_, {}, {}, w, c};
      for (int q = 0; q < c; ++q) {
        body.p[q] = v[q];
        body.h[q] = h[q];
      }
      body.p[c] = w;
      const auto s = reduce("spmd::solvers::gmres::update_dots", exec, body);
      for (int q = 0; q <= c; ++q) out[q] = s.v[q];
      return;
    }
    combine(exec, v, c, h, w, T(1), w);
    dots(exec, v, c, w, true, out);
  }

  /// The first sweep of a delayed CGS2 step (solvers/gmres.hpp): with p = [v_0 .. v_{c-1}, u, w],
  /// out[2q] = p_q . u and out[2q+1] = p_q . w (q <= c + 1: 2 c + 4 numbers, this rank's). One
  /// sweep of the vectors when they fit one kernel. Waits. Local.
  void dots2(const execution_space& exec, const T* const* v, const int c, const T* u, const T* w, T* out) const {
    const int total = c + 2;
    for (int q0 = 0; q0 < total; q0 += chunk + 2) {
      const int n = std::min(chunk + 2, total - q0);
      BasisDots2<T, N, chunk + 2, basis_group> body{at_, {}, u, w, n};
      for (int q = 0; q < n; ++q) body.p[q] = q0 + q < c ? v[q0 + q] : q0 + q == c ? u : w;
      const auto s =
          spmd::impl::reduce_box<BasisSumsRule<T, 2 * (chunk + 2)>>(exec, "spmd::solvers::gmres::dots2", items(), body);
      for (int q = 0; q < 2 * n; ++q) out[2 * q0 + q] = s.v[q];
    }
  }

  /// The second sweep of a delayed CGS2 step, in place: u = s (u - sum_q a[q] v[q]) and
  /// w = s (w - sum_q c[q] v[q] - cu u), u the new u (q < n). Asynchronous. Local.
  void update2(const execution_space& exec, const T* const* v, const int n, const T* a, const T* c, T s, T cu, T* u,
               T* w) const {
    int q0 = 0;
    do {
      const int k = std::min(chunk, n - q0);
      const bool last = q0 + k >= n;
      BasisUpdate2<T, N, chunk, basis_group> body{at_, {}, {}, {}, u, w, last ? s : T(1), last ? cu : T(0), k};
      for (int q = 0; q < k; ++q) {
        body.p[q] = v[q0 + q];
        body.a[q] = a[q0 + q];
        body.c[q] = c[q0 + q];
      }
      spmd::impl::for_box(exec, "spmd::solvers::gmres::update2", items(), body);
      q0 += k;
    } while (q0 < n);
  }

  /// dst = a (src - sum_q h[q] v[q]) (q < c; src null: 0; src may be dst). Asynchronous. Local.
  void combine(const execution_space& exec, const T* const* v, const int c, const T* h, const T* src, T a,
               T* dst) const {
    int q0 = 0;
    do {
      const int n = std::min(chunk, c - q0);
      const bool last = q0 + n >= c;
      BasisCombine<T, N, chunk, basis_group> body{at_, {}, {}, q0 == 0 ? src : dst, dst, last ? a : T(1), n};
      for (int q = 0; q < n; ++q) {
        body.p[q] = v[q0 + q];
        body.h[q] = h[q0 + q];
      }
      spmd::impl::for_box(exec, "spmd::solvers::gmres::combine", items(), body);
      q0 += n;
    } while (q0 < c);
  }

 private:
  spmd::impl::BoxItems<N> items() const { return spmd::impl::BoxItems<N>::template make<execution_space>(ext_, false); }
  template <class Body>
  spmd::impl::Sums<T, chunk + 1> reduce(const char* label, const execution_space& exec, const Body& body) const {
    return spmd::impl::reduce_box<BasisSumsRule<T, chunk + 1>>(exec, label, items(), body);
  }

  BasisLayout<N> at_{};
  std::array<int, N> ext_{};
  std::array<int, N> halo_{};
};

}  // namespace spmd::solvers::impl
