#pragma once
/// \file solvers/cg.hpp
/// Conjugate gradients for symmetric positive definite linear operators (solvers/operator.hpp):
///
///   spmd::solvers::cg(A, b, x, opts)            classic CG (Hestenes-Stiefel), optional Jacobi
///   spmd::solvers::pipelined_cg(A, b, x, opts)  pipelined CG (Ghysels-Vanroose): one nonblocking
///                                               all-reduce per iteration, overlapped with A
///
/// x holds the initial guess on entry and the solution on return. Both are Collective over the
/// vectors' communicator and return a SolveResult (solvers/options.hpp) that is the same on
/// every rank. The classes CG<Op> and PipelinedCG<Op> behind them also run step by step, and save
/// and resume their state between iterations (checkpoint/restart, bitwise at the same rank
/// count).
///
/// Per iteration (n points per rank, vectors from A.make_vector; nothing allocates):
///
///   CG:            q = A p; one reduction kernel (p.q); MPI_Allreduce of 1 number;
///                  r -= alpha q with (r.r, r.z) in the same pass; MPI_Allreduce of 2 numbers;
///                  x += alpha p and p = z + beta p in one pass (z = D r, D = diag(A)^-1 or I,
///                  computed on the fly: no z vector).
///                  Vector traffic 80 B per point (doubles) plus A.
///   pipelined CG:  MPI_Iallreduce of 3 numbers started; n = A m while it is in flight; wait;
///                  one pass updating z, s, p, x, r, w (and q, u, m with Jacobi) that also sums
///                  the next iteration's (r.u, w.u, r.r).
///                  Vector traffic 104 B per point plus A (160 B with Jacobi).
///
/// Stopping: ||r|| <= rtol ||b|| (converged_rtol), ||r|| <= atol (converged_atol), max_iters
/// (diverged_max_iters), p.Ap <= 0 or another zero or negative denominator (breakdown;
/// SolveResult::detail says which and its value), a NaN or infinite scalar (nan_or_inf). ||r|| is
/// the recursively updated residual; a claimed convergence is checked against the true residual
/// ||b - A x|| (one more operator application): converged only when that meets the tolerance
/// within SolverOptions::residual_slack, else residual_mismatch. b = 0 gives x = 0 (zero_rhs).
/// Pipelined CG learns ||r_i|| one operator application later than CG (that is the pipelining),
/// so it applies A once more at the end; both report the same iteration counts in exact
/// arithmetic. It replaces its residual and recurrence vectors by recomputed ones every
/// SolverOptions::replace_every iterations and at a claimed convergence (residual replacement).

#include "spmd/solvers/impl/cg.hpp"
#include "spmd/solvers/impl/pipelined_cg.hpp"
#include "spmd/solvers/impl/krylov.hpp"
#include "spmd/solvers/krylov.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// Classic preconditioned CG (Hestenes-Stiefel), a KrylovSolver (solvers/krylov.hpp: its
/// members). Work vectors r, p, q (and z with a preconditioner object, the inverse diagonal with
/// Jacobi); its saved state: x, r, p and the scalars bnorm, rr, gamma.
template <class Operator>
using CG = KrylovSolver<Operator, KrylovMethod::cg>;

/// Pipelined CG (P. Ghysels, W. Vanroose, "Hiding global synchronization latency in the
/// preconditioned Conjugate Gradient algorithm", Parallel Computing 40, 2014, Algorithm 4), a
/// KrylovSolver: the iteration's three dot products are combined in one MPI_Iallreduce that is
/// in flight while the operator is applied. Work vectors: r, w, n, z, s, p (and u, m, q, the
/// inverse diagonal with Jacobi). Its state() is not const (it completes the all-reduce in
/// flight); replace() does a residual replacement now.
template <class Operator>
using PipelinedCG = KrylovSolver<Operator, KrylovMethod::pipelined_cg>;

/// Solve A x = b with CG from the initial guess in x (see CG), on `exec`. Collective (options
/// that only some ranks pass wrong give the same spmd::Error on every rank).
template <class Operator>
SolveResult cg(const typename Operator::vector_type::execution_space& exec, const Operator& A,
               const typename Operator::vector_type& b, const typename Operator::vector_type& x,
               const SolverOptions& opts = {}) {
  return impl::solve_with<impl::Cg<Operator>>("cg", exec, A, b, x, {}, opts);
}
/// cg() on a default instance. Collective.
template <class Operator>
SolveResult cg(const Operator& A, const typename Operator::vector_type& b, const typename Operator::vector_type& x,
               const SolverOptions& opts = {}) {
  return cg(typename Operator::vector_type::execution_space(), A, b, x, opts);
}
/// cg() preconditioned by M (symmetric positive definite), on `exec`. Collective.
template <class Operator>
SolveResult cg(const typename Operator::vector_type::execution_space& exec, const Operator& A,
               const typename Operator::vector_type& b, const typename Operator::vector_type& x,
               const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return impl::solve_with<impl::Cg<Operator>>("cg", exec, A, b, x, M, opts);
}
/// cg() preconditioned by M on a default instance. Collective.
template <class Operator>
SolveResult cg(const Operator& A, const typename Operator::vector_type& b, const typename Operator::vector_type& x,
               const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return cg(typename Operator::vector_type::execution_space(), A, b, x, M, opts);
}

/// Solve A x = b with pipelined CG from the initial guess in x (see PipelinedCG), on `exec`.
/// Collective.
template <class Operator>
SolveResult pipelined_cg(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                         const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                         const SolverOptions& opts = {}) {
  return impl::solve_with<impl::PipelinedCg<Operator>>("pipelined_cg", exec, A, b, x, {}, opts);
}
/// pipelined_cg() on a default instance. Collective.
template <class Operator>
SolveResult pipelined_cg(const Operator& A, const typename Operator::vector_type& b,
                         const typename Operator::vector_type& x, const SolverOptions& opts = {}) {
  return pipelined_cg(typename Operator::vector_type::execution_space(), A, b, x, opts);
}
/// pipelined_cg() preconditioned by M (symmetric positive definite), on `exec`. Collective.
template <class Operator>
SolveResult pipelined_cg(const typename Operator::vector_type::execution_space& exec, const Operator& A,
                         const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                         const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return impl::solve_with<impl::PipelinedCg<Operator>>("pipelined_cg", exec, A, b, x, M, opts);
}
/// pipelined_cg() preconditioned by M on a default instance. Collective.
template <class Operator>
SolveResult pipelined_cg(const Operator& A, const typename Operator::vector_type& b,
                         const typename Operator::vector_type& x,
                         const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts = {}) {
  return pipelined_cg(typename Operator::vector_type::execution_space(), A, b, x, M, opts);
}

}  // namespace spmd::solvers
