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
    h_.assign((mm + 1) * mm, value_type(0));
    if (Flexible) tz_.assign(mm * mm, value_type(0));
    cs_.assign(mm, value_type(0));
    sn_.assign(mm, value_type(0));
    g_.assign(mm + 1, value_type(0));
    y_.assign(mm, value_type(0));
    for (auto* v : {&hp_, &a_, &c_, &e_}) v->assign(mm + 1, value_type(0));
    sd_.assign(2 * mm + 4, value_type(0));
    sf_.assign(mm + 2, value_type(0));
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

  /// One iteration (an Arnoldi step with delayed CGS2, see solvers/gmres.hpp; Collective).
  /// Returns true when the solve has stopped.
  bool step() {
    const spmd::impl::Region region(Flexible ? "spmd::solvers::fgmres::iteration" : "spmd::solvers::gmres::iteration");
    if (progress_.stopped()) return true;
    const int j = j_;
    // V[j] holds u_j, the candidate for v_j (once orthogonalised: not yet again, nor normalised).
    const vector_type& z = this->precondition(V_[j], zvec(j));
    impl::apply_on(this->exec_, A_, z, V_[j + 1]);  // w = A M^-1 u_j, in V[j+1]'s storage
    const Comm& comm = V_[0].comm();
    value_type* u = V_[j].local_with_halo().data();
    value_type* w = V_[j + 1].local_with_halo().data();
    // One sweep, one all-reduce: a = V^T u, b = V^T w (V = v_0 .. v_{j-1}), u.u, u.w, w.w.
    kern_.dots2(this->exec_, pv_.data(), j, u, w, sd_.data());
    comm.allreduce(sd_.data(), 2 * j + 4, spmd::Op::sum);
    const double alpha = static_cast<double>(sd_[2 * j]), beta = static_cast<double>(sd_[2 * j + 1]);
    const double omega = static_cast<double>(sd_[2 * j + 3]);
    double aa = 0, ab = 0;
    bool finite = std::isfinite(alpha) && std::isfinite(beta) && std::isfinite(omega);
    for (int i = 0; i < j; ++i) {
      a_[i] = sd_[2 * i];
      c_[i] = sd_[2 * i + 1];
      aa += static_cast<double>(a_[i]) * static_cast<double>(a_[i]);
      ab += static_cast<double>(a_[i]) * static_cast<double>(c_[i]);
      finite = finite && std::isfinite(static_cast<double>(a_[i])) && std::isfinite(static_cast<double>(c_[i]));
    }
    if (!finite)
      return stop_now(Reason::nan_or_inf,
                      spmd::impl::str("a Gram-Schmidt coefficient of iteration ", it_ + 1,
                                      " is not finite (||A z||^2 = ", omega, ", ||u||^2 = ", alpha, ")"));
    // v_j = (u_j - V a) / rho, the lagged second pass; rho^2 = ||u||^2 - ||a||^2 (Pythagoras).
    std::vector<value_type>& ause = e_;  // what the update subtracts from u (a, or 0 if done here)
    for (int i = 0; i < j; ++i) ause[i] = a_[i];
    double rho2 = alpha - aa;
    if (!(rho2 >= 0.25 * alpha)) {  // cancellation: form u - V a, then its norm
      rho2 = form_second_pass(j, a_.data());
      for (int i = 0; i < j; ++i) ause[i] = value_type(0);
    }
    const double rho = std::sqrt(rho2);
    if (!(rho > 0) || !std::isfinite(rho)) {
      if (j == 0 || !std::isfinite(rho))  // r's norm vanished or is not finite here alone
        return stop_now(std::isfinite(rho) ? Reason::breakdown : Reason::nan_or_inf,
                        spmd::impl::str("the norm of the basis vector of iteration ", it_ + 1, " is ", rho));
      // u_j is in span V: column j - 1 ends an invariant Krylov space
      fix_column(j - 1, ause.data(), 0.0);
      const double tr = finish_cycle();
      const Reason v = progress_.verdict(tr);
      if (v != Reason::none) return this->stop_at(v, tr, tr);
      return restart_or_stop(tr);
    }
    if (j > 0)
      fix_column(j - 1, ause.data(), rho);  // column j - 1 final: h + a and rho
    else
      g_[0] = static_cast<value_type>(rho);  // v_0 = r / ||r||
    if constexpr (Flexible) {                // z_j = M^-1 v_j = (z~_j - Z a) / rho: column j of T (Z = Z~ T)
      for (int i = 0; i <= j; ++i) {
        double t = i == j ? 1.0 : 0.0;
        for (int k = i; k < j; ++k) t -= static_cast<double>(T(i, k)) * static_cast<double>(a_[k]);
        T(i, j) = static_cast<value_type>(t / rho);
      }
    }
    // A M^-1 v_j = (w - V H a) / rho (the Arnoldi relation of the columns before): its
    // coefficients c = [V, v_j]^T w / rho - H a / rho, and u_{j+1} = (w - [V, v_j] c') / rho with
    // c' = [b, (u.w - a.b) / rho]. u_{j+1}'s norm^2 is (w.w - c'.c') / rho^2 until the next step.
    c_[j] = static_cast<value_type>((beta - ab) / rho);
    double cc = 0;
    for (int i = 0; i <= j; ++i) {
      double ha = 0;
      for (int k = std::max(0, i - 1); k < j; ++k) ha += static_cast<double>(H(i, k)) * static_cast<double>(a_[k]);
      hp_[i] = static_cast<value_type>((static_cast<double>(c_[i]) - ha) / rho);
      cc += static_cast<double>(c_[i]) * static_cast<double>(c_[i]);
    }
    kern_.update2(this->exec_, pv_.data(), j, ause.data(), c_.data(), static_cast<value_type>(1.0 / rho), c_[j], u, w);
    const double w0 = std::sqrt(omega) / rho;  // ||A M^-1 v_j||
    const double eta2 = (omega - cc) / rho2;
    const double eps = std::numeric_limits<value_type>::epsilon();
    const double tau = std::min(0.25, 1e6 * (j + 2) * eps);
    // Column j, provisional until the next step's sweep: h and the first-pass norm.
    gpre_ = g_[j];
    pending_ = true;
    for (int i = 0; i <= j; ++i) H(i, j) = hp_[i];
    H(j + 1, j) = static_cast<value_type>(std::sqrt(std::max(eta2, 0.0)));
    rotate(j);
    if (!(eta2 >= tau * w0 * w0)) finalize(j);  // the Pythagorean norm cancels: the second pass now
    const double eta = static_cast<double>(H(j + 1, j));
    for (int i = 0; i <= j && finite; ++i) finite = std::isfinite(static_cast<double>(hp_[i]));
    if (!finite || !std::isfinite(eta))
      return stop_now(Reason::nan_or_inf, spmd::impl::str("a Hessenberg entry of iteration ", it_ + 1,
                                                          " is not finite (||A z|| = ", w0, ")"));
    const double rjj = static_cast<double>(R(j, j));
    if (!(rjj > std::numeric_limits<double>::epsilon() * w0) || !std::isfinite(rjj))
      return stop_now(std::isfinite(rjj) ? Reason::breakdown : Reason::nan_or_inf,
                      spmd::impl::str("the Hessenberg matrix is singular in iteration ", it_ + 1,
                                      " (its rotated diagonal entry is ", rjj, " for ||A z|| = ", w0,
                                      "): A M^-1 is singular on the Krylov space (is b in the range of A?)"));
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

  /// The state between two iterations: x (the cycle's start), the basis v0 .. v_{j-1} and the
  /// next candidate u (FGMRES also z~0 .. z~_{j-1}), the Hessenberg matrix before and after the
  /// rotations, the rotations, the residual vector and the last column's first pass (its second
  /// is the next step's). The vectors are the solver's own. Local.
  SolverState<vector_type> state() const {
    SolverState<vector_type> s{name, this->precond(), it_, {}, {}};
    s.vectors.emplace_back("x", spmd::impl::share(this->x_));
    for (int k = 0; k < j_; ++k) s.vectors.emplace_back("v" + std::to_string(k), spmd::impl::share(V_[k]));
    s.vectors.emplace_back("u", spmd::impl::share(V_[j_]));
    if (Flexible && this->preconditioned())
      for (int k = 0; k < j_; ++k) s.vectors.emplace_back("z" + std::to_string(k), spmd::impl::share(Z_[k]));
    s.scalars = {{"bnorm", progress_.bnorm()},
                 {"position", static_cast<double>(j_)},
                 {"last_claim", std::isinf(last_claim_) ? -1.0 : last_claim_},
                 {"pending", pending_ ? 1.0 : 0.0},
                 {"gpre", static_cast<double>(gpre_)}};
    for (int i = 0; i <= j_; ++i) s.scalars.emplace_back("g" + std::to_string(i), static_cast<double>(g_[i]));
    for (int i = 0; i < j_; ++i) s.scalars.emplace_back("hp" + std::to_string(i), static_cast<double>(hp_[i]));
    for (int k = 0; k < j_; ++k) {
      const std::string col = "_" + std::to_string(k);
      s.scalars.emplace_back("cs" + std::to_string(k), static_cast<double>(cs_[k]));
      s.scalars.emplace_back("sn" + std::to_string(k), static_cast<double>(sn_[k]));
      for (int i = 0; i <= k; ++i) s.scalars.emplace_back("r" + std::to_string(i) + col, static_cast<double>(R(i, k)));
      for (int i = 0; i <= k + 1; ++i)
        s.scalars.emplace_back("h" + std::to_string(i) + col, static_cast<double>(H(i, k)));
      if (Flexible)
        for (int i = 0; i <= k; ++i)
          s.scalars.emplace_back("t" + std::to_string(i) + col, static_cast<double>(T(i, k)));
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
    for (int k = 0; k < j_; ++k)
      this->restore_vector(V_[k], Base::find_vector(fn.c_str(), st, "v" + std::to_string(k)));
    this->restore_vector(V_[j_], Base::find_vector(fn.c_str(), st, "u"));
    if (Flexible && this->preconditioned())
      for (int k = 0; k < j_; ++k)
        this->restore_vector(Z_[k], Base::find_vector(fn.c_str(), st, "z" + std::to_string(k)));
    const auto scalar = [&](const std::string& n) {
      return static_cast<value_type>(Base::find_scalar(fn.c_str(), st, n));
    };
    pending_ = scalar("pending") != value_type(0);
    gpre_ = scalar("gpre");
    for (int i = 0; i <= j_; ++i) g_[i] = scalar("g" + std::to_string(i));
    for (int i = 0; i < j_; ++i) hp_[i] = scalar("hp" + std::to_string(i));
    for (int k = 0; k < j_; ++k) {
      const std::string col = "_" + std::to_string(k);
      cs_[k] = scalar("cs" + std::to_string(k));
      sn_[k] = scalar("sn" + std::to_string(k));
      for (int i = 0; i <= k; ++i) R(i, k) = scalar("r" + std::to_string(i) + col);
      for (int i = 0; i <= k + 1; ++i) H(i, k) = scalar("h" + std::to_string(i) + col);
      if (Flexible)
        for (int i = 0; i <= k; ++i) T(i, k) = scalar("t" + std::to_string(i) + col);
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
  /// The Hessenberg matrix before the rotations ((m + 1) x m, column-major).
  value_type& H(int i, int k) { return h_[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_ + 1) + i]; }
  value_type H(int i, int k) const { return h_[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_ + 1) + i]; }
  /// FGMRES: z_k = sum_i T(i, k) z~_i (upper triangular), z~_i = M^-1 u_i as applied.
  value_type& T(int i, int k) { return tz_[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_) + i]; }
  value_type T(int i, int k) const { return tz_[static_cast<std::size_t>(k) * static_cast<std::size_t>(m_) + i]; }

  /// Rotate column k of H into R: the rotations of the columns before, then the one that zeroes
  /// H(k + 1, k); g_k, g_{k+1} from g_k before it (gpre_). Local.
  void rotate(int k) {
    double col[2] = {0, 0};  // entries k and k + 1 after the earlier rotations
    double prev = static_cast<double>(H(0, k));
    for (int i = 0; i < k; ++i) {
      const double next = static_cast<double>(H(i + 1, k));
      const double c = static_cast<double>(cs_[i]), s = static_cast<double>(sn_[i]);
      R(i, k) = static_cast<value_type>(c * prev + s * next);
      prev = -s * prev + c * next;
    }
    col[0] = prev;
    col[1] = static_cast<double>(H(k + 1, k));
    const double rjj = std::hypot(col[0], col[1]);
    cs_[k] = static_cast<value_type>(rjj > 0 ? col[0] / rjj : 1.0);
    sn_[k] = static_cast<value_type>(rjj > 0 ? col[1] / rjj : 0.0);
    R(k, k) = static_cast<value_type>(rjj);
    g_[k + 1] = -sn_[k] * gpre_;
    g_[k] = cs_[k] * gpre_;
  }
  /// Column k final: its first-pass coefficients (hp_) plus the second pass's `add`, and
  /// H(k + 1, k) = eta; rotated again. Local.
  void fix_column(int k, const value_type* add, double eta) {
    for (int i = 0; i <= k; ++i) H(i, k) = hp_[i] + add[i];
    H(k + 1, k) = static_cast<value_type>(eta);
    rotate(k);
    pending_ = false;
  }
  /// u = V[j] -= V_{<j} a in place (the second pass formed), its norm^2 returned; column j - 1's
  /// first-pass part takes a. Collective (one all-reduce).
  double form_second_pass(int j, const value_type* a) {
    value_type* u = V_[j].local_with_halo().data();
    kern_.combine(this->exec_, pv_.data(), j, a, u, value_type(1), u);
    for (int i = 0; i < j; ++i) hp_[i] += a[i];
    value_type nn[1];
    kern_.dots(this->exec_, pv_.data(), 0, u, true, nn);
    V_[0].comm().allreduce(nn, 1, spmd::Op::sum);
    return static_cast<double>(nn[0]);
  }
  /// The second pass of column k now, not lagged into the next step: a = V^T u_{k+1} and
  /// ||u_{k+1}||^2 (one sweep, one all-reduce), column k final. u_{k+1} stays the next step's
  /// candidate (formed here only when its norm cancels). Collective.
  void finalize(int k) {
    const int j = k + 1;
    kern_.dots(this->exec_, pv_.data(), j, V_[j].local_with_halo().data(), true, sf_.data());
    V_[0].comm().allreduce(sf_.data(), j + 1, spmd::Op::sum);
    double aa = 0;
    for (int i = 0; i < j; ++i) {
      e_[i] = sf_[i];
      aa += static_cast<double>(sf_[i]) * static_cast<double>(sf_[i]);
    }
    const double alpha = static_cast<double>(sf_[j]);
    double rho2 = alpha - aa;
    if (!(rho2 >= 0.25 * alpha)) {
      rho2 = form_second_pass(j, e_.data());
      for (int i = 0; i < j; ++i) e_[i] = value_type(0);
    }
    fix_column(k, e_.data(), std::sqrt(std::max(rho2, 0.0)));
  }
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
  /// Start a cycle from r (in V[0], norm beta): g = beta e_1. Local.
  void start_cycle(double beta) {
    j_ = 0;  // v0 = r / ||r|| in the first step (r is its candidate u_0)
    pending_ = false;
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
    if (Flexible && this->preconditioned()) {  // Z y = Z~ (T y)
      for (int i = 0; i < j; ++i) {
        value_type t = 0;
        for (int k = i; k < j; ++k) t += T(i, k) * y_[k];
        e_[i] = t;
      }
      kern_.combine(this->exec_, pz_.data(), j, e_.data(), nullptr, value_type(1), w);
      return w_;
    }
    kern_.combine(this->exec_, pv_.data(), j, y_.data(), nullptr, value_type(1), w);
    if (Flexible) return w_;
    return this->precondition(w_, zvec(0));
  }
  /// End the cycle: x += its correction; v0 = b - A x. Returns ||b - A x||. Collective.
  double finish_cycle() {
    if (j_ > 0) {
      if (pending_) finalize(j_ - 1);  // the last column's lagged second pass
      const vector_type& c = correction();
      impl::for_points(this->exec_, "spmd::solvers::gmres::update_x", this->x_,
                       Axpy<Acc<vector_type>, value_type>{this->x_.owned_access(), c.owned_access(), value_type(1)});
    }
    j_ = 0;
    pending_ = false;
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
  std::vector<value_type> h_, tz_;               // Hessenberg before the rotations; FGMRES's T
  std::vector<value_type> hp_;                   // column j-1's first-pass coefficients
  std::vector<value_type> a_, c_, e_;            // a step's second-pass and first-pass coefficients
  std::vector<value_type> sd_, sf_;              // the sweeps' sums
  value_type gpre_ = 0;                          // g_{j-1} before column j-1's rotation
  bool pending_ = false;                         // column j-1 waits for its second pass
  int j_ = 0;                                    // position in the cycle: v0 .. v_{j-1} and u_j exist
  double last_claim_ = std::numeric_limits<double>::infinity();
};

}  // namespace spmd::solvers::impl
