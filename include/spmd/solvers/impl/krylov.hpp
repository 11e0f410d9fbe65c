#pragma once
// What the Krylov solvers (solvers/cg.hpp, gmres.hpp, bicgstab.hpp) share: the operator, the
// options' bookkeeping, the bound b and x, the preconditioner (the fused Jacobi diagonal of
// SolverOptions::precond, or a Preconditioner object), the argument checks, a nonblocking
// reduction's request, restoring a saved state, and stopping.

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/solvers/impl/kernels.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

namespace impl {

/// What the Krylov solvers share (CRTP: Derived has setup(b, x), step() and true_residual()):
/// solve(), the operator, the options' bookkeeping, the bound b and x, the preconditioner, the
/// argument checks, a nonblocking reduction's request, and stopping.
template <class Derived, class Operator>
class KrylovBase {
  static_assert((static_assert_linear_operator<Operator>(), true), "spmd::solvers: not a linear operator");

 public:
  using vector_type = typename Operator::vector_type;
  using value_type = typename vector_type::value_type;
  using execution_space = typename vector_type::execution_space;

  /// `M`: a preconditioner object (or none); SolverOptions::precond may then only be none.
  /// Throws the same spmd::Error on every rank for bad options, Precond::jacobi on an operator
  /// without diagonal(), or both kinds of preconditioner at once. Local.
  KrylovBase(const char* name, const execution_space& exec, const Operator& A, const SolverOptions& opts,
             Preconditioner<vector_type> M = {})
      : name_(name), exec_(exec), A_(A), progress_(name, opts), M_(std::move(M)), t_(A.make_vector(label("t"))) {
    check_options(name, opts);
    if (M_ && opts.precond != Precond::none)
      throw Error::replicated(spmd::impl::str("spmd::solvers::", name, ": both SolverOptions::precond (",
                                              to_string(opts.precond), ") and a preconditioner object (", M_.describe(),
                                              ") were given; give one"));
    if (opts.precond == Precond::jacobi) {
      if constexpr (!has_diagonal_v<Operator>)
        throw Error::replicated(spmd::impl::str("spmd::solvers::", name,
                                                ": Precond::jacobi needs an operator with "
                                                "`void diagonal(const vector_type&) const`"));
      dinv_ = A.make_vector(label("dinv"));
    }
  }

  /// The options' checks (a collective spmd::Error when they are out of range). Local.
  static void check_options(const char* name, const SolverOptions& opts) {
    if (opts.max_iters < 0 || !(opts.rtol >= 0) || !(opts.atol >= 0) || !(opts.residual_slack >= 0) ||
        opts.replace_every < 0)
      throw Error::replicated(spmd::impl::str("spmd::solvers::", name, ": max_iters (", opts.max_iters, "), rtol (",
                                              opts.rtol, "), atol (", opts.atol, "), residual_slack (",
                                              opts.residual_slack, ") and replace_every (", opts.replace_every,
                                              ") must not be negative"));
    if (opts.restart < 1)
      throw Error::replicated(
          spmd::impl::str("spmd::solvers::", name, ": restart (", opts.restart, ") must be at least 1"));
    if (opts.precond != Precond::none && opts.precond != Precond::jacobi)
      throw Error::replicated(
          spmd::impl::str("spmd::solvers::", name, ": SolverOptions::precond is ", to_string(opts.precond),
                          "; it takes none or jacobi (give other preconditioners as a Preconditioner object, "
                          "e.g. spmd::solvers::chebyshev(A))"));
  }

  /// Solve A x = b from the initial guess in x: setup(b, x), then step() until it stops.
  /// Collective.
  SolveResult solve(const vector_type& b, const vector_type& x) {
    const spmd::impl::Region region("spmd::solvers::solve");
    auto& self = static_cast<Derived&>(*this);
    bool stopped = self.setup(b, x);
    while (!stopped) stopped = self.step();
    return progress_.result();
  }

  const SolveResult& result() const { return progress_.result(); }
  bool done() const { return progress_.stopped(); }
  int iteration() const { return it_; }
  const SolverOptions& options() const { return progress_.options(); }
  /// The preconditioner's kind (SolverOptions::precond, or the object's). Local.
  Precond precond() const { return M_ ? M_.kind() : progress_.options().precond; }
  /// The preconditioner object (empty with SolverOptions::precond). Local.
  const Preconditioner<vector_type>& preconditioner() const { return M_; }

 protected:
  std::string label(const char* v) const { return spmd::impl::str("spmd::solvers::", name_, "::", v); }
  /// The fused Jacobi preconditioner of SolverOptions::precond.
  bool jacobi() const { return progress_.options().precond == Precond::jacobi; }
  /// A preconditioner object.
  bool general() const { return static_cast<bool>(M_); }
  /// Any preconditioner.
  bool preconditioned() const { return jacobi() || general(); }
  /// The vector the operator is applied to for direction v: z = M^-1 v (Jacobi or the
  /// preconditioner object) and z returned, or v itself without a preconditioner. Collective
  /// (as the preconditioner).
  const vector_type& precondition(const vector_type& v, const vector_type& z) const {
    if (jacobi())
      for_points(exec_, "spmd::solvers::jacobi", z,
                 Multiply<Acc<vector_type>, value_type>{z.owned_access(), dinv_.owned_access(), v.owned_access()});
    else if (general())
      M_.apply(exec_, v, z);
    else
      return v;
    return z;
  }
  /// CG and pipelined CG need a symmetric positive definite preconditioner: a collective
  /// spmd::Error when the object says it is not. Local.
  void require_symmetric_preconditioner() const {
    if (M_ && !M_.symmetric())
      throw Error::replicated(spmd::impl::str("spmd::solvers::", name_, ": the preconditioner (", M_.describe(),
                                              ") is not symmetric positive definite, which ", name_,
                                              " needs: use gmres, fgmres or bicgstab"));
  }

  /// Bind b and x (checked against the operator's vectors, `like`) and compute the Jacobi
  /// diagonal. `error`: a problem the caller found before (a saved state that does not fit),
  /// agreed together with b's and x's checks, so that a problem only some ranks see reaches
  /// every rank (one Comm::check). Collective.
  void bind(const vector_type& b, const vector_type& x, const vector_type& like, std::string error = {}) {
    const std::string fn = spmd::impl::str("spmd::solvers::", name_);
    for (const vector_type* v : {&b, &x})
      if (error.empty() && !v->distribution().same_layout(like.distribution()))
        error =
            spmd::impl::str(fn, ": '", v->label(), "' (", v->distribution().describe(),
                            ") is not distributed like the operator's vectors (", like.distribution().describe(), ")");
    const auto* xb = x.local_with_halo().data();
    if (error.empty() && xb != nullptr && xb == b.local_with_halo().data())
      error = spmd::impl::str(fn, ": b and x are the same array '", x.label(), "'");
    like.comm().check(error.empty(), error);
    b_ = spmd::impl::share(b);
    x_ = spmd::impl::share(x);
    rank_ = like.comm().rank();
    progress_.set_comm_rank(rank_);
    if constexpr (has_diagonal_v<Operator>)
      if (jacobi()) inverse_diagonal(exec_, A_, dinv_, fn);
  }

  /// The kernel-side view of the Jacobi inverse diagonal (any vector when not preconditioned;
  /// the kernels then never read it).
  Acc<vector_type> dinv_access(const vector_type& fallback) const {
    return jacobi() ? dinv_.owned_access() : fallback.owned_access();
  }

  /// Find a named vector and scalar of a saved state (collective error when missing).
  static const vector_type& find_vector(const char* fn, const SolverState<vector_type>& s, const std::string& name) {
    for (const auto& v : s.vectors)
      if (v.first == name) return v.second;
    throw Error::replicated(spmd::impl::str(fn, ": the saved state has no vector '", name, "'"));
  }
  static double find_scalar(const char* fn, const SolverState<vector_type>& s, const std::string& name) {
    for (const auto& v : s.scalars)
      if (v.first == name) return v.second;
    throw Error::replicated(spmd::impl::str(fn, ": the saved state has no scalar '", name, "'"));
  }
  /// A named scalar of a saved state, or `fallback` when it has none. Local.
  static double find_scalar_or(const SolverState<vector_type>& s, const std::string& name, double fallback) {
    for (const auto& v : s.scalars)
      if (v.first == name) return v.second;
    return fallback;
  }
  /// The message of check_state ("" when the state fits). Local.
  std::string state_problem(const char* fn, const SolverState<vector_type>& s) const {
    try {
      check_state(fn, s);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  }
  /// Check a saved state's solver and preconditioner against this solver. Local.
  void check_state(const char* fn, const SolverState<vector_type>& s) const {
    if (s.solver != name_ || s.precond != precond())
      throw Error::replicated(spmd::impl::str(fn, ": the saved state is of ", s.solver, " with precond ",
                                              to_string(s.precond), ", this solver is ", name_, " with precond ",
                                              to_string(precond())));
    if (s.iteration < 0 || s.iteration > progress_.options().max_iters)
      throw Error::replicated(spmd::impl::str(fn, ": the saved state is at iteration ", s.iteration,
                                              ", outside 0..max_iters (", progress_.options().max_iters, ")"));
  }
  /// Copy a saved vector into one of the solver's (unless it is that vector). Local.
  void restore_vector(const vector_type& dst, const vector_type& src) const {
    if (dst.local_with_halo().data() != src.local_with_halo().data()) spmd::copyto(exec_, dst, src);
  }

  /// ||b - A x|| for the bound b and x: x is copied into the work vector t (which has the halo
  /// the operator needs), `ax` = A t. Collective (one operator application, one all-reduce).
  double true_residual_norm(const vector_type& ax) {
    spmd::copyto(exec_, t_, x_);
    impl::apply_on(exec_, A_, t_, ax);
    value_type rr[1];
    reduce_sums<1>("spmd::solvers::true_residual", ax,
                   ResidualNorm<Acc<vector_type>, value_type>{b_.owned_access(), ax.owned_access()}, rr);
    return std::sqrt(static_cast<double>(rr[0]));
  }

  /// The K sums of body(sums, i...) over the owned points of `like`, combined over the ranks,
  /// into out[0..K): floating-point sums and one MPI_Allreduce, or with
  /// SolverOptions::reproducible exact sums (impl/exact_sum.hpp) rounded once, the same bits at
  /// any rank count, process grid, thread count and on any device. Collective.
  template <int K, class Body>
  void reduce_sums(const char* label, const vector_type& like, const Body& body, value_type (&out)[K]) const {
    if (progress_.options().reproducible) {
      // A device's reduction keeps one accumulator per thread of a block in shared memory, at
      // least a warp of them: K exact accumulators of 568 B each fit Kokkos' 48 KiB from K = 1
      // to 2 only (found by the suite on an H200: CG's three sums threw Kokkos' "requested too
      // much L0 scratch memory"). Until those sums are split over kernels, say so plainly.
      if constexpr (!spmd::impl::host_accessible<typename execution_space::memory_space>())
        if (sizeof(spmd::impl::ExactSums<K>) * 32 > 48 * 1024)
          throw Error::replicated(
              spmd::impl::str(label,
                              ": SolverOptions::reproducible on a GPU is limited to two sums per "
                              "kernel and this one has ",
                              K,
                              " (CG, pipelined CG and BiCGStab need three); solve without reproducible "
                              "sums on the GPU, or with them on a host execution space"));
      auto s = spmd::impl::reduce_points<spmd::impl::ExactRule<K>>(exec_, label,
                                                                   spmd::impl::owned_extents(like.owned()), body);
      spmd::impl::exact_allreduce(like.comm(), s);
      for (int k = 0; k < K; ++k) out[k] = static_cast<value_type>(spmd::impl::exact_round(s.s[k]));
      return;
    }
    const auto s = sum_points<K>(exec_, label, like, body);
    for (int k = 0; k < K; ++k) out[k] = s.v[k];
    like.comm().allreduce(out, K, spmd::Op::sum);
  }

  /// x = 0 (for b = 0). Local.
  void zero_x() {
    for_points(exec_, "spmd::solvers::zero_x", x_, Zero<Acc<vector_type>, value_type>{x_.owned_access()});
  }

  /// Stop with `reason` after completing a reduction in flight; the result is final. The true
  /// residual ||b - A x|| is computed (Derived::true_residual(), one operator application) and
  /// decides a claimed convergence: converged only when it meets the tolerance within
  /// SolverOptions::residual_slack, else residual_mismatch. Throws (on every rank) when
  /// OnFailure::throw_error asks for it. Returns true. Collective (every rank stops at the same
  /// iteration with the same reason: the decision is made from reduced numbers).
  bool stop(Reason reason, double rnorm, std::string detail = {}) {
    request_.wait();
    return stop_at(reason, rnorm, reason == Reason::zero_rhs ? 0.0 : static_cast<Derived&>(*this).true_residual(),
                   std::move(detail));
  }
  /// stop() with the true residual ||b - A x|| already known (`tr`, of the current x). Collective.
  bool stop_at(Reason reason, double rnorm, double tr, std::string detail = {}) {
    request_.wait();
    if (reason == Reason::converged_rtol || reason == Reason::converged_atol) {
      const Reason v = progress_.verdict(tr);
      if (v == Reason::none) {
        detail = spmd::impl::str("the recursive residual ||r|| = ", rnorm, " met the tolerance at iteration ", it_,
                                 " but the true residual ||b - A x|| = ", tr, " exceeds (1 + residual_slack) x ",
                                 std::max(progress_.options().rtol * progress_.bnorm(), progress_.options().atol));
        reason = Reason::residual_mismatch;
      } else {
        reason = v;
      }
    }
    progress_.stop(reason, it_, rnorm, tr, std::move(detail), b_.comm());
    return true;
  }

  /// Stop with zero_rhs when ||b|| = 0: x = 0. Returns true when it stopped. Collective.
  bool stop_if_zero_rhs() {
    if (progress_.bnorm() != 0.0) return false;
    zero_x();
    progress_.record(it_, 0.0);
    return stop(Reason::zero_rhs, 0.0, "b = 0: x = 0 is the solution");
  }

  const char* name_;
  execution_space exec_;
  const Operator& A_;
  Progress progress_;
  Preconditioner<vector_type> M_;  // a preconditioner object (empty: none, or the fused Jacobi)
  vector_type t_;                  // x with the operator's halo (the true residual, residual replacement)
  vector_type b_, x_, dinv_;
  int it_ = 0;
  int rank_ = 0;
  Request request_;  // a nonblocking all-reduce in flight (pipelined CG)
};

/// Construct a Solver for A (with preconditioner M, possibly none) on `exec` and solve A x = b:
/// what the free functions cg(), gmres(), ... do. The options are checked first with the same
/// verdict on every rank. Collective.
template <class Solver, class Operator>
SolveResult solve_with(const char* name, const typename Operator::vector_type::execution_space& exec, const Operator& A,
                       const typename Operator::vector_type& b, const typename Operator::vector_type& x,
                       const Preconditioner<typename Operator::vector_type>& M, const SolverOptions& opts) {
  spmd::impl::agree(b.comm(), [&] { Solver::check_options(name, opts); });
  return Solver(exec, A, M, opts).solve(b, x);
}

}  // namespace impl

}  // namespace spmd::solvers
