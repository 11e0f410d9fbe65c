#pragma once
// The work of BiCGStab (solvers/bicgstab.hpp has the method, its costs and its breakdowns):
// impl::BiCgStab, the class behind KrylovSolver<Op, KrylovMethod::bicgstab> (solvers/krylov.hpp).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/solvers/impl/kernels.hpp"
#include "spmd/solvers/impl/krylov.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers::impl {

/// BiCGStab (see the file comment). Construct once (allocates the work vectors), then solve()
/// as often as needed, or setup() and step().
template <class Operator>
class BiCgStab : public KrylovBase<BiCgStab<Operator>, Operator> {
  using Base = KrylovBase<BiCgStab<Operator>, Operator>;
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

  /// A solver whose kernels run on `exec`, preconditioned by `M` (or SolverOptions::precond).
  /// Local (allocates r, r_hat, p, v, s, t, and p^, s^ with a preconditioner); throws the same
  /// spmd::Error on every rank for bad options.
  BiCgStab(const execution_space& exec, const Operator& A, Preconditioner<vector_type> M,
           const SolverOptions& opts = {})
      : Base("bicgstab", exec, A, opts, std::move(M)),
        r_(A.make_vector(this->label("r"))),
        rh_(A.make_vector(this->label("r_hat"))),
        p_(A.make_vector(this->label("p"))),
        v_(A.make_vector(this->label("v"))),
        s_(A.make_vector(this->label("s"))),
        tv_(A.make_vector(this->label("t"))) {
    if (this->preconditioned()) {
      ph_ = A.make_vector(this->label("p_hat"));
      sh_ = A.make_vector(this->label("s_hat"));
    } else {
      ph_ = spmd::impl::share(p_);
      sh_ = spmd::impl::share(s_);
    }
  }
  /// Without a preconditioner object (SolverOptions::precond: none or jacobi). Local.
  BiCgStab(const BiCgStab&) = delete;
  BiCgStab& operator=(const BiCgStab&) = delete;

  /// Bind b and x; r = r_hat = b - A x, p = v = 0. Returns true when nothing is left to do.
  /// Collective.
  bool setup(const vector_type& b, const vector_type& x) {
    const spmd::impl::Region region("spmd::solvers::bicgstab::setup");
    this->bind(b, x, r_);
    spmd::copyto(this->exec_, this->t_, x);
    impl::apply_on(this->exec_, A_, this->t_, tv_);
    it_ = 0;
    last_claim_ = std::numeric_limits<double>::infinity();
    progress_.start(start_from_tv(), 0);
    if (this->stop_if_zero_rhs()) return true;
    const double rn = rhnorm_;
    progress_.record(0, rn);
    const Reason why = progress_.test(rn, 0);
    if (why != Reason::none) return this->stop_at(why, rn, rn);  // r = b - A x was computed from x
    return false;
  }

  /// One iteration (Collective). Returns true when the solve has stopped; result() says why.
  bool step() {
    const spmd::impl::Region region("spmd::solvers::bicgstab::iteration");
    if (progress_.stopped()) return true;
    const bool J = this->jacobi();
    const auto dinv = this->dinv_access(r_);
    const double rn0 = progress_.result().residual;
    if (J)
      impl::for_points(
          this->exec_, "spmd::solvers::bicgstab::direction", r_,
          impl::BicgDirection<Acc, value_type, true>{p_.owned_access(), r_.owned_access(), v_.owned_access(),
                                                     ph_.owned_access(), dinv, beta_, omega_});
    else
      impl::for_points(
          this->exec_, "spmd::solvers::bicgstab::direction", r_,
          impl::BicgDirection<Acc, value_type, false>{p_.owned_access(), r_.owned_access(), v_.owned_access(),
                                                      ph_.owned_access(), dinv, beta_, omega_});
    if (this->general()) this->M_.apply(this->exec_, p_, ph_);
    impl::apply_on(this->exec_, A_, ph_, v_);
    value_type sv[2];
    this->template reduce_sums<2>("spmd::solvers::bicgstab::sigma", r_,
                                  impl::BicgSigma<Acc, value_type>{rh_.owned_access(), v_.owned_access()}, sv);
    const double sigma = static_cast<double>(sv[0]), vnorm = std::sqrt(static_cast<double>(sv[1]));
    if (!std::isfinite(sigma) || !std::isfinite(vnorm))
      return stop(Reason::nan_or_inf, rn0,
                  spmd::impl::str("r_hat.v = ", sigma, ", ||v|| = ", vnorm, " in iteration ", it_ + 1));
    if (!(std::abs(sigma) > eps() * rhnorm_ * vnorm))
      return stop(Reason::breakdown, rn0,
                  spmd::impl::str("r_hat.v = ", sigma, " in iteration ", it_ + 1, " (||r_hat|| = ", rhnorm_,
                                  ", ||v|| = ", vnorm,
                                  "): v = A M^-1 p is orthogonal to the shadow residual to working precision"));
    const value_type alpha = static_cast<value_type>(rho_ / sv[0]);
    if (J)
      impl::for_points(this->exec_, "spmd::solvers::bicgstab::half", r_,
                       impl::BicgHalf<Acc, value_type, true>{s_.owned_access(), r_.owned_access(), v_.owned_access(),
                                                             sh_.owned_access(), dinv, alpha});
    else
      impl::for_points(this->exec_, "spmd::solvers::bicgstab::half", r_,
                       impl::BicgHalf<Acc, value_type, false>{s_.owned_access(), r_.owned_access(), v_.owned_access(),
                                                              sh_.owned_access(), dinv, alpha});
    if (this->general()) this->M_.apply(this->exec_, s_, sh_);
    impl::apply_on(this->exec_, A_, sh_, tv_);
    value_type so[3];
    this->template reduce_sums<3>("spmd::solvers::bicgstab::omega", r_,
                                  impl::BicgOmega<Acc, value_type>{tv_.owned_access(), s_.owned_access()}, so);
    const double ts = static_cast<double>(so[0]), tt = static_cast<double>(so[1]);
    const double sn = std::sqrt(static_cast<double>(so[2]));
    const auto half_step = [&] {  // x += alpha p^: the iterate whose residual is s
      impl::for_points(this->exec_, "spmd::solvers::bicgstab::half_x", r_,
                       impl::Axpy<Acc, value_type>{this->x_.owned_access(), ph_.owned_access(), alpha});
      ++it_;
      progress_.record(it_, sn);
    };
    if (!std::isfinite(ts) || !std::isfinite(tt) || !std::isfinite(sn))
      return stop(Reason::nan_or_inf, rn0,
                  spmd::impl::str("t.s = ", ts, ", t.t = ", tt, ", ||s|| = ", sn, " in iteration ", it_ + 1));
    const Reason half = progress_.test(sn, it_ + 1);
    if (half == Reason::converged_rtol || half == Reason::converged_atol) {
      half_step();
      return claim(half, sn);
    }
    const double omega = tt > 0 ? ts / tt : 0.0;
    if (!(std::abs(omega) > 0)) {
      half_step();
      return stop(Reason::breakdown, sn,
                  tt > 0 ? spmd::impl::str("omega = t.s / t.t = 0 in iteration ", it_, " (t.s = ", ts, ", t.t = ", tt,
                                           ", ||s|| = ", sn, "): t = A M^-1 s is orthogonal to s (stagnation)")
                         : spmd::impl::str("t = A M^-1 s = 0 in iteration ", it_, " with ||s|| = ", sn,
                                           ": A M^-1 is singular"));
    }
    omega_ = static_cast<value_type>(omega);
    value_type ru[2];
    this->template reduce_sums<2>(
        "spmd::solvers::bicgstab::update", r_,
        impl::BicgUpdate<Acc, value_type>{this->x_.owned_access(), ph_.owned_access(), sh_.owned_access(),
                                          r_.owned_access(), s_.owned_access(), tv_.owned_access(), rh_.owned_access(),
                                          alpha, omega_},
        ru);
    ++it_;
    const double rn = std::sqrt(static_cast<double>(ru[1]));
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    if (why == Reason::converged_rtol || why == Reason::converged_atol) return claim(why, rn);
    if (why != Reason::none) return stop(why, rn);
    const double rho = static_cast<double>(ru[0]);
    if (!std::isfinite(rho))
      return stop(Reason::nan_or_inf, rn, spmd::impl::str("r_hat.r = ", rho, " in iteration ", it_));
    if (!(std::abs(rho) > eps() * rhnorm_ * rn))
      return stop(
          Reason::breakdown, rn,
          spmd::impl::str("rho = r_hat.r = ", rho, " in iteration ", it_, " (||r_hat|| = ", rhnorm_, ", ||r|| = ", rn,
                          "): the residual is orthogonal to the shadow residual to working precision"));
    beta_ = static_cast<value_type>((rho / static_cast<double>(rho_)) * (static_cast<double>(alpha) / omega));
    rho_ = ru[0];
    return false;
  }

  /// ||b - A x|| of the current iterate. Collective (one operator application).
  double true_residual() { return this->true_residual_norm(tv_); }

  /// The state between two iterations: x, r, r_hat, p, v and the scalars. The vectors are the
  /// solver's own. Local.
  SolverState<vector_type> state() const {
    SolverState<vector_type> s{"bicgstab", this->precond(), it_, {}, {}};
    for (const auto& v : {std::pair<const char*, const vector_type*>{"x", &this->x_},
                          {"r", &r_},
                          {"r_hat", &rh_},
                          {"p", &p_},
                          {"v", &v_}})
      s.vectors.emplace_back(v.first, spmd::impl::share(*v.second));
    s.scalars = {{"bnorm", progress_.bnorm()},
                 {"rho", static_cast<double>(rho_)},
                 {"beta", static_cast<double>(beta_)},
                 {"omega", static_cast<double>(omega_)},
                 {"rhat_norm", rhnorm_},
                 {"rnorm", progress_.result().residual},
                 {"last_claim", std::isinf(last_claim_) ? -1.0 : last_claim_}};
    return s;
  }

  /// Continue from a saved state (see CG::resume). Collective.
  bool resume(const vector_type& b, const vector_type& x, const SolverState<vector_type>& s) {
    const char* fn = "spmd::solvers::BiCGStab::resume";
    this->bind(b, x, r_, this->state_problem(fn, s));
    this->restore_vector(x, Base::find_vector(fn, s, "x"));
    this->restore_vector(r_, Base::find_vector(fn, s, "r"));
    this->restore_vector(rh_, Base::find_vector(fn, s, "r_hat"));
    this->restore_vector(p_, Base::find_vector(fn, s, "p"));
    this->restore_vector(v_, Base::find_vector(fn, s, "v"));
    it_ = static_cast<int>(s.iteration);
    progress_.start(Base::find_scalar(fn, s, "bnorm"), it_);
    rho_ = static_cast<value_type>(Base::find_scalar(fn, s, "rho"));
    beta_ = static_cast<value_type>(Base::find_scalar(fn, s, "beta"));
    omega_ = static_cast<value_type>(Base::find_scalar(fn, s, "omega"));
    rhnorm_ = Base::find_scalar(fn, s, "rhat_norm");
    const double claimed = Base::find_scalar_or(s, "last_claim", -1.0);  // absent in older states
    last_claim_ = claimed >= 0 ? claimed : std::numeric_limits<double>::infinity();
    if (this->stop_if_zero_rhs()) return true;
    const double rn = Base::find_scalar(fn, s, "rnorm");
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    if (why != Reason::none) return stop(why, rn);
    return false;
  }

 private:
  using Acc = impl::Acc<vector_type>;
  static double eps() { return std::numeric_limits<value_type>::epsilon(); }

  /// Start the recursion from tv = A x: r = r_hat = b - tv, p = v = 0, rho = r_hat.r,
  /// beta = omega = 0. Returns ||b||. Collective.
  double start_from_tv() {
    value_type red[2];
    this->template reduce_sums<2>(
        "spmd::solvers::bicgstab::start", r_,
        impl::BicgStart<Acc, value_type>{this->b_.owned_access(), tv_.owned_access(), r_.owned_access(),
                                         rh_.owned_access(), p_.owned_access(), v_.owned_access()},
        red);
    rho_ = red[1];
    beta_ = omega_ = value_type(0);
    rhnorm_ = std::sqrt(static_cast<double>(red[1]));
    return std::sqrt(static_cast<double>(red[0]));
  }

  /// The recursive residual rn met the tolerance (`why`): the true residual ||b - A x||
  /// decides. Met within SolverOptions::residual_slack: converged. Not met, but below the true
  /// residual of the previous such claim (or the first claim): the recursion restarts from x
  /// (r = r_hat = b - A x, p = v = 0; counted in SolveResult::replacements) and goes on; else
  /// residual_mismatch. (The recursion drifts from b - A x by roundoff; on a GPU its other
  /// summation order left a claim at 7.4e-13 with a true residual of 1.1e-12 for rtol 1e-12.)
  /// Collective.
  bool claim(Reason why, double rn) {
    const double tr = true_residual();  // tv = A x
    if (progress_.verdict(tr) != Reason::none || !(tr < last_claim_) || it_ >= this->options().max_iters)
      return this->stop_at(why, rn, tr);
    last_claim_ = tr;
    start_from_tv();
    progress_.replaced();
    return false;
  }

  vector_type r_, rh_, p_, v_, s_, tv_;
  vector_type ph_, sh_;  // M^-1 p and M^-1 s (p and s themselves without a preconditioner)
  value_type rho_ = 0, beta_ = 0, omega_ = 0;
  double rhnorm_ = 0;                                            // ||r_hat||
  double last_claim_ = std::numeric_limits<double>::infinity();  // true residual of the last claim not met
};

}  // namespace spmd::solvers::impl
