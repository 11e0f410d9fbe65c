#pragma once
/// \file solvers/options.hpp
/// What the Krylov solvers take and return: SolverOptions, SolveResult with its Reason, the
/// MonitorInfo a progress callback receives, and SolverState (a solver between two iterations,
/// for checkpoints).
///
/// Every stopping decision is made from scalars that were already combined over the ranks (one
/// MPI_Allreduce gives every rank the same numbers), so every rank stops at the same iteration
/// with the same reason, and an opt-in error on non-convergence is thrown on every rank alike.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "spmd/comm.hpp"
#include "spmd/error.hpp"

namespace spmd::solvers {

/// Why a solve stopped.
enum class Reason {
  none,                //!< not stopped yet
  converged_rtol,      //!< ||r|| <= rtol ||b||
  converged_atol,      //!< ||r|| <= atol
  diverged_max_iters,  //!< max_iters iterations without convergence
  breakdown,   //!< a denominator of the iteration was zero or negative (SolveResult::detail names it and its value)
  nan_or_inf,  //!< a residual or a scalar of the iteration is NaN or infinite
  residual_mismatch,  //!< the recursive residual met the tolerance, the true residual ||b - A x|| did not
  zero_rhs,           //!< b = 0: x = 0 is the solution (set without iterating; counts as converged)
};

/// "converged_rtol", ...: the enumerator's name. Local.
inline const char* to_string(Reason r) {
  switch (r) {
    case Reason::none:
      return "none";
    case Reason::converged_rtol:
      return "converged_rtol";
    case Reason::converged_atol:
      return "converged_atol";
    case Reason::diverged_max_iters:
      return "diverged_max_iters";
    case Reason::breakdown:
      return "breakdown";
    case Reason::nan_or_inf:
      return "nan_or_inf";
    case Reason::residual_mismatch:
      return "residual_mismatch";
    case Reason::zero_rhs:
      return "zero_rhs";
  }
  return "?";
}

/// The kind of a solve's preconditioner. SolverOptions::precond takes none or jacobi (the
/// inverse of the operator's diagonal, which needs an operator with `diagonal(d)`); the others
/// are Preconditioner objects (solvers/preconditioner.hpp) given to a solver beside the options:
/// Chebyshev polynomial (solvers/chebyshev.hpp), block Jacobi with local ILU(0)
/// (solvers/ilu.hpp), geometric multigrid (solvers/multigrid.hpp), or a user's own (other).
enum class Precond { none, jacobi, chebyshev, ilu, multigrid, other };

/// "none", "jacobi", "chebyshev", "ilu", "multigrid" or "other". Local.
inline const char* to_string(Precond p) {
  switch (p) {
    case Precond::none:
      return "none";
    case Precond::jacobi:
      return "jacobi";
    case Precond::chebyshev:
      return "chebyshev";
    case Precond::ilu:
      return "ilu";
    case Precond::multigrid:
      return "multigrid";
    case Precond::other:
      return "other";
  }
  return "?";
}

/// The Precond named `name` (to_string's names); false when there is none. Local.
inline bool precond_from_string(const std::string& name, Precond& p) {
  for (Precond q :
       {Precond::none, Precond::jacobi, Precond::chebyshev, Precond::ilu, Precond::multigrid, Precond::other})
    if (name == to_string(q)) {
      p = q;
      return true;
    }
  return false;
}

/// What a solve does when it stops without converging: report it in SolveResult (default), or
/// also throw spmd::Error (the same error on every rank).
enum class OnFailure { report, throw_error };

/// What a progress callback sees (on every rank; the numbers are the same everywhere).
struct MonitorInfo {
  const char* solver;        //!< "cg", "pipelined_cg", "gmres", "fgmres" or "bicgstab"
  int iteration;             //!< iterations done
  double residual;           //!< ||r|| (the recursively updated residual)
  double relative_residual;  //!< ||r|| / ||b|| (||r|| when b = 0)
};

/// How a Krylov solver runs and when it stops (the same on every rank). The tolerances have
/// SciPy's names and meanings (scipy.sparse.linalg: converged when ||r|| <= max(rtol ||b||,
/// atol)); SciPy's `maxiter` is max_iters, counted in iterations (for GMRES: Arnoldi steps,
/// where SciPy counts restart cycles), and `restart` is SciPy's.
struct SolverOptions {
  double rtol = 1e-8;               //!< stop when ||r|| <= rtol ||b|| (tested first)
  double atol = 0.0;                //!< or when ||r|| <= atol
  int max_iters = 1000;             //!< stop (Reason::max_iters) after this many iterations
  Precond precond = Precond::none;  //!< none or jacobi (other kinds: a Preconditioner object)
  /// GMRES and FGMRES: the Krylov subspace's dimension, i.e. the iterations between restarts
  /// (SciPy's `restart`, whose default is 20; PETSc's is 30). At least 1.
  int restart = 30;
  /// Report progress every `monitor` iterations (0: never), at iteration 0 and at the last one:
  /// `monitor_callback` on every rank when set, else a line printed by rank 0.
  int monitor = 0;
  std::function<void(const MonitorInfo&)> monitor_callback;  //!< called on every rank, if set
  /// Keep ||r|| of every iteration in SolveResult::history (reserved at setup for up to 2^16
  /// iterations).
  bool keep_history = false;
  OnFailure on_failure = OnFailure::report;  //!< report a failure in SolveResult, or throw
  /// Convergence is decided on the true residual ||b - A x|| (computed when the recursive
  /// residual meets the tolerance, and at every stop): converged when it is at most
  /// (1 + residual_slack) times the tolerance. The slack absorbs the roundoff of computing
  /// b - A x and the last digits of the recursion (both far below 10% of any attainable
  /// tolerance); a true residual beyond it is reported as residual_mismatch.
  double residual_slack = 0.1;
  /// Pipelined CG: residual replacement every `replace_every` iterations (0: never
  /// periodically): r = b - A x and the recurrence vectors (w = A u, s = A p, z = A q, and
  /// u, m, q with Jacobi) are recomputed from x and p. It is also done whenever the recursive
  /// residual claims convergence. Each costs 4 operator applications and one blocking
  /// all-reduce.
  int replace_every = 50;
  /// Bitwise-reproducible dot products and norms (spmd::reproducible, reproducible.hpp): every
  /// sum of the iteration is exact and rounded once, so the iteration count, the residuals and
  /// x are the same bits at any rank count, process grid and thread count, and on CPUs and GPUs,
  /// provided the operator's apply is itself reproducible (the Laplacian is; a CsrMatrix sums a
  /// row's diagonal and off-diagonal blocks apart, which depends on the distribution). Costs the
  /// exact accumulation's work in each reduction kernel; pipelined CG then combines its sums
  /// with a blocking exact all-reduce (its overlap is lost).
  bool reproducible = false;
};

/// How a solve ended (the same on every rank).
struct SolveResult {
  bool converged = false;        //!< the true residual met the tolerance
  Reason reason = Reason::none;  //!< why it stopped
  int iterations = 0;            //!< iterations done (x is the iterate after that many)
  double residual = 0.0;         //!< ||r|| at the end (the solver's recursively updated residual)
  double true_residual = 0.0;    //!< ||b - A x|| at the end, computed from x (what `converged` is decided on)
  int replacements = 0;          //!< residual replacements (pipelined CG) or restarts from b - A x (BiCGStab)
  std::string detail;            //!< what was observed, for breakdown and residual_mismatch ("" otherwise)
  std::vector<double> history;   //!< ||r|| per iteration from the first one run (keep_history)
};

/// A solver between two iterations: everything it needs to continue exactly. `vectors` are
/// handles that share data with the solver (x included, as "x"); `scalars` are the already
/// reduced numbers of the iteration. Restoring them (Solver::resume) at the same rank count
/// continues bitwise as if never interrupted; at another rank count, to roundoff.
template <class Vector>
struct SolverState {
  std::string solver;                                   //!< "cg", "pipelined_cg", "gmres", "fgmres", "bicgstab"
  Precond precond = Precond::none;                      //!< the preconditioner in use
  std::int64_t iteration = 0;                           //!< iterations done
  std::vector<std::pair<std::string, Vector>> vectors;  //!< the solver's vectors, by name
  std::vector<std::pair<std::string, double>> scalars;  //!< its reduced scalars, by name
};

namespace impl {

/// Stopping tests, history, progress reports and the final result, shared by the solvers. Every
/// number it is given is already reduced over the ranks.
class Progress {
 public:
  Progress(const char* solver, const SolverOptions& opts) : solver_(solver), opts_(opts) {}

  /// Begin a solve (or a resumed one) at `iteration` with ||b|| = bnorm: clears the result and
  /// reserves the history (the only allocation of a solve's bookkeeping). Local.
  void start(double bnorm, int iteration) {
    bnorm_ = bnorm;
    result_ = SolveResult{};
    result_.iterations = iteration;
    // Reserved up front for up to 2^16 iterations; a longer history grows (rarely, amortised).
    if (opts_.keep_history)
      result_.history.reserve(static_cast<std::size_t>(std::min(opts_.max_iters - iteration + 1, 1 << 16)));
  }

  /// The reason to stop after `iteration` iterations with residual norm `rnorm`, or none. Local.
  Reason test(double rnorm, int iteration) const {
    if (!std::isfinite(rnorm)) return Reason::nan_or_inf;
    if (rnorm <= opts_.rtol * bnorm_) return Reason::converged_rtol;
    if (rnorm <= opts_.atol) return Reason::converged_atol;
    if (iteration >= opts_.max_iters) return Reason::diverged_max_iters;
    return Reason::none;
  }

  /// The verdict on a true residual norm `true_rnorm`: converged_rtol or converged_atol when it
  /// meets that tolerance within the slack (SolverOptions::residual_slack), else none. Local.
  Reason verdict(double true_rnorm) const {
    const double f = 1.0 + opts_.residual_slack;
    if (!std::isfinite(true_rnorm)) return Reason::none;
    if (true_rnorm <= f * opts_.rtol * bnorm_) return Reason::converged_rtol;
    if (true_rnorm <= f * opts_.atol) return Reason::converged_atol;
    return Reason::none;
  }

  /// Count a residual replacement. Local.
  void replaced() { ++result_.replacements; }

  /// Record ||r|| of `iteration` (history; a progress report when due). Local (the callback may
  /// communicate; it is called on every rank).
  void record(int iteration, double rnorm) {
    result_.iterations = iteration;
    result_.residual = rnorm;
    if (opts_.keep_history) result_.history.push_back(rnorm);
    if (opts_.monitor > 0 && iteration % opts_.monitor == 0) report(iteration, rnorm);
  }

  /// Stop with `reason` after `iteration` iterations at residual norm `rnorm`, true residual norm
  /// `true_rnorm`, with what was observed (`detail`). Throws the same spmd::Error on every rank
  /// when the solve failed and the options ask for it. Local.
  void stop(Reason reason, int iteration, double rnorm, double true_rnorm, std::string detail, const Comm& comm) {
    const bool reported = opts_.monitor > 0 && result_.iterations == iteration && iteration % opts_.monitor == 0;
    result_.iterations = iteration;
    result_.residual = rnorm;
    result_.true_residual = true_rnorm;
    result_.detail = std::move(detail);
    result_.reason = reason;
    result_.converged =
        reason == Reason::converged_rtol || reason == Reason::converged_atol || reason == Reason::zero_rhs;
    if (opts_.monitor > 0 && !reported) report(iteration, rnorm);
    if (!result_.converged && opts_.on_failure == OnFailure::throw_error)
      throw Error::replicated(spmd::impl::str("spmd::solvers::", solver_, ": no convergence: ", to_string(reason),
                                              " after ", iteration, " iterations (||r|| ", rnorm, ", ||r||/||b|| ",
                                              relative(rnorm), ", ||b - A x|| ", true_rnorm, ", rtol ", opts_.rtol,
                                              ", atol ", opts_.atol, ", max_iters ", opts_.max_iters, ", ", comm.size(),
                                              " ranks)", result_.detail.empty() ? "" : ": ", result_.detail));
  }

  bool stopped() const { return result_.reason != Reason::none; }
  const SolveResult& result() const { return result_; }
  double bnorm() const { return bnorm_; }
  double relative(double rnorm) const { return bnorm_ > 0 ? rnorm / bnorm_ : rnorm; }
  const SolverOptions& options() const { return opts_; }
  void set_comm_rank(int rank) { rank_ = rank; }

 private:
  void report(int iteration, double rnorm) const {
    const MonitorInfo info{solver_, iteration, rnorm, relative(rnorm)};
    if (opts_.monitor_callback) {
      opts_.monitor_callback(info);
    } else if (rank_ == 0) {
      std::printf("  %s: iteration %6d  ||r|| %.6e  ||r||/||b|| %.6e\n", solver_, iteration, rnorm,
                  info.relative_residual);
      std::fflush(stdout);
    }
  }

  const char* solver_;
  SolverOptions opts_;
  double bnorm_ = 0.0;
  int rank_ = 0;
  SolveResult result_;
};

}  // namespace impl
}  // namespace spmd::solvers
