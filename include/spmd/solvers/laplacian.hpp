#pragma once
/// \file solvers/laplacian.hpp
/// spmd::solvers::Laplacian<T, N, M>: the matrix-free (2N+1)-point Dirichlet Laplacian on an
/// N-d grid, a linear operator (solvers/operator.hpp) on spmd::Array<T, N, M> with halo 1.
///
/// The unknowns are the points of an N-d array of shape (n0, ..., nN-1) (the interior points of
/// a grid whose boundary holds zero). Row k (point g) of the operator is
///
///   (A x)(g) = 2N x(g) - sum over the 2N neighbours g +- e_d inside the shape of x(g +- e_d),
///
/// unscaled, as spmd::sparse::poisson2d / poisson3d assemble it (diagonal 2N, off-diagonal -1,
/// unknown k = row-major index of g), so the same problem gives the same CG iterates.
///
/// apply() overlaps the halo exchange with the interior: it starts the face exchange of x
/// (split phase), updates the points whose neighbours are all owned while the messages travel,
/// finishes the exchange, then updates the boundary layer (one kernel over the shell of the
/// owned block, which reads the halo and treats neighbours outside the shape as zero: the
/// Dirichlet condition does not depend on what the halo holds at the physical boundary).
/// `Exchange::blocking` exchanges first and then runs both kernels (for comparison; see
/// docs/api/solvers.md for the measurements).

#include <Kokkos_Core.hpp>

#include <array>
#include <string>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/halo.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/kernels.hpp"

namespace spmd::solvers {

/// How Laplacian::apply fills x's halo: split phase overlapped with the interior (default), or
/// a blocking exchange before the stencil.
enum class Exchange { overlapped, blocking };

namespace impl {

/// Element of `v` at storage index idx, moved by `shift` along `axis`.
template <class View, class Idx, std::size_t... D>
KOKKOS_FORCEINLINE_FUNCTION typename View::reference_type at_shifted(const View& v, const Idx& idx, int axis, int shift,
                                                                     std::index_sequence<D...>) {
  return v((idx[D] + (static_cast<int>(D) == axis ? shift : 0))...);
}

/// y = A x at the points whose 2N neighbours all lie in the owned block, one row of that inner
/// box at a time (a body of the kernel layer: the range [jlo, jhi) of row k; on devices one point),
/// addressed through pointers and the storage strides: one address per row, and the 2N+1 loads
/// of a point at fixed offsets from it (a loop the compiler vectorises on the host).
template <class View, int N>
struct LaplaceRows {
  using T = typename View::non_const_value_type;
  const T* x;
  T* y;
  Kokkos::Array<int, N> lo;          // storage index of the inner box's first point
  Kokkos::Array<index_t, N> stride;  // storage strides (stride[N-1] == 1: LayoutRight)
  KOKKOS_INLINE_FUNCTION void operator()(const Kokkos::Array<index_t, N>& k, const index_t jlo,
                                         const index_t jhi) const {
    index_t off = lo[N - 1];
    for (int a = 0; a < N - 1; ++a) off += (k[a] + lo[a]) * stride[a];
    const T* xr = x + off;
    T* yr = y + off;
    for (index_t j = jlo; j < jhi; ++j) {
      T nb = T(0);
      for (int a = 0; a < N; ++a) nb += xr[j - stride[a]] + xr[j + stride[a]];
      yr[j] = T(2 * N) * xr[j] - nb;
    }
  }
  // Two-phase form (spmd::impl::TwoPhase): a device item loads all its points before it stores.
  using point_value = T;
  KOKKOS_INLINE_FUNCTION index_t at(const Kokkos::Array<index_t, N>& k, const index_t j) const {
    index_t off = lo[N - 1] + j;
    for (int a = 0; a < N - 1; ++a) off += (k[a] + lo[a]) * stride[a];
    return off;
  }
  KOKKOS_INLINE_FUNCTION T eval(const Kokkos::Array<index_t, N>& k, const index_t j) const {
    return eval_at(x + at(k, j));
  }
  KOKKOS_INLINE_FUNCTION void store(const Kokkos::Array<index_t, N>& k, const index_t j, const T v) const {
    y[at(k, j)] = v;
  }
  /// (A x) at the point xr points to (the same additions in the same order as the row loop).
  KOKKOS_FORCEINLINE_FUNCTION T eval_at(const T* xr) const {
    T nb = T(0);
    for (int a = 0; a < N; ++a) nb += xr[-stride[a]] + xr[stride[a]];
    return T(2 * N) * xr[0] - nb;
  }
  // Column form (spmd::impl::ColumnBody): the c <= P points k + u e_{N-2} (k[N-1]: the position
  // along the last axis), one address and a stride; all loaded before any is stored.
  static constexpr bool column_body = N >= 2;
  template <int P>
  KOKKOS_INLINE_FUNCTION void column(const Kokkos::Array<index_t, N>& k, const int c) const {
    const index_t off = at(k, k[N - 1]), s = stride[N >= 2 ? N - 2 : 0];
    T v[P] = {};
    if (c == P) {  // a whole item: straight-line code, every load issued before the first use
      for (int u = 0; u < P; ++u) v[u] = eval_at(x + off + u * s);
      for (int u = 0; u < P; ++u) y[off + u * s] = v[u];
      return;
    }
    for (int u = 0; u < P; ++u)
      if (u < c) v[u] = eval_at(x + off + u * s);
    for (int u = 0; u < P; ++u)
      if (u < c) y[off + u * s] = v[u];
  }
};

/// y = A x on the shell of the owned block (the points with a neighbour outside it), one work
/// item per point. The shell is cut into N slabs: slab d holds the points on the two faces
/// normal to axis d (one face when the block is one point thick), with axes before d restricted
/// to the block's interior and axes after d whole, so every shell point is in exactly one slab.
template <class View, int N>
struct LaplaceShell {
  using T = typename View::non_const_value_type;
  View x, y;
  Kokkos::Array<int, N> ext;            // owned extents
  Kokkos::Array<int, N> halo;           // storage index of the owned block's first point
  Kokkos::Array<index_t, N> lo;         // global index of the owned block's first point
  Kokkos::Array<index_t, N> shape;      // global shape
  Kokkos::Array<index_t, N + 1> start;  // first work item of each slab; start[N] = total

  KOKKOS_INLINE_FUNCTION void operator()(const index_t t) const {
    int d = 0;
    while (d + 1 < N && start[d + 1] <= t) ++d;
    index_t k = t - start[d];
    Kokkos::Array<int, N> own;  // owned coordinates
    for (int a = N - 1; a >= 0; --a) {
      const int e = a < d ? ext[a] - 2 : (a == d ? (ext[a] < 2 ? ext[a] : 2) : ext[a]);
      const int c = static_cast<int>(k % e);
      k /= e;
      own[a] = a < d ? c + 1 : (a == d ? (c == 0 ? 0 : ext[a] - 1) : c);
    }
    Kokkos::Array<int, N> idx;
    for (int a = 0; a < N; ++a) idx[a] = own[a] + halo[a];
    const auto seq = std::make_index_sequence<N>{};
    // The same additions in the same order as LaplaceRows (a missing neighbour adds an exact 0),
    // so a point's value does not depend on whether it lies in the interior or the shell of its
    // rank's block: the product is the same bits at every decomposition (reproducible solves).
    T nb = T(0);
    for (int a = 0; a < N; ++a) {
      const index_t g = lo[a] + own[a];
      const T left = g > 0 ? at_shifted(x, idx, a, -1, seq) : T(0);
      const T right = g + 1 < shape[a] ? at_shifted(x, idx, a, 1, seq) : T(0);
      nb += left + right;
    }
    at_shifted(y, idx, 0, 0, seq) = T(2 * N) * at_shifted(x, idx, 0, 0, seq) - nb;
  }
};

}  // namespace impl

/// The matrix-free negative Laplacian of an N-d grid (see the file comment): an operator for
/// the solvers. Construction collective, apply neighbour-collective.
template <class T = double, int N = 2, class M = DefaultMemorySpace>
class Laplacian {
 public:
  /// The element type.
  using value_type = T;
  /// The vectors' memory space.
  using memory_space = M;
  /// The execution space of apply().
  using execution_space = typename M::execution_space;
  /// The vectors: arrays on the operator's distribution.
  using vector_type = Array<T, N, M>;

  /// The operator on `dist`: its shape is the grid of unknowns. Needs a halo of at least 1 on
  /// every axis and no periodic axis. Local (throws the same spmd::Error on every rank).
  explicit Laplacian(const Distribution<N>& dist, Exchange exchange = Exchange::overlapped)
      : dist_(dist), exchange_(exchange) {
    const char* fn = "spmd::solvers::Laplacian";
    if (dist.is_null()) throw Error::replicated(spmd::impl::str(fn, ": null distribution"));
    for (int d = 0; d < N; ++d) {
      if (dist.halo()[d] < 1)
        throw Error::replicated(
            spmd::impl::str(fn, ": the distribution (", dist.describe(), ") needs a halo of at least 1 on every axis"));
      if (dist.periodic()[d])
        throw Error::replicated(spmd::impl::str(fn, ": the distribution (", dist.describe(),
                                                ") has a periodic axis; the operator is the Dirichlet Laplacian"));
    }
  }
  /// The operator on a new distribution of `shape` with halo 1 (options: grid(...), label(...),
  /// or a wider halo(...)). Collective.
  template <class... Opts, spmd::impl::if_options<Opts...> = 0>
  Laplacian(const Comm& comm, const Index<N>& shape, const Opts&... opts)
      : Laplacian(Distribution<N>(comm, shape, halo(1), opts...)) {}

  /// Local queries.
  const Distribution<N>& distribution() const { return dist_; }
  /// Number of rows (grid points). Local.
  index_t rows() const { return dist_.size(); }
  /// Number of columns (grid points). Local.
  index_t cols() const { return dist_.size(); }
  /// How halos are exchanged in apply(). Local.
  Exchange exchange() const { return exchange_; }

  /// A zero vector (halo included) on the operator's distribution. Local.
  vector_type make_vector(const std::string& label = "spmd::solvers::vector") const {
    return vector_type(dist_, Label{label});
  }

  /// y = A x on `exec`. x and y are distinct arrays distributed like the operator, with the same halo
  /// widths, at least 1 on every axis (vectors from make_vector are); x's halo is overwritten, its owned
  /// points are not. Neighbour-collective; throws the same spmd::Error on every rank for arrays
  /// that do not fit.
  void apply(const execution_space& exec, const vector_type& x, const vector_type& y) const {
    check("spmd::solvers::Laplacian::apply", x, y);
    if (exchange_ == Exchange::blocking) {
      spmd::exchange_halo(exec, x, Pattern::face);
      interior(exec, x, y);
    } else {
      auto request = spmd::halo_begin(exec, x, Pattern::face);
      interior(exec, x, y);
      request.end();
    }
    shell(exec, x, y);
  }
  /// apply() on a default instance. Neighbour-collective.
  void apply(const vector_type& x, const vector_type& y) const { apply(execution_space(), x, y); }

  /// d = diag(A) = 2N on the owned points. Local.
  void diagonal(const execution_space& exec, const vector_type& d) const { d.fill(exec, T(2 * N)); }
  /// diagonal() on a default instance. Local.
  void diagonal(const vector_type& d) const { diagonal(execution_space(), d); }

 private:
  void check(const char* fn, const vector_type& x, const vector_type& y) const {
    for (const vector_type* v : {&x, &y})
      if (!v->distribution().same_layout(dist_))
        throw Error::replicated(spmd::impl::str(fn, ": array '", v->label(), "' (", v->distribution().describe(),
                                                ") is not distributed like the operator (", dist_.describe(), ")"));
    for (int d = 0; d < N; ++d)
      if (x.halo()[d] < 1 || y.halo()[d] != x.halo()[d])
        throw Error::replicated(spmd::impl::str(fn, ": x ('", x.label(), "', halo ", spmd::impl::shape_str(x.halo()),
                                                ") and y ('", y.label(), "', halo ", spmd::impl::shape_str(y.halo()),
                                                ") need one halo width of at least 1 on every axis"));
    if (x.local_with_halo().data() == y.local_with_halo().data() && x.local_with_halo().data() != nullptr)
      throw Error::replicated(spmd::impl::str(fn, ": x and y are the same array '", x.label(), "'"));
  }

  void interior(const execution_space& exec, const vector_type& x, const vector_type& y) const {
    impl::LaplaceRows<view_type, N> rows{x.local_with_halo().data(), y.local_with_halo().data(), {}, {}};
    Kokkos::Array<index_t, N> ext;
    for (int d = 0; d < N; ++d) {
      ext[d] = x.owned().extent(d) - 2;  // <= 0: no point has all its neighbours owned
      rows.lo[d] = x.halo()[d] + 1;
      rows.stride[d] = static_cast<index_t>(x.local_with_halo().stride(d));
    }
    spmd::impl::for_box(exec, "spmd::solvers::laplacian::interior",
                        spmd::impl::BoxItems<N>::template make<execution_space>(ext), rows);
  }

  void shell(const execution_space& exec, const vector_type& x, const vector_type& y) const {
    impl::LaplaceShell<view_type, N> k{x.local_with_halo(), y.local_with_halo(), {}, {}, {}, {}, {}};
    for (int d = 0; d < N; ++d) {
      k.ext[d] = static_cast<int>(x.owned().extent(d));
      k.halo[d] = x.halo()[d];
      k.lo[d] = x.owned().lo[d];
      k.shape[d] = dist_.extent(d);
    }
    // Slab d: min(ext[d], 2) faces x prod_{a<d} (ext[a]-2) x prod_{a>d} ext[a].
    k.start[0] = 0;
    for (int d = 0; d < N; ++d) {
      index_t size = k.ext[d] < 2 ? k.ext[d] : 2;
      for (int a = 0; a < N; ++a)
        if (a != d) size *= a < d ? (k.ext[a] > 2 ? k.ext[a] - 2 : 0) : k.ext[a];
      k.start[d + 1] = k.start[d] + size;
    }
    if (k.start[N] == 0) return;
    Kokkos::parallel_for("spmd::solvers::laplacian::boundary",
                         Kokkos::RangePolicy<execution_space, Kokkos::IndexType<index_t>>(exec, 0, k.start[N]), k);
  }

  using view_type = typename vector_type::view_type;

  Distribution<N> dist_;
  Exchange exchange_;
};

}  // namespace spmd::solvers
