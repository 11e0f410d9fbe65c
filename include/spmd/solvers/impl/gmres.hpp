#pragma once
// The work of GMRES(m) and FGMRES (solvers/gmres.hpp has the method and its stopping tests):
// impl::Gmres, the class behind KrylovSolver<Op, KrylovMethod::gmres> and <Op,
// KrylovMethod::fgmres> (solvers/krylov.hpp).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/solvers/impl/basis.hpp"
#include "spmd/solvers/impl/kernels.hpp"
#include "spmd/solvers/impl/krylov.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers::impl {

/// GMRES (Flexible false) and FGMRES (Flexible true): see the file comment.
template <class Operator, bool Flexible>
class Gmres : public KrylovBase<Gmres<Operator, Flexible>, Operator> {
  using Base = KrylovBase<Gmres<Operator, Flexible>, Operator>;
  using Base::A_;
  using Base::it_;
  using Base::progress_;

 public:
  /// The operator's vector type.
  using vector_type = typename Base::vector_type;
  /// The element type.
  using value_type = typename Base::value_type;
  /// The execution space of the solver's kernels.
  using execution_space = typename Base::execution_space;
  /// The solver's name: "gmres" or "fgmres".
  static constexpr const char* name = Flexible ? "fgmres" : "gmres";

  /// A solver whose kernels run on `exec`, preconditioned by `M` (or SolverOptions::precond).
  /// Local (allocates the restart + 1 basis vectors, and for FGMRES restart preconditioned
  /// ones); throws the same spmd::Error on every rank for bad options.
  Gmres(const execution_space& exec, const Operator& A, Preconditioner<vector_type> M, const SolverOptions& opts = {})
      : Base(name, exec, A, opts, std::move(M)), m_(opts.restart) {
    check_options(name, opts);
    for (int k = 0; k <= m_; ++k) V_.push_back(A.make_vector(this->label(("v" + std::to_string(k)).c_str())));
    w_ = A.make_vector(this->label("w"));
    if (this->preconditioned()) {
      if constexpr (Flexible) {
        for (int k = 0; k < m_; ++k) Z_.push_back(A.make_vector(this->label(("z" + std::to_string(k)).c_str())));
      } else {
        Z_.push_back(A.make_vector(this->label("z")));
      }
    }
    kern_ = BasisKernels<vector_type>(V_[0]);
    spmd::impl::agree(V_[0].comm(), [&] {  // the layouts are this rank's: agreed
      for (const auto& v : V_) kern_.check(name, v);
      for (const auto& z : Z_) kern_.check(name, z);
      kern_.check(name, w_);
    });
    const auto mm = static_cast<std::size_t>(m_);
    r_.assign(mm * mm, value_type(0));
    cs_.assign(mm, value_type(0));
    sn_.assign(mm, value_type(0));
    g_.assign(mm + 1, value_type(0));
    y_.assign(mm, value_type(0));
    s1_.assign(mm + 2, value_type(0));
    s2_.assign(mm + 2, value_type(0));
    for (const auto& v : V_) pv_.push_back(v.local_with_halo().data());
    for (const auto& z : Z_) pz_.push_back(z.local_with_halo().data());
  }
  Gmres(const Gmres&) = delete;
  Gmres& operator=(const Gmres&) = delete;

  /// The options' checks (a collective spmd::Error): those of every solver, and no
  /// SolverOptions::reproducible. Local.
  static void check_options(const char* fn, const SolverOptions& opts) {
    Base::check_options(fn, opts);
    if (opts.reproducible)
      throw Error::replicated(spmd::impl::str(
          "spmd::solvers::", fn, ": SolverOptions::reproducible is not supported (use cg, pipelined_cg or bicgstab)"));
  }

  /// Bind b and x; r = b - A x starts the first cycle. Returns true when nothing is left to do.
  /// Collective.
  bool setup(const vector_type& b, const vector_type& x) {
    const spmd::impl::Region region(Flexible ? "spmd::solvers::fgmres::setup" : "spmd::solvers::gmres::setup");
    this->bind(b, x, V_[0]);
    it_ = 0;
    j_ = 0;
    last_claim_ = std::numeric_limits<double>::infinity();
    double bb = 0;
    const double beta = residual(&bb);
    progress_.start(std::sqrt(bb), 0);
    if (this->stop_if_zero_rhs()) return true;
    progress_.record(0, beta);
    const Reason why = progress_.test(beta, 0);
    if (why != Reason::none) return this->stop_at(why, beta, beta);
    start_cycle(beta);
    return false;
  }

  /// One iteration (an Arnoldi step; Collective). Returns true when the solve has stopped.
  bool step() {
    const spmd::impl::Region region(Flexible ? "spmd::solvers::fgmres::iteration" : "spmd::solvers::gmres::iteration");
    if (progress_.stopped()) return true;
    const int j = j_;
    const vector_type& z = this->precondition(V_[j], zvec(j));
    impl::apply_on(this->exec_, A_, z, w_);
    const Comm& comm = V_[0].comm();
    value_type* w = w_.local_with_halo().data();
    // CGS2: h = V^T w; w -= V h; g = V^T w; v_{j+1} = (w - V g) / eta.
    kern_.dots(this->exec_, pv_.data(), j + 1, w, true, s1_.data());
    comm.allreduce(s1_.data(), j + 2, spmd::Op::sum);
    kern_.update_dots(this->exec_, pv_.data(), j + 1, s1_.data(), w, s2_.data());
    comm.allreduce(s2_.data(), j + 2, spmd::Op::sum);
    const double w0 = std::sqrt(static_cast<double>(s1_[j + 1]));  // ||A z|| before orthogonalisation
    const double w1 = static_cast<double>(s2_[j + 1]);             // ||w||^2 after the first pass
    double eta2 = w1;
    for (int i = 0; i <= j; ++i) eta2 -= static_cast<double>(s2_[i]) * static_cast<double>(s2_[i]);
    std::vector<value_type>& col = s1_;  // column j of the Hessenberg matrix: h + g, eta
    for (int i = 0; i <= j; ++i) col[i] += s2_[i];
    double eta = 0;
    bool finite = std::isfinite(w0) && std::isfinite(w1);
    for (int i = 0; i <= j && finite; ++i) finite = std::isfinite(static_cast<double>(col[i]));
    if (!finite)
      return stop_now(Reason::nan_or_inf, spmd::impl::str("a Hessenberg entry of iteration ", it_ + 1,
                                                          " is not finite (||A z|| = ", w0, ")"));
    value_type* next = V_[j + 1].local_with_halo().data();
    if (eta2 >= 0.25 * w1) {  // the Pythagorean norm is accurate: one kernel writes v_{j+1}
      eta = std::sqrt(eta2);
      kern_.combine(this->exec_, pv_.data(), j + 1, s2_.data(), w,
                    eta > 0 ? static_cast<value_type>(1.0 / eta) : value_type(1), next);
    } else {  // cancellation: form w - V g, then its norm
      kern_.combine(this->exec_, pv_.data(), j + 1, s2_.data(), w, value_type(1), next);
      value_type nn[1];
      kern_.dots(this->exec_, pv_.data(), 0, next, true, nn);
      comm.allreduce(nn, 1, spmd::Op::sum);
      eta = std::sqrt(static_cast<double>(nn[0]));
      if (eta > 0) kern_.combine(this->exec_, pv_.data(), 0, nullptr, next, static_cast<value_type>(1.0 / eta), next);
    }
    col[j + 1] = static_cast<value_type>(eta);
    // Givens rotations: the earlier ones on the new column, then one that zeroes eta.
    for (int k = 0; k < j; ++k) {
      const value_type t = cs_[k] * col[k] + sn_[k] * col[k + 1];
      col[k + 1] = -sn_[k] * col[k] + cs_[k] * col[k + 1];
      col[k] = t;
    }
    const double a = static_cast<double>(col[j]);
    const double rjj = std::hypot(a, eta);
    if (!(rjj > std::numeric_limits<double>::epsilon() * w0) || !std::isfinite(rjj))
      return stop_now(std::isfinite(rjj) ? Reason::breakdown : Reason::nan_or_inf,
                      spmd::impl::str("the Hessenberg matrix is singular in iteration ", it_ + 1,
                                      " (its rotated diagonal entry is ", rjj, " for ||A z|| = ", w0,
                                      "): A M^-1 is singular on the Krylov space (is b in the range of A?)"));
    cs_[j] = static_cast<value_type>(a / rjj);
    sn_[j] = static_cast<value_type>(eta / rjj);
    for (int i = 0; i < j; ++i) R(i, j) = col[i];
    R(j, j) = static_cast<value_type>(rjj);
    g_[j + 1] = -sn_[j] * g_[j];
    g_[j] = cs_[j] * g_[j];
    ++it_;
    j_ = j + 1;
    const double rn = std::abs(static_cast<double>(g_[j + 1]));
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    if (why == Reason::converged_rtol || why == Reason::converged_atol) {
      // The minimiser claims convergence: the true residual decides (see the file comment).
      const double tr = finish_cycle();
      if (progress_.verdict(tr) != Reason::none || !(tr < last_claim_)) return this->stop_at(why, rn, tr);
      last_claim_ = tr;
      return restart_or_stop(tr);
    }
    if (why != Reason::none) return stop_now(why);
    const bool invariant = !(eta > std::numeric_limits<double>::epsilon() * w0);
    if (j_ == m_ || invariant) {  // end of the cycle (an invariant Krylov space ends it early)
      const double tr = finish_cycle();
      const Reason v = progress_.verdict(tr);
      if (v != Reason::none) return this->stop_at(v, tr, tr);
      return restart_or_stop(tr);
    }
    return false;
  }

  /// ||b - A x|| of the current iterate (x and the current cycle's correction, which is formed
  /// in a work vector: x is not changed). Collective (one operator application, and one
  /// preconditioner application for GMRES inside a cycle).
  double true_residual() {
    const vector_type& xt = iterate();
    if (&xt != &this->t_) spmd::copyto(this->exec_, this->t_, xt);
    impl::apply_on(this->exec_, A_, this->t_, w_);
    value_type rr[1];
    this->template reduce_sums<1>(
        "spmd::solvers::true_residual", w_,
        ResidualNorm<Acc<vector_type>, value_type>{this->b_.owned_access(), w_.owned_access()}, rr);
    return std::sqrt(static_cast<double>(rr[0]));
  }

  /// The state between two iterations: x (the cycle's start), the basis v0 .. v_j (FGMRES also
  /// z0 .. z_{j-1}), the rotated Hessenberg columns, the rotations and the residual vector.
  /// The vectors are the solver's own. Local.
  SolverState<vector_type> state() const {
    SolverState<vector_type> s{name, this->precond(), it_, {}, {}};
    s.vectors.emplace_back("x", spmd::impl::share(this->x_));
    for (int k = 0; k <= j_; ++k) s.vectors.emplace_back("v" + std::to_string(k), spmd::impl::share(V_[k]));
    if (Flexible && this->preconditioned())
      for (int k = 0; k < j_; ++k) s.vectors.emplace_back("z" + std::to_string(k), spmd::impl::share(Z_[k]));
    s.scalars = {{"bnorm", progress_.bnorm()},
                 {"position", static_cast<double>(j_)},
                 {"last_claim", std::isinf(last_claim_) ? -1.0 : last_claim_}};
    for (int i = 0; i <= j_; ++i) s.scalars.emplace_back("g" + std::to_string(i), static_cast<double>(g_[i]));
    for (int k = 0; k < j_; ++k) {
      s.scalars.emplace_back("cs" + std::to_string(k), static_cast<double>(cs_[k]));
      s.scalars.emplace_back("sn" + std::to_string(k), static_cast<double>(sn_[k]));
      for (int i = 0; i <= k; ++i)
        s.scalars.emplace_back("r" + std::to_string(i) + "_" + std::to_string(k), static_cast<double>(R(i, k)));
    }
    return s;
  }

  /// Continue from a saved state (see CG::resume): bitwise as if never interrupted at the same
  /// rank count. Collective.
  bool resume(const vector_type& b, const vector_type& x, const SolverState<vector_type>& st) {
    const std::string fn = spmd::impl::str("spmd::solvers::", name, "::resume");
    std::string problem = this->state_problem(fn.c_str(), st);
    const double pos = Base::find_scalar_or(st, "position", -1.0);
    if (problem.empty() && !(pos >= 0 && pos < m_ && pos == std::floor(pos)))
      problem = spmd::impl::str(fn, ": the saved state's position in the cycle (", pos, ") is not in 0..restart - 1 (",
                                m_ - 1, ")");
    this->bind(b, x, V_[0], problem);
    j_ = static_cast<int>(pos);
    this->restore_vector(x, Base::find_vector(fn.c_str(), st, "x"));
    for (int k = 0; k <= j_; ++k)
      this->restore_vector(V_[k], Base::find_vector(fn.c_str(), st, "v" + std::to_string(k)));
    if (Flexible && this->preconditioned())
      for (int k = 0; k < j_; ++k)
        this->restore_vector(Z_[k], Base::find_vector(fn.c_str(), st, "z" + std::to_string(k)));
    const auto scalar = [&](const std::string& n) {
      return static_cast<value_type>(Base::find_scalar(fn.c_str(), st, n));
    };
    for (int i = 0; i <= j_; ++i) g_[i] = scalar("g" + std::to_string(i));
    for (int k = 0; k < j_; ++k) {
      cs_[k] = scalar("cs" + std::to_string(k));
      sn_[k] = scalar("sn" + std::to_string(k));
      for (int i = 0; i <= k; ++i) R(i, k) = scalar("r" + std::to_string(i) + "_" + std::to_string(k));
    }
    it_ = static_cast<int>(st.iteration);
    const double claim = Base::find_scalar_or(st, "last_claim", -1.0);
    last_claim_ = claim >= 0 ? claim : std::numeric_limits<double>::infinity();
    progress_.start(Base::find_scalar(fn.c_str(), st, "bnorm"), it_);
    if (this->stop_if_zero_rhs()) return true;
    const double rn = std::abs(static_cast<double>(g_[j_]));
    progress_.record(it_, rn);
    const Reason why = progress_.test(rn, it_);
    if (why != Reason::none) return stop_now(why);
    return false;
  }

 private:
  value_type& R(int i, int k) { return r_[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_) + i]; }
  value_type R(int i, int k) const { return r_[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_) + i]; }
  /// Where M^-1 v_j goes: z_j (FGMRES), the one z (GMRES), or v_j itself (no preconditioner).
  const vector_type& zvec(int j) const {
    if (Z_.empty()) return V_[j];
    return Flexible ? Z_[j] : Z_[0];
  }

  /// v0 = b - A x (unnormalised) and its norm; *bb = ||b||^2 when asked. Collective.
  double residual(double* bb = nullptr) {
    spmd::copyto(this->exec_, this->t_, this->x_);
    impl::apply_on(this->exec_, A_, this->t_, w_);
    value_type red[2];
    this->template reduce_sums<2>(
        "spmd::solvers::gmres::residual", V_[0],
        CgStartResidual<Acc<vector_type>, value_type>{this->b_.owned_access(), w_.owned_access(), V_[0].owned_access()},
        red);
    if (bb) *bb = static_cast<double>(red[0]);
    return std::sqrt(static_cast<double>(red[1]));
  }
  /// Start a cycle from v0 = r (norm beta): v0 /= beta, g = beta e_1. Local.
  void start_cycle(double beta) {
    value_type* v0 = V_[0].local_with_halo().data();
    kern_.combine(this->exec_, pv_.data(), 0, nullptr, v0, static_cast<value_type>(1.0 / beta), v0);
    j_ = 0;
    g_[0] = static_cast<value_type>(beta);
  }
  /// After a cycle that ended at residual ||b - A x|| = tr (in v0, unnormalised): go on with a
  /// new cycle, or stop at max_iters or on a non-finite residual. Collective.
  bool restart_or_stop(double tr) {
    if (!std::isfinite(tr)) return this->stop_at(Reason::nan_or_inf, tr, tr, "the true residual is not finite");
    if (it_ >= this->options().max_iters) return this->stop_at(Reason::diverged_max_iters, tr, tr);
    start_cycle(tr);
    return false;
  }
  /// The current iterate: x when no cycle is under way, else x + correction formed in t (not
  /// changing x). Collective (a preconditioner application for GMRES).
  const vector_type& iterate() {
    if (j_ == 0) return this->x_;
    const vector_type& c = correction();
    impl::for_points(this->exec_, "spmd::solvers::gmres::iterate", this->t_,
                     AddScaled<Acc<vector_type>, value_type>{this->t_.owned_access(), this->x_.owned_access(),
                                                             c.owned_access(), value_type(1)});
    return this->t_;
  }
  /// The cycle's correction M^-1 V y (GMRES) or Z y (FGMRES), y = R^-1 g, in a work vector.
  /// Collective (a preconditioner application for GMRES).
  const vector_type& correction() {
    const int j = j_;
    for (int i = j - 1; i >= 0; --i) {  // back substitution R y = g
      value_type s = g_[i];
      for (int k = i + 1; k < j; ++k) s -= R(i, k) * y_[k];
      y_[i] = s / R(i, i);
    }
    for (int i = 0; i < j; ++i) y_[i] = -y_[i];  // combine() subtracts
    value_type* w = w_.local_with_halo().data();
    if (Flexible && this->preconditioned()) {
      kern_.combine(this->exec_, pz_.data(), j, y_.data(), nullptr, value_type(1), w);
      return w_;
    }
    kern_.combine(this->exec_, pv_.data(), j, y_.data(), nullptr, value_type(1), w);
    if (Flexible) return w_;
    return this->precondition(w_, zvec(0));
  }
  /// End the cycle: x += its correction; v0 = b - A x. Returns ||b - A x||. Collective.
  double finish_cycle() {
    if (j_ > 0) {
      const vector_type& c = correction();
      impl::for_points(this->exec_, "spmd::solvers::gmres::update_x", this->x_,
                       Axpy<Acc<vector_type>, value_type>{this->x_.owned_access(), c.owned_access(), value_type(1)});
    }
    j_ = 0;
    return residual();
  }
  /// Stop with `why` now: the cycle so far is added to x first. Collective.
  bool stop_now(Reason why, std::string detail = {}) {
    const double tr = finish_cycle();
    return this->stop_at(why, progress_.result().residual, tr, std::move(detail));
  }

  int m_;
  std::vector<vector_type> V_, Z_;
  vector_type w_;
  BasisKernels<vector_type> kern_;
  std::vector<const value_type*> pv_, pz_;       // the basis vectors' storage
  std::vector<value_type> r_, cs_, sn_, g_, y_;  // rotated Hessenberg (column-major), rotations, residual
  std::vector<value_type> s1_, s2_;              // the Gram-Schmidt passes' sums
  int j_ = 0;                                    // position in the cycle: v0 .. v_j exist
  double last_claim_ = std::numeric_limits<double>::infinity();
};

}  // namespace spmd::solvers::impl
