#pragma once
// The work of pipelined CG (solvers/cg.hpp has the method, its costs and its stopping tests):
// impl::PipelinedCg, the class behind KrylovSolver<Op, KrylovMethod::pipelined_cg>
// (solvers/krylov.hpp).

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

/// Pipelined CG (P. Ghysels, W. Vanroose, "Hiding global synchronization latency in the
/// preconditioned Conjugate Gradient algorithm", Parallel Computing 40, 2014, Algorithm 4):
/// the iteration's three dot products are combined in one MPI_Iallreduce that is in flight
/// while the operator is applied. Work vectors: r, w, n, z, s, p (and u, m, q, the inverse
/// diagonal with Jacobi).
template <class Operator>
class PipelinedCg : public KrylovBase<PipelinedCg<Operator>, Operator> {
  using Base = KrylovBase<PipelinedCg<Operator>, Operator>;
  using Base::A_;
  using Base::it_;
  using Base::progress_;
  using Base::request_;
  using Base::stop;

 public:
  /// The operator's vector type.
  using vector_type = typename Base::vector_type;
  /// The element type.
  using value_type = typename Base::value_type;

  /// Local (allocates the work vectors with A.make_vector); errors as CG's.
  using execution_space = typename Base::execution_space;

  /// A solver preconditioned by `M` (symmetric positive definite, as CG's). Local.
  PipelinedCg(const execution_space& exec, const Operator& A, Preconditioner<vector_type> M,
              const SolverOptions& opts = {})
      : Base("pipelined_cg", exec, A, opts, std::move(M)),
        r_(A.make_vector(this->label("r"))),
        w_(A.make_vector(this->label("w"))),
        n_(A.make_vector(this->label("n"))),
        z_(A.make_vector(this->label("z"))),
        s_(A.make_vector(this->label("s"))),
        p_(A.make_vector(this->label("p"))) {
    this->require_symmetric_preconditioner();
    if (this->preconditioned()) {
      u_ = A.make_vector(this->label("u"));
      m_ = A.make_vector(this->label("m"));
      q_ = A.make_vector(this->label("q"));
    } else {  // u is r, m is w, q is s (shared storage)
      u_ = spmd::impl::share(r_);
      m_ = spmd::impl::share(w_);
      q_ = spmd::impl::share(s_);
    }
  }
  PipelinedCg(const PipelinedCg&) = delete;
  PipelinedCg& operator=(const PipelinedCg&) = delete;

  /// Bind b and x; r = b - A x, u = D r, w = A u, m = D w; the first iteration's scalars (one
  /// blocking MPI_Allreduce). Returns true when nothing is left to do. Collective.
  bool setup(const vector_type& b, const vector_type& x) {
    const spmd::impl::Region region("spmd::solvers::pipelined_cg::setup");
    request_.wait();
    this->bind(b, x, r_);
    spmd::copyto(this->exec_, p_, x);  // p has the halo A may need
    impl::apply_on(this->exec_, A_, p_, n_);
    const auto dinv = this->dinv_access(r_);
    const bool J = this->jacobi(), G = this->general();
    if (J)
      impl::for_points(this->exec_, "spmd::solvers::pipelined_cg::residual", r_,
                       impl::PcgResidual<Acc, value_type, true>{b.owned_access(), n_.owned_access(), r_.owned_access(),
                                                                u_.owned_access(), dinv});
    else
      impl::for_points(this->exec_, "spmd::solvers::pipelined_cg::residual", r_,
                       impl::PcgResidual<Acc, value_type, false>{b.owned_access(), n_.owned_access(), r_.owned_access(),
                                                                 u_.owned_access(), dinv});
    if (G) this->M_.apply(this->exec_, r_, u_);
    impl::apply_on(this->exec_, A_, u_, w_);
    if (G) this->M_.apply(this->exec_, w_, m_);
    value_type red[4];
    if (G)
      start<true, false>(red);
    else if (J)
      start<true>(red);
    else
      start<false>(red);
    for (int k = 0; k < 3; ++k) red_[k] = red[k];
    it_ = 0;
    gamma_prev_ = alpha_prev_ = value_type(0);
    progress_.start(std::sqrt(static_cast<double>(red[3])), 0);
    return check_start();
  }

  /// One iteration (Collective). Returns true when the solve has stopped; result() says why.
  bool step() {
    const spmd::impl::Region region("spmd::solvers::pipelined_cg::iteration");
    if (progress_.stopped()) return true;
    impl::apply_on(this->exec_, A_, m_, n_);  // overlaps the all-reduce of this iteration's scalars (started last step)
    request_.wait();
    double rn = std::sqrt(static_cast<double>(red_[2]));
    if (!tested_) {  // ||r_it|| is known only now (setup() and resume() test theirs at once)
      tested_ = true;
      progress_.record(it_, rn);
      const Reason why = progress_.test(rn, it_);
      if (why == Reason::converged_rtol || why == Reason::converged_atol) {
        // The recursive residual claims convergence: replace it by the true one. Converged if
        // that meets the tolerance; else continue from the replaced vectors while the true
        // residual keeps decreasing from one claim to the next (stop() reports the mismatch).
        replace();
        impl::apply_on(this->exec_, A_, m_, n_);
        const double tr = std::sqrt(static_cast<double>(red_[2]));
        if (progress_.verdict(tr) != Reason::none || !(tr < last_claim_)) return stop(why, rn);
        last_claim_ = tr;
        rn = tr;
      } else if (why != Reason::none) {
        return stop(why, rn);
      }
    }
    const value_type gamma = red_[0], delta = red_[1];
    if (!std::isfinite(static_cast<double>(gamma)) || !std::isfinite(static_cast<double>(delta)))
      return stop(Reason::nan_or_inf, rn,
                  spmd::impl::str("gamma = r.u = ", gamma, ", delta = w.u = ", delta, " in iteration ", it_ + 1));
    value_type beta = 0, denom = delta;
    if (it_ > 0) {
      beta = gamma / gamma_prev_;
      denom = delta - beta * gamma / alpha_prev_;
    }
    if (!(gamma > value_type(0)) || !(denom > value_type(0)) || !std::isfinite(static_cast<double>(denom)))
      return stop(
          std::isfinite(static_cast<double>(denom)) ? Reason::breakdown : Reason::nan_or_inf, rn,
          spmd::impl::str("in iteration ", it_ + 1, ": gamma = r.u = ", gamma,
                          ", the denominator delta - beta gamma / alpha_prev = ", denom, " (delta = w.u = ", delta,
                          ", beta = ", beta, ", alpha_prev = ", alpha_prev_, "); both must be positive"));
    const value_type alpha = gamma / denom;
    if (this->general())
      update<true, false>(alpha, beta);
    else if (this->jacobi())
      update<true>(alpha, beta);
    else
      update<false>(alpha, beta);
    gamma_prev_ = gamma;
    alpha_prev_ = alpha;
    ++it_;
    tested_ = false;
    if (it_ >= this->options().max_iters) {  // the last iteration: its residual decides
      tested_ = true;
      request_.wait();
      const double rlast = std::sqrt(static_cast<double>(red_[2]));
      progress_.record(it_, rlast);
      return stop(progress_.test(rlast, it_), rlast);
    }
    const int every = this->options().replace_every;
    if (every > 0 && it_ % every == 0) replace();  // periodic residual replacement (drops the sums in flight)
    return false;
  }

  /// ||b - A x|| of the current iterate, computed from x (one operator application; between two
  /// steps it changes nothing the iteration keeps). Collective.
  double true_residual() {
    request_.wait();
    return this->true_residual_norm(n_);
  }

  /// Residual replacement (Ghysels & Vanroose 2014, section 4; Cools et al. 2018): recompute
  /// r = b - A x, u = D r, w = A u, m = D w, s = A p, q = D s, z = A q from x and p, and the
  /// iteration's sums (r.u, w.u, r.r) from them (a blocking all-reduce; a nonblocking one in
  /// flight is completed and its sums dropped). The scalar recurrences go on unchanged. Costs 4
  /// operator applications. Collective.
  void replace() {
    request_.wait();
    const bool J = this->jacobi(), G = this->general();
    spmd::copyto(this->exec_, this->t_, this->x_);
    impl::apply_on(this->exec_, A_, this->t_, r_);  // r = A x, then r = b - r
    if (J)
      impl::for_points(
          this->exec_, "spmd::solvers::pipelined_cg::replace_residual", r_,
          impl::PcgResidual<Acc, value_type, true>{this->b_.owned_access(), r_.owned_access(), r_.owned_access(),
                                                   u_.owned_access(), this->dinv_access(r_)});
    else
      impl::for_points(
          this->exec_, "spmd::solvers::pipelined_cg::replace_residual", r_,
          impl::PcgResidual<Acc, value_type, false>{this->b_.owned_access(), r_.owned_access(), r_.owned_access(),
                                                    u_.owned_access(), this->dinv_access(r_)});
    if (G) this->M_.apply(this->exec_, r_, u_);
    impl::apply_on(this->exec_, A_, u_, w_);
    impl::apply_on(this->exec_, A_, p_, s_);
    // (q = D s is written by the sums' pass: z = A q after it; a preconditioner object makes
    // m = M w and q = M s first)
    if (G) {
      this->M_.apply(this->exec_, w_, m_);
      this->M_.apply(this->exec_, s_, q_);
    }
    value_type red[3];
    if (G)
      replace_sums<true, false>(red);
    else if (J)
      replace_sums<true>(red);
    else
      replace_sums<false>(red);
    impl::apply_on(this->exec_, A_, q_, z_);
    for (int k = 0; k < 3; ++k) red_[k] = red[k];
    progress_.replaced();
  }

  /// The state between two iterations: x, r, w, z, s, p (and u, m, q with Jacobi) and the
  /// reduced scalars (completes the iteration's all-reduce first). The vectors are the solver's
  /// own. Local (the all-reduce was started by every rank).
  SolverState<vector_type> state() {
    request_.wait();
    SolverState<vector_type> st{"pipelined_cg", this->precond(), it_, {}, {}};
    std::vector<std::pair<const char*, const vector_type*>> own = {{"x", &this->x_}, {"r", &r_}, {"w", &w_},
                                                                   {"z", &z_},       {"s", &s_}, {"p", &p_}};
    if (this->preconditioned()) own.insert(own.end(), {{"u", &u_}, {"m", &m_}, {"q", &q_}});
    for (const auto& v : own) st.vectors.emplace_back(v.first, spmd::impl::share(*v.second));
    st.scalars = {{"bnorm", progress_.bnorm()},
                  {"gamma", static_cast<double>(red_[0])},
                  {"delta", static_cast<double>(red_[1])},
                  {"rr", static_cast<double>(red_[2])},
                  {"gamma_prev", static_cast<double>(gamma_prev_)},
                  {"alpha_prev", static_cast<double>(alpha_prev_)},
                  {"last_claim", std::isinf(last_claim_) ? -1.0 : last_claim_}};
    return st;
  }

  /// Continue from a saved state (see CG::resume). Collective.
  bool resume(const vector_type& b, const vector_type& x, const SolverState<vector_type>& st) {
    const char* fn = "spmd::solvers::PipelinedCG::resume";
    request_.wait();
    this->bind(b, x, r_, this->state_problem(fn, st));
    std::vector<std::pair<const char*, const vector_type*>> own = {{"x", &x},  {"r", &r_}, {"w", &w_},
                                                                   {"z", &z_}, {"s", &s_}, {"p", &p_}};
    if (this->preconditioned()) own.insert(own.end(), {{"u", &u_}, {"m", &m_}, {"q", &q_}});
    for (const auto& v : own) this->restore_vector(*v.second, Base::find_vector(fn, st, v.first));
    it_ = static_cast<int>(st.iteration);
    progress_.start(Base::find_scalar(fn, st, "bnorm"), it_);
    red_[0] = static_cast<value_type>(Base::find_scalar(fn, st, "gamma"));
    red_[1] = static_cast<value_type>(Base::find_scalar(fn, st, "delta"));
    red_[2] = static_cast<value_type>(Base::find_scalar(fn, st, "rr"));
    gamma_prev_ = static_cast<value_type>(Base::find_scalar(fn, st, "gamma_prev"));
    alpha_prev_ = static_cast<value_type>(Base::find_scalar(fn, st, "alpha_prev"));
    // the true residual of the last claimed convergence it did not meet (-1: none yet; a state
    // saved before this was recorded has none either)
    const double claim = Base::find_scalar_or(st, "last_claim", -1.0);
    return check_start(claim >= 0 ? claim : std::numeric_limits<double>::infinity());
  }

 private:
  using Acc = impl::Acc<vector_type>;

  bool check_start(double last_claim = std::numeric_limits<double>::infinity()) {
    last_claim_ = last_claim;
    tested_ = true;
    if (this->stop_if_zero_rhs()) return true;
    const double rn = std::sqrt(static_cast<double>(red_[2]));
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    if (why != Reason::none) return stop(why, rn);
    return false;
  }
  template <bool J, bool D = J>
  void start(value_type (&red)[4]) {
    this->template reduce_sums<4>(
        "spmd::solvers::pipelined_cg::start", r_,
        impl::PcgStart<Acc, value_type, J, D>{
            this->b_.owned_access(), r_.owned_access(), u_.owned_access(), w_.owned_access(), m_.owned_access(),
            z_.owned_access(), q_.owned_access(), s_.owned_access(), p_.owned_access(), this->dinv_access(r_)},
        red);
  }
  template <bool J, bool D = J>
  void replace_sums(value_type (&red)[3]) {
    this->template reduce_sums<3>("spmd::solvers::pipelined_cg::replace", r_,
                                  impl::PcgReplace<Acc, value_type, J, D>{
                                      r_.owned_access(), u_.owned_access(), w_.owned_access(), m_.owned_access(),
                                      s_.owned_access(), q_.owned_access(), this->dinv_access(r_)},
                                  red);
  }
  /// The iteration's vector update and its sums into red_: started as an MPI_Iallreduce (in
  /// flight while the next operator application runs), or with SolverOptions::reproducible
  /// combined exactly at once (blocking). Collective.
  template <bool J, bool D = J>
  void update(value_type alpha, value_type beta) {
    const impl::PcgUpdate<Acc, value_type, J, D> body{n_.owned_access(),
                                                      z_.owned_access(),
                                                      m_.owned_access(),
                                                      q_.owned_access(),
                                                      w_.owned_access(),
                                                      s_.owned_access(),
                                                      u_.owned_access(),
                                                      p_.owned_access(),
                                                      this->x_.owned_access(),
                                                      r_.owned_access(),
                                                      this->dinv_access(r_),
                                                      alpha,
                                                      beta};
    const char* label = "spmd::solvers::pipelined_cg::update";
    if (this->options().reproducible) {
      this->template reduce_sums<3>(label, r_, body, red_);
    } else {
      const auto s = impl::sum_points<3>(this->exec_, label, r_, body);
      for (int k = 0; k < 3; ++k) red_[k] = s.v[k];
      request_ = r_.comm().iallreduce(red_, 3, spmd::Op::sum);
    }
    if constexpr (J && !D) this->M_.apply(this->exec_, w_, m_);  // m = M w, while the sums travel
  }

  vector_type r_, w_, n_, z_, s_, p_, u_, m_, q_;
  value_type red_[3] = {0, 0, 0};  // the iteration's (r.u, w.u, r.r): local sums, then reduced
  value_type gamma_prev_ = 0, alpha_prev_ = 0;
  bool tested_ = false;    // the stopping tests have seen ||r|| of iteration it_
  double last_claim_ = 0;  // the true residual at the last claimed convergence that it did not meet
};

}  // namespace spmd::solvers::impl
