#pragma once
/// \file solvers/gmres.hpp
/// Restarted GMRES(m) and flexible GMRES for nonsymmetric (and indefinite) linear operators
/// (solvers/operator.hpp):
///
///   spmd::solvers::gmres(A, b, x, opts)      GMRES(m), right preconditioned (Saad & Schultz
///                                            1986): minimises ||b - A x|| over x0 + M^-1 K_m
///   spmd::solvers::fgmres(A, b, x, M, opts)  flexible GMRES (Saad 1993): the same with the
///                                            preconditioned directions z_j = M^-1 v_j kept, so
///                                            M may change from one application to the next
///
/// m is SolverOptions::restart (SciPy's `restart`). x holds the initial guess on entry and the
/// solution on return. Collective; the SolveResult is the same on every rank. The classes
/// GMRES<Op> and FGMRES<Op> also run step by step and save and resume their state (the basis,
/// the rotated Hessenberg matrix) between iterations, bitwise at the same rank count.
///
/// One iteration (Arnoldi step j of a cycle; V = [v_0 .. v_j] orthonormal):
///
///   z = M^-1 v_j (Jacobi: one pass; none: z is v_j);  w = A z
///   Gram-Schmidt, twice (CGS2; Giraud, Langou, Rozloznik 2005: "twice is enough" keeps V
///   orthogonal to working precision):
///     pass 1: h = V^T w                      one kernel, one MPI_Allreduce of j + 2 numbers
///     pass 2: w -= V h; g = V^T w, ||w||^2   one kernel, one MPI_Allreduce of j + 2 numbers
///     v_{j+1} = (w - V g) / eta              one kernel; eta^2 = ||w||^2 - ||g||^2 (exact, as
///                                            V g is w's part in span V), computed directly
///                                            (one more all-reduce) when that cancels
///   column j of the Hessenberg matrix is h + g and eta; Givens rotations on the host give the
///   residual norm |g_{j+1}| of the minimiser without forming it.
///
/// Vector traffic per iteration about 3 (j + 2) + 2 vectors (8 B each per point for doubles),
/// two all-reduces, one operator and one preconditioner application. At the end of a cycle
/// x += M^-1 V y (GMRES: one more preconditioner application) or x += Z y (FGMRES), and the
/// true residual r = b - A x starts the next cycle.
///
/// Stopping (SolverOptions, as CG): the residual norm |g_{j+1}| of the minimiser (which equals
/// ||b - A x_j|| in exact arithmetic, for right preconditioning) is tested each iteration;
/// max_iters counts iterations (Arnoldi steps; SciPy's maxiter counts restart cycles). A claimed
/// convergence ends the cycle and the true residual ||b - A x|| decides: converged within
/// SolverOptions::residual_slack, else a new cycle starts from the true residual while it
/// keeps decreasing from one claim to the next (else residual_mismatch). The true residual at
/// every restart is also tested. Breakdown: the Hessenberg matrix becomes singular (A M^-1 is
/// singular on the Krylov space: b is then not in the range of A, or A is singular there);
/// a basis vector that cannot be normalised ends the cycle (an invariant Krylov space, where
/// the minimiser is exact). SolverOptions::reproducible is not supported (an error).

#include "spmd/solvers/impl/gmres.hpp"
#include "spmd/solvers/impl/krylov.hpp"
#include "spmd/solvers/krylov.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// Restarted GMRES(m), right preconditioned (see the file comment), a KrylovSolver
/// (solvers/krylov.hpp: its members). Work vectors: the restart + 1 basis vectors, w (and z
/// with a preconditioner).
template <class Operator>
using GMRES = KrylovSolver<Operator, KrylovMethod::gmres>;
/// Flexible GMRES(m): the preconditioner may change between applications (see the file
/// comment); it also keeps the restart preconditioned directions z_j.
template <class Operator>
using FGMRES = KrylovSolver<Operator, KrylovMethod::fgmres>;

/// Solve A x = b with GMRES(m) from the initial guess in x, on `exec`. Collective.
template <class Operator>
SolveResult gmres(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                  const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                  const SolverOptions& opts = {}) {
  return impl::solve_with<impl::Gmres<Operator, false>>("gmres", exec, A, b, x, {}, opts);
}
/// gmres() on a default instance. Collective.
template <class Operator>
SolveResult gmres(const Operator& A, const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                  const SolverOptions& opts = {}) {
  return gmres(typename Operator::vector_type::execution_space(), A, b, x, opts);
}
/// gmres() preconditioned (on the right) by M, on `exec`. Collective.
template <class Operator>
SolveResult gmres(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                  const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                  const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return impl::solve_with<impl::Gmres<Operator, false>>("gmres", exec, A, b, x, M, opts);
}
/// gmres() preconditioned by M on a default instance. Collective.
template <class Operator>
SolveResult gmres(const Operator& A, const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                  const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return gmres(typename Operator::vector_type::execution_space(), A, b, x, M, opts);
}

/// Solve A x = b with flexible GMRES(m) from the initial guess in x, on `exec`. Collective.
template <class Operator>
SolveResult fgmres(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                   const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                   const SolverOptions& opts = {}) {
  return impl::solve_with<impl::Gmres<Operator, true>>("fgmres", exec, A, b, x, {}, opts);
}
/// fgmres() on a default instance. Collective.
template <class Operator>
SolveResult fgmres(const Operator& A, const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                   const SolverOptions& opts = {}) {
  return fgmres(typename Operator::vector_type::execution_space(), A, b, x, opts);
}
/// fgmres() preconditioned by M (which may vary), on `exec`. Collective.
template <class Operator>
SolveResult fgmres(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                   const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                   const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return impl::solve_with<impl::Gmres<Operator, true>>("fgmres", exec, A, b, x, M, opts);
}
/// fgmres() preconditioned by M on a default instance. Collective.
template <class Operator>
SolveResult fgmres(const Operator& A, const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                   const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return fgmres(typename Operator::vector_type::execution_space(), A, b, x, M, opts);
}

}  // namespace spmd::solvers
