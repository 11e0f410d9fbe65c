#pragma once
// The work of CG (solvers/cg.hpp has the method, its costs and its stopping tests): impl::Cg,
// the class behind KrylovSolver<Op, KrylovMethod::cg> (solvers/krylov.hpp).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/solvers/impl/kernels.hpp"
#include "spmd/solvers/impl/krylov.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers::impl {

/// Classic preconditioned CG. Construct once (allocates the work vectors r, p, q and, with
/// Jacobi, the inverse diagonal), then solve() as often as needed, or setup() and step().
template <class Operator>
class Cg : public KrylovBase<Cg<Operator>, Operator> {
  using Base = KrylovBase<Cg<Operator>, Operator>;
  using Base::A_;
  using Base::it_;
  using Base::progress_;
  using Base::stop;

 public:
  /// The operator's vector type.
  using vector_type = typename Base::vector_type;
  /// The element type.
  using value_type = typename Base::value_type;

  /// The execution space of the solver's kernels.
  using execution_space = typename Base::execution_space;

  /// A solver preconditioned by `M` (symmetric positive definite: a preconditioner that says it
  /// is not is refused with the same spmd::Error on every rank). Local.
  Cg(const execution_space& exec, const Operator& A, Preconditioner<vector_type> M, const SolverOptions& opts = {})
      : Base("cg", exec, A, opts, std::move(M)),
        r_(A.make_vector(this->label("r"))),
        p_(A.make_vector(this->label("p"))),
        q_(A.make_vector(this->label("q"))) {
    this->require_symmetric_preconditioner();
    if (this->general()) z_ = A.make_vector(this->label("z"));
  }
  Cg(const Cg&) = delete;
  Cg& operator=(const Cg&) = delete;

  /// Bind b and x and compute the initial residual r = b - A x. Returns true when nothing is
  /// left to do (converged at iteration 0, or max_iters is 0). Collective.
  bool setup(const vector_type& b, const vector_type& x) {
    const spmd::impl::Region region("spmd::solvers::cg::setup");
    this->bind(b, x, r_);
    spmd::copyto(this->exec_, p_, x);  // p has the halo A may need
    impl::apply_on(this->exec_, A_, p_, q_);
    value_type red[3];
    if (this->general())
      start_general(red);
    else if (this->jacobi())
      start<true>(red);
    else
      start<false>(red);
    it_ = 0;
    progress_.start(std::sqrt(static_cast<double>(red[0])), 0);
    rr_ = red[1];
    gamma_ = red[2];
    return check_start();
  }

  /// One iteration (Collective). Returns true when the solve has stopped; result() says why.
  /// With OnFailure::throw_error, a stop without convergence throws here, on every rank.
  bool step() {
    const spmd::impl::Region region("spmd::solvers::cg::iteration");
    if (progress_.stopped()) return true;
    impl::apply_on(this->exec_, A_, p_, q_);
    value_type pq_red[1];
    this->template reduce_sums<1>("spmd::solvers::cg::dot", p_,
                                  impl::Dot<Acc, value_type>{p_.owned_access(), q_.owned_access()}, pq_red);
    const value_type pq = pq_red[0];
    const double rnorm = std::sqrt(static_cast<double>(rr_));
    if (!std::isfinite(static_cast<double>(pq)))
      return stop(Reason::nan_or_inf, rnorm, spmd::impl::str("p.Ap = ", pq, " in iteration ", it_ + 1));
    if (!(pq > value_type(0)))
      return stop(Reason::breakdown, rnorm, spmd::impl::str("p.Ap = ", pq, " <= 0 in iteration ", it_ + 1));
    const value_type alpha = gamma_ / pq;
    value_type red[2];
    if (this->general())
      residual_general(alpha, red);
    else if (this->jacobi())
      residual<true>(alpha, red);
    else
      residual<false>(alpha, red);
    ++it_;
    rr_ = red[0];
    const double rn = std::sqrt(static_cast<double>(rr_));
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    const bool bad_gamma = !std::isfinite(static_cast<double>(red[1])) || !(red[1] > value_type(0));
    if (why != Reason::none || bad_gamma) {
      impl::for_points(this->exec_, "spmd::solvers::cg::update_x", r_,
                       impl::Axpy<Acc, value_type>{this->x_.owned_access(), p_.owned_access(), alpha});
      if (why != Reason::none) return stop(why, rn);
      return stop(std::isfinite(static_cast<double>(red[1])) ? Reason::breakdown : Reason::nan_or_inf, rn,
                  spmd::impl::str("r.z = ", red[1], " in iteration ", it_,
                                  this->jacobi()    ? " (z = D r, D the Jacobi inverse diagonal)"
                                  : this->general() ? " (z = M r, M the preconditioner)"
                                                    : ""));
    }
    const value_type beta = red[1] / gamma_;
    gamma_ = red[1];
    if (this->general())
      impl::for_points(this->exec_, "spmd::solvers::cg::direction", r_,
                       impl::CgDirectionZ<Acc, value_type>{this->x_.owned_access(), p_.owned_access(),
                                                           z_.owned_access(), alpha, beta});
    else if (this->jacobi())
      direction<true>(alpha, beta);
    else
      direction<false>(alpha, beta);
    return false;
  }

  /// The state between two iterations (after setup or a step): x, r, p and the reduced scalars.
  /// The vectors are the solver's own (save them before the next step). Local.
  SolverState<vector_type> state() const {
    SolverState<vector_type> s{"cg", this->precond(), it_, {}, {}};
    for (const auto& v : {std::pair<const char*, const vector_type*>{"x", &this->x_}, {"r", &r_}, {"p", &p_}})
      s.vectors.emplace_back(v.first, spmd::impl::share(*v.second));
    s.scalars = {
        {"bnorm", progress_.bnorm()}, {"rr", static_cast<double>(rr_)}, {"gamma", static_cast<double>(gamma_)}};
    return s;
  }

  /// Continue from a saved state (from state(), saved and loaded at any rank count): binds b
  /// and x, copies x, r, p from the state's vectors, restores the scalars. Returns done(). The
  /// result's history restarts at the saved iteration. Collective.
  bool resume(const vector_type& b, const vector_type& x, const SolverState<vector_type>& s) {
    const char* fn = "spmd::solvers::CG::resume";
    this->bind(b, x, r_, this->state_problem(fn, s));
    this->restore_vector(x, Base::find_vector(fn, s, "x"));
    this->restore_vector(r_, Base::find_vector(fn, s, "r"));
    this->restore_vector(p_, Base::find_vector(fn, s, "p"));
    it_ = static_cast<int>(s.iteration);
    progress_.start(Base::find_scalar(fn, s, "bnorm"), it_);
    rr_ = static_cast<value_type>(Base::find_scalar(fn, s, "rr"));
    gamma_ = static_cast<value_type>(Base::find_scalar(fn, s, "gamma"));
    return check_start();
  }

  /// ||b - A x|| of the current iterate, computed from x (one operator application; between two
  /// steps it changes nothing the iteration keeps). Collective.
  double true_residual() { return this->true_residual_norm(q_); }

 private:
  using Acc = impl::Acc<vector_type>;

  /// The tests at the iteration setup() or resume() starts from. Collective.
  bool check_start() {
    if (this->stop_if_zero_rhs()) return true;
    const double rn = std::sqrt(static_cast<double>(rr_));
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    if (why != Reason::none) return stop(why, rn);
    if (!std::isfinite(static_cast<double>(gamma_)))
      return stop(Reason::nan_or_inf, rn, spmd::impl::str("r.z = ", gamma_, " at the start (iteration ", it_, ")"));
    if (!(gamma_ > value_type(0)))
      return stop(Reason::breakdown, rn, spmd::impl::str("r.z = ", gamma_, " <= 0 at the start (iteration ", it_, ")"));
    return false;
  }
  /// r = b - A x, z = M r, p = z; (b.b, r.r, r.z) (a preconditioner object). Collective.
  void start_general(value_type (&red)[3]) {
    value_type s2[2], s1[1];
    this->template reduce_sums<2>(
        "spmd::solvers::cg::start", r_,
        impl::CgStartResidual<Acc, value_type>{this->b_.owned_access(), q_.owned_access(), r_.owned_access()}, s2);
    this->M_.apply(this->exec_, r_, z_);
    this->template reduce_sums<1>(
        "spmd::solvers::cg::start_direction", r_,
        impl::CopyDot<Acc, value_type>{p_.owned_access(), z_.owned_access(), r_.owned_access()}, s1);
    red[0] = s2[0];
    red[1] = s2[1];
    red[2] = s1[0];
  }
  /// r -= alpha q, z = M r; (r.r, r.z) (a preconditioner object). Collective.
  void residual_general(value_type alpha, value_type (&red)[2]) {
    impl::for_points(this->exec_, "spmd::solvers::cg::residual", r_,
                     impl::Axpy<Acc, value_type>{r_.owned_access(), q_.owned_access(), -alpha});
    this->M_.apply(this->exec_, r_, z_);
    this->template reduce_sums<2>("spmd::solvers::cg::residual_sums", r_,
                                  impl::Dot2<Acc, value_type>{r_.owned_access(), z_.owned_access()}, red);
  }
  template <bool J>
  void start(value_type (&red)[3]) {
    this->template reduce_sums<3>(
        "spmd::solvers::cg::start", r_,
        impl::CgStart<Acc, value_type, J>{this->b_.owned_access(), q_.owned_access(), r_.owned_access(),
                                          p_.owned_access(), this->dinv_access(r_)},
        red);
  }
  template <bool J>
  void residual(value_type alpha, value_type (&red)[2]) {
    this->template reduce_sums<2>(
        "spmd::solvers::cg::residual", r_,
        impl::CgResidual<Acc, value_type, J>{r_.owned_access(), q_.owned_access(), this->dinv_access(r_), alpha}, red);
  }
  template <bool J>
  void direction(value_type alpha, value_type beta) {
    impl::for_points(this->exec_, "spmd::solvers::cg::direction", r_,
                     impl::CgDirection<Acc, value_type, J>{this->x_.owned_access(), p_.owned_access(),
                                                           r_.owned_access(), this->dinv_access(r_), alpha, beta});
  }

  vector_type r_, p_, q_;
  vector_type z_;  // z = M r (a preconditioner object only)
  value_type rr_ = 0, gamma_ = 0;
};

}  // namespace spmd::solvers::impl
