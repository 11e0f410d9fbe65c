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
// loops over it are contiguous (they vectorise) and the rows stay in cache between the vectors.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
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

/// s_q += v_q . w over a row chunk (q < c), and s_c += w . w when `norm`.
template <class T, int N, int K>
struct BasisDots {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> v;
  const T* w;
  int c;
  bool norm;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi,
                                         spmd::impl::Sums<T, K + 1>& acc) const {
    const index_t off = at.row(k);
    const T* wr = w + off;
    for (int q = 0; q < c; ++q) {
      const T* vr = v[q] + off;
      T s = T(0);
      for (index_t i = lo; i < hi; ++i) s += vr[i] * wr[i];
      acc.v[q] += s;
    }
    if (norm) {
      T s = T(0);
      for (index_t i = lo; i < hi; ++i) s += wr[i] * wr[i];
      acc.v[c] += s;
    }
  }
};

/// w -= sum_q h_q v_q over a row chunk, then s_q += v_q . w and s_c += w . w.
template <class T, int N, int K>
struct BasisUpdateDots {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> v;
  Kokkos::Array<T, K> h;
  T* w;
  int c;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi,
                                         spmd::impl::Sums<T, K + 1>& acc) const {
    const index_t off = at.row(k);
    T* wr = w + off;
    for (int q = 0; q < c; ++q) {
      const T* vr = v[q] + off;
      const T hq = h[q];
      for (index_t i = lo; i < hi; ++i) wr[i] -= hq * vr[i];
    }
    for (int q = 0; q < c; ++q) {
      const T* vr = v[q] + off;
      T s = T(0);
      for (index_t i = lo; i < hi; ++i) s += vr[i] * wr[i];
      acc.v[q] += s;
    }
    T s = T(0);
    for (index_t i = lo; i < hi; ++i) s += wr[i] * wr[i];
    acc.v[c] += s;
  }
};

/// dst = a (src - sum_q h_q v_q) over a row chunk (src null: 0).
template <class T, int N, int K>
struct BasisCombine {
  BasisLayout<N> at;
  Kokkos::Array<const T*, K> v;
  Kokkos::Array<T, K> h;
  const T* src;
  T* dst;
  T a;
  int c;
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t lo, const index_t hi) const {
    const index_t off = at.row(k);
    T* dr = dst + off;
    if (src != nullptr) {
      const T* sr = src + off;
      for (index_t i = lo; i < hi; ++i) dr[i] = sr[i];
    } else {
      for (index_t i = lo; i < hi; ++i) dr[i] = T(0);
    }
    for (int q = 0; q < c; ++q) {
      const T* vr = v[q] + off;
      const T hq = h[q];
      for (index_t i = lo; i < hi; ++i) dr[i] -= hq * vr[i];
    }
    if (a != T(1))
      for (index_t i = lo; i < hi; ++i) dr[i] *= a;
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
  static constexpr int chunk =
      spmd::impl::host_accessible<typename execution_space::memory_space>() ? 32 : 8;

  BasisKernels() = default;
  /// For vectors laid out like `like` (its halo and storage). Local.
  explicit BasisKernels(const V& like) : halo_(like.halo()) {
    for (int d = 0; d < N; ++d) {
      at_.lo[d] = like.halo()[d];
      at_.stride[d] = static_cast<index_t>(like.local_with_halo().stride(d));
      ext_[d] = static_cast<int>(like.owned().extent(d));
    }
  }

  /// A collective spmd::Error unless `v` has this layout (a vector of the operator's
  /// make_vector). Local.
  void check(const char* fn, const V& v) const {
    bool same = v.halo() == halo_;
    for (int d = 0; d < N && same; ++d)
      same = static_cast<int>(v.owned().extent(d)) == ext_[d] &&
             static_cast<index_t>(v.local_with_halo().stride(d)) == at_.stride[d];
    if (!same)
      throw Error(spmd::impl::str(fn, ": the operator's make_vector gave vectors of different layouts ('", v.label(),
                                  "' has halo ", spmd::impl::shape_str(v.halo()), ")"),
                  true);
  }

  /// out[q] = this rank's v[q] . w (q < c), and out[c] = w . w when `norm`. Waits for the
  /// kernels. Local.
  void dots(const execution_space& exec, const T* const* v, const int c, const T* w, bool norm, T* out) const {
    for (int q0 = 0; q0 < c || (q0 == 0 && norm); q0 += chunk) {
      const int n = std::min(chunk, c - q0);
      BasisDots<T, N, chunk> body{at_, {}, w, n, norm && q0 + chunk >= c};
      for (int q = 0; q < n; ++q) body.v[q] = v[q0 + q];
      const auto s = reduce("spmd::solvers::gmres::dots", exec, body);
      for (int q = 0; q < n; ++q) out[q0 + q] = s.v[q];
      if (body.norm) out[c] = s.v[n];
      if (n <= 0) break;
    }
  }

  /// w -= sum_q h[q] v[q] (q < c); then out[q] = v[q] . w and out[c] = w . w (this rank's).
  /// One sweep of the vectors when they fit one kernel. Waits. Local.
  void update_dots(const execution_space& exec, const T* const* v, const int c, const T* h, T* w, T* out) const {
    if (c <= chunk) {
      BasisUpdateDots<T, N, chunk> body{at_, {}, {}, w, c};
      for (int q = 0; q < c; ++q) {
        body.v[q] = v[q];
        body.h[q] = h[q];
      }
      const auto s = reduce("spmd::solvers::gmres::update_dots", exec, body);
      for (int q = 0; q <= c; ++q) out[q] = s.v[q];
      return;
    }
    combine(exec, v, c, h, w, T(1), w);
    dots(exec, v, c, w, true, out);
  }

  /// dst = a (src - sum_q h[q] v[q]) (q < c; src null: 0; src may be dst). Asynchronous. Local.
  void combine(const execution_space& exec, const T* const* v, const int c, const T* h, const T* src, T a,
               T* dst) const {
    int q0 = 0;
    do {
      const int n = std::min(chunk, c - q0);
      const bool last = q0 + n >= c;
      BasisCombine<T, N, chunk> body{at_, {}, {}, q0 == 0 ? src : dst, dst, last ? a : T(1), n};
      for (int q = 0; q < n; ++q) {
        body.v[q] = v[q0 + q];
        body.h[q] = h[q0 + q];
      }
      spmd::impl::for_box(exec, "spmd::solvers::gmres::combine", items(), body);
      q0 += n;
    } while (q0 < c);
  }

 private:
  spmd::impl::BoxItems<N> items() const {
    return spmd::impl::BoxItems<N>::template make<execution_space>(ext_, false);
  }
  template <class Body>
  spmd::impl::Sums<T, chunk + 1> reduce(const char* label, const execution_space& exec, const Body& body) const {
    return spmd::impl::reduce_box<BasisSumsRule<T, chunk + 1>>(exec, label, items(), body);
  }

  BasisLayout<N> at_{};
  std::array<int, N> ext_{};
  std::array<int, N> halo_{};
};

}  // namespace spmd::solvers::impl
