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
/// GMRES<Op> and FGMRES<Op> also run step by step and save and resume their state (the basis and
/// the next candidate vector, the Hessenberg matrix) between iterations, bitwise at the same rank
/// count.
///
/// One iteration (Arnoldi step j of a cycle; V = [v_0 .. v_{j-1}] orthonormal, u_j the
/// candidate for v_j: A M^-1 v_{j-1} orthogonalised once against V):
///
///   z = M^-1 u_j (Jacobi: one pass; none: z is u_j);  w = A z
///   delayed classical Gram-Schmidt with reorthogonalisation (DCGS2: Swirydowicz, Langou,
///   Ananthan, Yang, Thomas 2020; Bielich, Langou, Thomas, Swirydowicz, Yamazaki, Boman 2022),
///   the second pass of v_j lagged into step j + 1's sweep:
///     sweep 1: a = V^T u_j, b = V^T w, u_j.u_j, u_j.w, w.w     one kernel, ONE MPI_Allreduce of
///                                                              2 j + 4 numbers
///     host:    rho^2 = u_j.u_j - |a|^2; column j - 1 final (its first pass + a, rho);
///              c = [b, (u_j.w - a.b) / rho]; column j = (c - H a) / rho (A M^-1 v_j = (w - V H a)
///              / rho by the Arnoldi relation of the columns before)
///     sweep 2: v_j = (u_j - V a) / rho;  u_{j+1} = (w - [V, v_j] c) / rho   one kernel, in place
///   H(j+1, j) is the first-pass norm (w.w - |c|^2)^(1/2) / rho until step j + 1 gives the exact
///   one (the rotation of column j is then done again). Where a Pythagorean norm cancels, the
///   pass is done at once instead: the second (one more sweep and all-reduce) when the first-pass
///   norm is below 10^6 (j + 2) eps of ||A M^-1 v_j||^2, and u - V a formed and its norm reduced
///   when the second's is below a quarter (as CGS2 did). A cycle's last column takes its second
///   pass at the end of the cycle. Orthogonality: that of CGS2 ("twice is enough", Giraud,
///   Langou, Rozloznik 2005; tests/test_krylov.cpp checks |V^T V - I| on an ill-conditioned
///   basis that one pass loses).
///   Givens rotations on the host give the residual norm |g_{j+1}| of the minimiser without
///   forming it.
///
/// Vector traffic per iteration about 2 j + 7 vectors and the operator's (8 B per point for doubles: each
/// sweep reads the j basis vectors once, sweep 2 updates u_j and w in place), one all-reduce,
/// one operator and one preconditioner application; PETSc's GMRES (classical Gram-Schmidt
/// without refinement, its basis vectors 4 per pass) moves about 2.75 j + 9. FGMRES keeps
/// z~_j = M^-1 u_j and the triangular T with Z = Z~ T (no sweep). At the end of a cycle
/// x += M^-1 V y (GMRES: one more preconditioner application) or x += Z~ T y (FGMRES), and the
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
