#pragma once
/// \file solvers/krylov.hpp
/// KrylovSolver<Operator, KrylovMethod>: the one class behind the Krylov solvers' names
///
///   CG<Op>, PipelinedCG<Op>   (solvers/cg.hpp)
///   GMRES<Op>, FGMRES<Op>     (solvers/gmres.hpp)
///   BiCGStab<Op>              (solvers/bicgstab.hpp)
///
/// Every one has the same members: construct it once (it allocates its work vectors), then
/// solve() as often as needed, or setup() and step() one iteration at a time, and state() /
/// resume() between two iterations (checkpoint and restart: bitwise at the same rank count).
/// The method's work is done in solvers/impl/ (include the method's header, not this one alone).

#include <utility>

#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// The Krylov methods of the library.
enum class KrylovMethod { cg, pipelined_cg, gmres, fgmres, bicgstab };

namespace impl {
template <class Operator>
class Cg;
template <class Operator>
class PipelinedCg;
template <class Operator, bool Flexible>
class Gmres;
template <class Operator>
class BiCgStab;

/// The class that does a method's work (solvers/impl/cg.hpp, pipelined_cg.hpp, gmres.hpp, bicgstab.hpp).
template <class Operator, KrylovMethod K>
struct MethodOf;
template <class Operator>
struct MethodOf<Operator, KrylovMethod::cg> {
  using type = Cg<Operator>;
};
template <class Operator>
struct MethodOf<Operator, KrylovMethod::pipelined_cg> {
  using type = PipelinedCg<Operator>;
};
template <class Operator>
struct MethodOf<Operator, KrylovMethod::gmres> {
  using type = Gmres<Operator, false>;
};
template <class Operator>
struct MethodOf<Operator, KrylovMethod::fgmres> {
  using type = Gmres<Operator, true>;
};
template <class Operator>
struct MethodOf<Operator, KrylovMethod::bicgstab> {
  using type = BiCgStab<Operator>;
};
}  // namespace impl

/// A Krylov solver of method K for the linear operator A (solvers/operator.hpp). Not copyable;
/// it keeps a reference to A, which must outlive it.
template <class Operator, KrylovMethod K>
class KrylovSolver {
  using Method = typename impl::MethodOf<Operator, K>::type;

 public:
  /// The operator's vector type.
  using vector_type = typename Operator::vector_type;
  /// The element type.
  using value_type = typename vector_type::value_type;
  /// The execution space of the solver's kernels.
  using execution_space = typename vector_type::execution_space;
  /// The method.
  static constexpr KrylovMethod method = K;

  /// A solver whose kernels run on `exec` (an instance of the vectors' execution space), with
  /// SolverOptions::precond (none or jacobi). Local (allocates the work vectors with
  /// A.make_vector); throws the same spmd::Error on every rank for bad options or
  /// Precond::jacobi on an operator without diagonal().
  KrylovSolver(const execution_space& exec, const Operator& A, const SolverOptions& opts = {})
      : m_(exec, A, Preconditioner<vector_type>(), opts) {}
  /// A solver preconditioned by `M` (CG and pipelined CG refuse one that is not symmetric
  /// positive definite, with the same spmd::Error on every rank). Local.
  KrylovSolver(const execution_space& exec, const Operator& A, Preconditioner<vector_type> M,
               const SolverOptions& opts = {})
      : m_(exec, A, std::move(M), opts) {}
  /// On a default instance. Local.
  explicit KrylovSolver(const Operator& A, const SolverOptions& opts = {}) : KrylovSolver(execution_space(), A, opts) {}
  /// Preconditioned by `M`, on a default instance. Local.
  KrylovSolver(const Operator& A, Preconditioner<vector_type> M, const SolverOptions& opts = {})
      : KrylovSolver(execution_space(), A, std::move(M), opts) {}
  KrylovSolver(const KrylovSolver&) = delete;
  KrylovSolver& operator=(const KrylovSolver&) = delete;

  /// Solve A x = b from the initial guess in x: setup(b, x), then step() until it stops.
  /// Collective; the result is the same on every rank.
  SolveResult solve(const vector_type& b, const vector_type& x) { return m_.solve(b, x); }
  /// Bind b and x and compute the initial residual. Returns true when nothing is left to do
  /// (converged at iteration 0, or max_iters is 0). Collective.
  bool setup(const vector_type& b, const vector_type& x) { return m_.setup(b, x); }
  /// One iteration. Returns true when the solve has stopped; result() says why. With
  /// OnFailure::throw_error, a stop without convergence throws here, on every rank. Collective.
  bool step() { return m_.step(); }

  /// Whether the solve has stopped. Local.
  bool done() const { return m_.done(); }
  /// Iterations done. Local.
  int iteration() const { return m_.iteration(); }
  /// The result so far (final once done()). Local.
  const SolveResult& result() const { return m_.result(); }
  /// The options. Local.
  const SolverOptions& options() const { return m_.options(); }
  /// The preconditioner's kind (SolverOptions::precond, or the object's). Local.
  Precond precond() const { return m_.precond(); }
  /// The preconditioner object (empty with SolverOptions::precond). Local.
  const Preconditioner<vector_type>& preconditioner() const { return m_.preconditioner(); }

  /// ||b - A x|| of the current iterate (one operator application; between two steps it changes
  /// nothing the iteration keeps). Collective.
  double true_residual() { return m_.true_residual(); }

  /// The state between two iterations (after setup or a step): the method's vectors (views of
  /// the solver's own: save them before the next step) and reduced scalars (docs/api/solvers.md
  /// lists them). Pipelined CG completes its all-reduce in flight first. Local.
  SolverState<vector_type> state() { return m_.state(); }
  /// state() of a const solver (not pipelined CG, whose state() completes its all-reduce). Local.
  SolverState<vector_type> state() const {
    static_assert(K != KrylovMethod::pipelined_cg, "spmd::solvers::PipelinedCG::state() is not const");
    return m_.state();
  }
  /// Continue from a saved state (from state(), saved and loaded at any rank count): binds b and
  /// x, copies the state's vectors in, restores the scalars. Returns done(). The result's history
  /// restarts at the saved iteration. Collective.
  bool resume(const vector_type& b, const vector_type& x, const SolverState<vector_type>& s) {
    return m_.resume(b, x, s);
  }

  /// Pipelined CG only: residual replacement now (recompute the residual and recurrence vectors
  /// from x and p; 4 operator applications, a blocking all-reduce). Collective.
  void replace() {
    static_assert(K == KrylovMethod::pipelined_cg, "spmd::solvers::KrylovSolver::replace: pipelined CG only");
    m_.replace();
  }

 private:
  Method m_;
};

}  // namespace spmd::solvers
