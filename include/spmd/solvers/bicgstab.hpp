#pragma once
/// \file solvers/bicgstab.hpp
/// BiCGStab (H. A. van der Vorst, "Bi-CGSTAB: a fast and smoothly converging variant of Bi-CG
/// for the solution of nonsymmetric linear systems", SIAM J. Sci. Stat. Comput. 13, 1992), right
/// preconditioned as in the Templates book (Barrett et al. 1994) and SciPy:
///
///   spmd::solvers::bicgstab(A, b, x, opts)   or   bicgstab(A, b, x, M, opts)
///
/// x holds the initial guess on entry and the solution on return. Collective; the SolveResult is
/// the same on every rank. The class BiCGStab<Op> also runs step by step and saves and resumes
/// its state (x, r, the shadow residual, p, v and the scalars), bitwise at the same rank count.
///
/// One iteration (r_hat = r_0, the shadow residual; the residual r is the true one's recursion):
///
///   p = r + beta (p - omega v);  p^ = M^-1 p   one pass (Jacobi in it)
///   v = A p^;  (r_hat.v, v.v)                  one reduction kernel, MPI_Allreduce of 2
///   alpha = rho / r_hat.v;  s = r - alpha v;  s^ = M^-1 s          one pass
///   t = A s^;  (t.s, t.t, s.s)                 one reduction kernel, MPI_Allreduce of 3
///   ||s|| meets the tolerance: x += alpha p^, stop (the half step, as in SciPy)
///   omega = t.s / t.t;  x += alpha p^ + omega s^;  r = s - omega t;  (r_hat.r, r.r)
///                                              one pass, MPI_Allreduce of 2
///   beta = (rho' / rho) (alpha / omega)
///
/// Two operator and two preconditioner applications, three all-reduces and about 21 vector
/// streams per iteration (8 B each per point for doubles, without a preconditioner).
///
/// Stopping as CG (solvers/options.hpp): the recursive residual is tested, a claimed convergence
/// is checked against the true residual ||b - A x||: converged within SolverOptions::residual_slack,
/// else the recursion restarts from x (r = r_hat = b - A x, p = v = 0; one kernel, the operator
/// application of the check reused; counted in SolveResult::replacements) while the true residual
/// keeps decreasing from one claim to the next (else residual_mismatch). Breakdowns, reported as observed in
/// SolveResult::detail: rho = r_hat.r or r_hat.v vanishing to working precision (|.| <= eps
/// ||r_hat|| ||.||: the shadow residual became orthogonal), t.t = 0 with s != 0 (A M^-1 maps s^
/// to zero), omega = 0 (t orthogonal to s: stagnation).

#include "spmd/solvers/impl/bicgstab.hpp"
#include "spmd/solvers/impl/krylov.hpp"
#include "spmd/solvers/krylov.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// BiCGStab (see the file comment), a KrylovSolver (solvers/krylov.hpp: its members). Work
/// vectors r, r_hat, p, v, s, t (and p^, s^ with a preconditioner); its saved state: x, r,
/// r_hat, p, v and the scalars.
template <class Operator>
using BiCGStab = KrylovSolver<Operator, KrylovMethod::bicgstab>;

/// Solve A x = b with BiCGStab from the initial guess in x, on `exec`. Collective.
template <class Operator>
SolveResult bicgstab(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                     const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                     const SolverOptions& opts = {}) {
  return impl::solve_with<impl::BiCgStab<Operator>>("bicgstab", exec, A, b, x, {}, opts);
}
/// bicgstab() on a default instance. Collective.
template <class Operator>
SolveResult bicgstab(const Operator& A, const typename Operator::vector_type& b,
                     const typename Operator::vector_type& x, const SolverOptions& opts = {}) {
  return bicgstab(typename Operator::vector_type::execution_space(), A, b, x, opts);
}
/// bicgstab() preconditioned (on the right) by M, on `exec`. Collective.
template <class Operator>
SolveResult bicgstab(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                     const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                     const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return impl::solve_with<impl::BiCgStab<Operator>>("bicgstab", exec, A, b, x, M, opts);
}
/// bicgstab() preconditioned by M on a default instance. Collective.
template <class Operator>
SolveResult bicgstab(const Operator& A, const typename Operator::vector_type& b,
                     const typename Operator::vector_type& x, const Preconditioner<typename Operator::vector_type>& M,
                     const SolverOptions& opts = {}) {
  return bicgstab(typename Operator::vector_type::execution_space(), A, b, x, M, opts);
}

}  // namespace spmd::solvers
