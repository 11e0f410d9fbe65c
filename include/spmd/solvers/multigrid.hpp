#pragma once
/// \file solvers/multigrid.hpp
/// Geometric multigrid for the matrix-free Dirichlet Laplacian (solvers/laplacian.hpp): one
/// V-cycle per application, a preconditioner for CG (it is symmetric positive definite), GMRES,
/// FGMRES or BiCGStab.
///
///   spmd::solvers::Laplacian<double, 2> L(comm, {n, n});
///   auto M = spmd::solvers::multigrid(L);            // the hierarchy, built once
///   spmd::solvers::cg(L, b, x, M, opts);             // about 10 iterations at any n
///
/// The hierarchy: level 0 is the operator's grid of n_d unknowns per axis; level l + 1 has
/// (n_d - 1) / 2 (integer division): its point c sits on point 2c + 1 of level l, whose
/// Dirichlet boundary it shares for odd n_d (even n_d leave the last fine point between the
/// last coarse point and the boundary, which the coarse grid sees as boundary). Each level's
/// operator is the unscaled Laplacian of its grid, and the coarse right side is 4 x the
/// restricted residual (the (2h)^2 / h^2 of the rediscretisation). Coarsening stops at a level
/// of at most MultigridOptions::coarse_points points (or one with an axis below 3), which is
/// solved exactly (a dense Cholesky factor made once).
///
/// Every level is a set of distributed arrays of the grid padded by its boundary layer (shape
/// n_d + 2, halo 1; the layer holds the Dirichlet zero and is never written), on the operator's
/// process grid, so that every step of the cycle is a fused slice expression of the library
/// (spmd::assign; I is the interior slice(1, n_d + 1) of every axis, C the coarse points
/// slice(2, 2 n_c + 1, 2)):
///
///   smoothing     x(I) = p x(I) - q x_old(I) + s (b(I) + sum of x(I +- e_d))   (face halo)
///   residual      r(I) = b(I) - 2N x(I) + sum of x(I +- e_d)                   (face halo)
///   restriction   t(C) = 4 sum over o in {-1,0,1}^N of w(o) r(C + o)           (box halo)
///                 full weighting, w(o) = prod_d (1/4, 1/2, 1/4)[o_d]; then the coarse right
///                 side b_c(I_c) = t(C), one strided move
///   prolongation  t(C) = x_c(I_c) (one strided move; t is zero off C), then
///                 x(I) += sum over o of v(o) t(I + o), v(o) = prod_d (1/2, 1, 1/2)[o_d]:
///                 linear interpolation, P = 2^N R^T / 4 exactly
///
/// Smoothing (MultigridOptions::smoother): Chebyshev polynomial (default) on
/// [ratio lambda_max, lambda_max] of D^-1 A, lambda_max = (1/N) sum_d (1 + cos(pi / (n_d + 1)))
/// known exactly for the Laplacian, or weighted Jacobi (weight 2N / (2N + 1) by default);
/// `smoothing_steps` steps before and after the coarse correction. Both smoothers are the same
/// polynomial in D^-1 A before and after, R is a multiple of P^T and the coarsest solve is
/// exact, so the V-cycle is a symmetric positive definite operator: CG stays valid (and
/// FGMRES is not needed).
///
/// Ranks: while every rank's block of the next level still has MultigridOptions::gather_points
/// points or more (and at least 2 per axis), the next level stays on all ranks; the first one
/// below moves onto rank 0 alone (one strided redistribution on the communication engine,
/// and back), which coarsens further by itself: the coarse levels then cost no messages. With
/// one rank nothing moves.
///
/// Per V-cycle and level: (4 x smoothing steps + 5) passes over the level's points, 2 x smoothing
/// steps + 2 halo exchanges; the level sizes fall by 2^N. No reductions: the only all-reduces of
/// a solve are the Krylov method's.

#include <string>

#include "spmd/array.hpp"
#include "spmd/error.hpp"
#include "spmd/solvers/impl/multigrid.hpp"
#include "spmd/solvers/laplacian.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// How a multigrid preconditioner is built (see the file comment).
struct MultigridOptions {
  /// The smoother: Chebyshev polynomial or weighted Jacobi.
  enum class Smoother { chebyshev, jacobi };
  Smoother smoother = Smoother::chebyshev;  //!< the smoother
  int smoothing_steps = 2;        //!< before and after the coarse correction (Chebyshev degree, Jacobi sweeps)
  double chebyshev_ratio = 0.25;  //!< Chebyshev damps [ratio lambda_max, lambda_max] of D^-1 A
  double jacobi_weight = 0;       //!< weighted Jacobi's weight; 0: 2N / (2N + 1)
  index_t coarse_points = 512;    //!< coarsen while a level has more points; the coarsest is solved exactly
  index_t gather_points = 4096;   //!< a level with fewer points per rank than this goes onto rank 0
  int max_levels = 30;            //!< at most this many levels
};

/// Geometric multigrid for a Laplacian<T, N, M> (see the file comment): a preconditioner object
/// (solvers/preconditioner.hpp); multigrid() gives it as a Preconditioner.
template <class T, int N, class M>
class Multigrid {
 public:
  using operator_type = Laplacian<T, N, M>;             ///< the operator of the finest level
  using vector_type = Array<T, N, M>;                   ///< the vectors it applies to
  using value_type = T;                                 ///< their element type
  using execution_space = typename M::execution_space;  ///< where it runs

  /// The hierarchy for L, built on `exec`. Collective; throws the same spmd::Error on every
  /// rank for bad options or a coarsest level too large for the direct solve (an elongated grid
  /// whose short axis stops the coarsening early).
  Multigrid(const execution_space& exec, const operator_type& L, const MultigridOptions& opts = {})
      : h_(exec, L, settings(opts)) {}
  /// On a default instance. Collective.
  explicit Multigrid(const operator_type& L, const MultigridOptions& opts = {})
      : Multigrid(execution_space(), L, opts) {}

  /// z = one V-cycle applied to r (from z = 0), on `exec`. Collective (halo exchanges; the
  /// moves onto rank 0 and back).
  void apply(const execution_space& exec, const vector_type& r, const vector_type& z) const { h_.apply(exec, r, z); }
  /// The preconditioner's kind (the option that names it). Local.
  Precond kind() const { return Precond::multigrid; }
  /// The V-cycle is symmetric positive definite (see the file comment). Local.
  bool symmetric() const { return true; }
  /// One line for logs and verdicts: the kind and how it was built. Local.
  std::string describe() const { return h_.describe(); }
  /// The number of levels. Local.
  int levels() const { return h_.levels(); }
  /// The unknowns per axis of level l. Local.
  const Index<N>& level_shape(int l) const { return h_.level_shape(l); }
  /// The first level held by rank 0 alone (-1: none). Local.
  int gather_level() const { return h_.gather_level(); }

 private:
  /// The options checked (the same spmd::Error on every rank: they are the same everywhere),
  /// the Jacobi weight's default 2N / (2N + 1) filled in. Local.
  static impl::MultigridSettings settings(const MultigridOptions& opts) {
    if (opts.smoothing_steps < 1 || opts.max_levels < 1 || opts.coarse_points < 1 || opts.gather_points < 0 ||
        !(opts.chebyshev_ratio > 0 && opts.chebyshev_ratio < 1) || !(opts.jacobi_weight >= 0 && opts.jacobi_weight < 2))
      throw Error::replicated(spmd::impl::str(
          "spmd::solvers::multigrid: smoothing_steps (", opts.smoothing_steps, "), max_levels (", opts.max_levels,
          ") and coarse_points (", opts.coarse_points, ") must be at least 1, gather_points (", opts.gather_points,
          ") not negative, chebyshev_ratio (", opts.chebyshev_ratio, ") in (0, 1), jacobi_weight (", opts.jacobi_weight,
          ") in [0, 2)"));
    impl::MultigridSettings s;
    s.jacobi = opts.smoother == MultigridOptions::Smoother::jacobi;
    s.smoothing_steps = opts.smoothing_steps;
    s.chebyshev_ratio = opts.chebyshev_ratio;
    s.jacobi_weight = opts.jacobi_weight == 0 ? 2.0 * N / (2.0 * N + 1.0) : opts.jacobi_weight;
    s.coarse_points = opts.coarse_points;
    s.gather_points = opts.gather_points;
    s.max_levels = opts.max_levels;
    return s;
  }

  impl::MultigridHierarchy<T, N, M> h_;
};

/// The multigrid preconditioner of L (see the file comment), built on `exec`. Collective.
template <class T, int N, class M>
Preconditioner<Array<T, N, M>> multigrid(const typename M::execution_space& exec, const Laplacian<T, N, M>& L,
                                         const MultigridOptions& opts = {}) {
  return Multigrid<T, N, M>(exec, L, opts);
}
/// multigrid() on a default instance. Collective.
template <class T, int N, class M>
Preconditioner<Array<T, N, M>> multigrid(const Laplacian<T, N, M>& L, const MultigridOptions& opts = {}) {
  return Multigrid<T, N, M>(L, opts);
}

}  // namespace spmd::solvers
