#pragma once
/// \file solvers/chebyshev.hpp
/// The Chebyshev polynomial preconditioner: z = p(D A) D r, the fixed polynomial of `degree`
/// Chebyshev iteration steps for A z = r from z = 0 (D = diag(A)^-1, or I), which damps the
/// error on an interval [lambda_min, lambda_max] of D A's spectrum. It needs only operator
/// applications and pointwise vector updates: no inner products, so no all-reduce, and every
/// kernel is data-parallel (a GPU's preconditioner).
///
///   auto M = spmd::solvers::chebyshev(A);                 // degree 4, interval estimated
///   spmd::solvers::cg(A, b, x, M, opts);                  // or gmres, bicgstab, ...
///
/// The interval comes from a few steps of an eigenvalue estimate made once, at construction:
/// Lanczos (symmetric operators; ChebyshevOptions::symmetric, the default) in the D^-1 inner
/// product, whose extreme Ritz values bound the spectrum from inside: the top is the largest Ritz
/// value times `safety` (1.1), the bottom the smallest Ritz value (or top x `lower_ratio`); or
/// the power method (any operator), whose estimate of the spectral radius is the top and
/// top / 10 the bottom. Or give the interval (`lambda_min`, `lambda_max`).
///
/// Symmetric positive definite, so fit for CG, when A and D are (D > 0) and the interval's top
/// is at least D A's largest eigenvalue: then the polynomial's residual |1 - lambda q(lambda)| < 1
/// on (0, top] and q > 0 there. An underestimated top with an even degree would make M
/// indefinite; the safety factor guards against that.
///
/// Cost per application (n points per rank): degree - 1 operator applications and degree
/// passes over 4-6 vectors (no reductions). Setup: eig_steps operator applications and 2 x
/// eig_steps all-reduces.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/error.hpp"
#include "spmd/random.hpp"
#include "spmd/solvers/impl/kernels.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// How a Chebyshev preconditioner is built (see the file comment).
struct ChebyshevOptions {
  int degree = 4;                 //!< Chebyshev steps per application (degree - 1 operator applications), >= 1
  int eig_steps = 10;             //!< steps of the eigenvalue estimate (Lanczos or power), >= 1
  double safety = 1.1;            //!< the interval's top is the largest eigenvalue estimate times this (>= 1)
  double lower_ratio = 0;         //!< bottom = top x this; 0: the smallest Ritz value (Lanczos) or top / 10 (power)
  bool symmetric = true;          //!< symmetric operator: Lanczos estimate, and M is SPD; false: power method
  bool jacobi = true;             //!< scale by diag(A)^-1 (the operator needs diagonal()); false: D = I
  double lambda_min = 0;          //!< the interval of D A, when both lambda_min and lambda_max are > 0: no estimate
  double lambda_max = 0;          //!< (see lambda_min)
  std::uint64_t seed = 20261126;  //!< the estimate's random start vector (spmd::random, any rank count alike)
};

namespace impl {

/// The scalars of the Chebyshev iteration on the interval [lo, hi] (Saad, Iterative Methods for
/// Sparse Linear Systems, 2nd ed., Algorithm 12.1, preconditioned): the first step is
/// d = D r / theta; step k > 1 is d = a d + c D res with (a, c) = next(); in three-term form
/// x_{k+1} = x_k + a (x_k - x_{k-1}) + c D (b - A x_k). Local.
class ChebyshevSteps {
 public:
  ChebyshevSteps(double lo, double hi) : theta_((hi + lo) / 2), delta_((hi - lo) / 2) {
    sigma_ = theta_ / delta_;
    rho_ = 1 / sigma_;
  }
  /// 1 / theta: the first step's factor.
  double first() const { return 1 / theta_; }
  /// The next step's (a, c).
  std::pair<double, double> next() {
    const double r = 1 / (2 * sigma_ - rho_);
    const std::pair<double, double> ac{r * rho_, 2 * r / delta_};
    rho_ = r;
    return ac;
  }

 private:
  double theta_, delta_, sigma_ = 0, rho_ = 0;
};

/// The smallest and largest eigenvalues of the symmetric tridiagonal matrix with diagonal a
/// and off-diagonal b (a.size() - 1 entries), by bisection on Sturm counts. Local.
inline std::pair<double, double> tridiagonal_extremes(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t k = a.size();
  double lo = a[0], hi = a[0];
  for (std::size_t i = 0; i < k; ++i) {  // Gershgorin
    const double r = (i > 0 ? std::abs(b[i - 1]) : 0.0) + (i + 1 < k ? std::abs(b[i]) : 0.0);
    lo = std::min(lo, a[i] - r);
    hi = std::max(hi, a[i] + r);
  }
  const auto below = [&](double x) {  // eigenvalues < x
    std::size_t n = 0;
    double d = 1;
    for (std::size_t i = 0; i < k; ++i) {
      d = a[i] - x - (i > 0 ? b[i - 1] * b[i - 1] / d : 0.0);
      if (d == 0) d = -1e-300;
      if (d < 0) ++n;
    }
    return n;
  };
  const auto find = [&](std::size_t index) {  // the index-th smallest eigenvalue
    double l = lo, h = hi;
    for (int it = 0; it < 200 && h - l > 1e-15 * std::max(std::abs(l), std::abs(h)); ++it) {
      const double m = (l + h) / 2;
      if (below(m) > index)
        h = m;
      else
        l = m;
    }
    return (l + h) / 2;
  };
  return {find(0), find(k - 1)};
}

}  // namespace impl

/// The Chebyshev polynomial preconditioner of an operator (see the file comment).
template <class Operator>
class Chebyshev {
 public:
  using vector_type = typename Operator::vector_type;             ///< the operator's vector
  using value_type = typename vector_type::value_type;            ///< its element type
  using execution_space = typename vector_type::execution_space;  ///< where it runs

  /// Build it for A on `exec`: the inverse diagonal and the interval (an eigenvalue estimate
  /// unless given). Collective; throws the same spmd::Error on every rank for bad options, a
  /// zero diagonal entry, a symmetric (Lanczos) estimate with a negative diagonal entry, or an
  /// estimate that is not positive.
  Chebyshev(const execution_space& exec, const Operator& A, const ChebyshevOptions& opts = {})
      : A_(A),
        o_(opts),
        res_(A.make_vector("spmd::solvers::chebyshev::res")),
        d_(A.make_vector("spmd::solvers::chebyshev::d")),
        w_(A.make_vector("spmd::solvers::chebyshev::w")) {
    const char* fn = "spmd::solvers::chebyshev";
    if (opts.degree < 1 || opts.eig_steps < 1 || !(opts.safety >= 1) || !(opts.lower_ratio >= 0) ||
        !(opts.lower_ratio < 1) || !(opts.lambda_min >= 0) || !(opts.lambda_max >= 0))
      throw Error::replicated(spmd::impl::str(
          fn, ": degree (", opts.degree, ") and eig_steps (", opts.eig_steps, ") must be at least 1, safety (",
          opts.safety, ") at least 1, lower_ratio (", opts.lower_ratio, ") in [0, 1), lambda_min (", opts.lambda_min,
          ") and lambda_max (", opts.lambda_max, ") not negative"));
    if (o_.jacobi) {
      if constexpr (has_diagonal_v<Operator>) {
        dinv_ = A.make_vector("spmd::solvers::chebyshev::dinv");
        const bool positive = impl::inverse_diagonal(exec, A, dinv_, fn);
        if (o_.symmetric && !positive)
          throw Error::replicated(
              spmd::impl::str(fn, ": the operator's diagonal has negative entries: the Lanczos estimate in ",
                              "the diag(A) inner product needs a positive one (ChebyshevOptions::jacobi = false, ",
                              "or symmetric = false)"));
      } else {
        throw Error::replicated(
            spmd::impl::str(fn,
                            ": ChebyshevOptions::jacobi needs an operator with diagonal() (or jacobi = "
                            "false)"));
      }
    }
    if (opts.lambda_min > 0 && opts.lambda_max > 0) {
      lo_ = opts.lambda_min;
      hi_ = opts.lambda_max;
    } else if (o_.symmetric) {
      lanczos(exec);
    } else {
      power(exec);
    }
    if (!(lo_ > 0) || !(hi_ > lo_) || !std::isfinite(hi_))
      throw Error::replicated(spmd::impl::str(
          fn, ": the interval [", lo_, ", ", hi_, "] of the polynomial is not positive (the estimate found ", est_lo_,
          " .. ", est_hi_, "): the preconditioner needs an operator whose scaled spectrum is positive"));
  }
  /// On a default instance. Collective.
  explicit Chebyshev(const Operator& A, const ChebyshevOptions& opts = {}) : Chebyshev(execution_space(), A, opts) {}

  /// z = p(D A) D r on `exec`: degree - 1 operator applications. Neighbour-collective (as the
  /// operator).
  void apply(const execution_space& exec, const vector_type& r, const vector_type& z) const {
    if (jacobi())
      run<true>(exec, r, z);
    else
      run<false>(exec, r, z);
  }
  /// The preconditioner's kind (the option that names it). Local.
  Precond kind() const { return Precond::chebyshev; }
  /// SPD (fit for CG) when built for a symmetric operator (see the file comment). Local.
  bool symmetric() const { return o_.symmetric; }
  /// One line for logs and verdicts: the kind and how it was built. Local.
  std::string describe() const {
    return spmd::impl::str("chebyshev degree ", o_.degree, " on [", lo_, ", ", hi_, "]",
                           jacobi() ? " of diag(A)^-1 A" : "", " (",
                           o_.lambda_min > 0 && o_.lambda_max > 0 ? "given"
                           : o_.symmetric                         ? "Lanczos"
                                                                  : "power",
                           ")");
  }
  /// The lower end of the interval the polynomial damps. Local.
  double lambda_min() const { return lo_; }
  /// The upper end of that interval. Local.
  double lambda_max() const { return hi_; }
  /// The estimate's smallest eigenvalue (0 when the interval was given). Local.
  double estimated_min() const { return est_lo_; }
  /// The estimate's largest eigenvalue (0 when the interval was given). Local.
  double estimated_max() const { return est_hi_; }

 private:
  using Acc = impl::Acc<vector_type>;
  bool jacobi() const { return o_.jacobi; }
  Acc dinv_access(const vector_type& fallback) const {
    return jacobi() ? dinv_.owned_access() : fallback.owned_access();
  }

  template <bool J>
  void run(const execution_space& exec, const vector_type& r, const vector_type& z) const {
    impl::ChebyshevSteps steps(lo_, hi_);
    impl::for_points(
        exec, "spmd::solvers::chebyshev::start", z,
        impl::ChebStart<Acc, value_type, J>{d_.owned_access(), z.owned_access(), res_.owned_access(), r.owned_access(),
                                            dinv_access(r), static_cast<value_type>(steps.first())});
    for (int k = 1; k < o_.degree; ++k) {
      impl::apply_on(exec, A_, d_, w_);
      const auto ac = steps.next();
      impl::for_points(exec, "spmd::solvers::chebyshev::step", z,
                       impl::ChebStep<Acc, value_type, J>{
                           res_.owned_access(), w_.owned_access(), d_.owned_access(), z.owned_access(), dinv_access(r),
                           static_cast<value_type>(ac.first), static_cast<value_type>(ac.second)});
    }
  }

  /// The K sums of body over the owned points, combined over the ranks. Collective.
  template <int K, class Body>
  void sums(const execution_space& exec, const char* label, const Body& body, double (&out)[K]) const {
    const auto s = impl::sum_points<K>(exec, label, res_, body);
    for (int k = 0; k < K; ++k) out[k] = static_cast<double>(s.v[k]);
    res_.comm().allreduce(out, K, spmd::Op::sum);
  }

  /// Lanczos on D A in the D^-1 inner product (q: res_, previous q: d_, u: w_). Collective.
  void lanczos(const execution_space& exec) {
    if (jacobi())
      lanczos_steps<true>(exec);
    else
      lanczos_steps<false>(exec);
  }
  template <bool J>
  void lanczos_steps(const execution_space& exec) {
    vector_type q = spmd::impl::share(res_), p = spmd::impl::share(d_), u = spmd::impl::share(w_);
    random::uniform(exec, q, random::Generator{o_.seed}, value_type(-1), value_type(1));
    p.fill(exec, value_type(0));
    double nn[1];
    sums<1>(exec, "spmd::solvers::chebyshev::lanczos_norm",
            impl::WeightedNorm<Acc, value_type, J>{q.owned_access(), dinv_access(q)}, nn);
    impl::for_points(exec, "spmd::solvers::chebyshev::lanczos_scale", q,
                     impl::Scale<Acc, value_type>{q.owned_access(), static_cast<value_type>(1 / std::sqrt(nn[0]))});
    std::vector<double> alpha, beta;
    double b = 0;
    for (int j = 0; j < o_.eig_steps; ++j) {
      impl::apply_on(exec, A_, q, u);
      double a[1];
      sums<1>(exec, "spmd::solvers::chebyshev::lanczos_alpha",
              impl::Dot<Acc, value_type>{q.owned_access(), u.owned_access()}, a);
      alpha.push_back(a[0]);
      sums<1>(
          exec, "spmd::solvers::chebyshev::lanczos_update",
          impl::LanczosUpdate<Acc, value_type, J>{u.owned_access(), q.owned_access(), p.owned_access(), dinv_access(q),
                                                  static_cast<value_type>(a[0]), static_cast<value_type>(b)},
          nn);
      b = std::sqrt(nn[0]);
      if (!(b > 1e-12 * std::abs(a[0])) || j + 1 == o_.eig_steps) break;  // invariant subspace, or done
      beta.push_back(b);
      impl::for_points(exec, "spmd::solvers::chebyshev::lanczos_scale", u,
                       impl::Scale<Acc, value_type>{u.owned_access(), static_cast<value_type>(1 / b)});
      std::swap(p, q);  // p = q, q = u (handles)
      std::swap(q, u);
    }
    for (double a : alpha)
      if (!std::isfinite(a)) throw Error::replicated("spmd::solvers::chebyshev: the Lanczos estimate is not finite");
    const auto ext = impl::tridiagonal_extremes(alpha, beta);
    est_lo_ = ext.first;
    est_hi_ = ext.second;
    hi_ = est_hi_ * o_.safety;
    lo_ = o_.lower_ratio > 0 ? hi_ * o_.lower_ratio : est_lo_;
  }

  /// The power method on D A: the growth of ||(D A)^k v|| estimates the spectral radius.
  /// Collective.
  void power(const execution_space& exec) {
    vector_type v = spmd::impl::share(res_), u = spmd::impl::share(w_);
    random::uniform(exec, v, random::Generator{o_.seed}, value_type(-1), value_type(1));
    double nn[1];
    sums<1>(exec, "spmd::solvers::chebyshev::power_norm",
            impl::Dot<Acc, value_type>{v.owned_access(), v.owned_access()}, nn);
    double vnorm = std::sqrt(nn[0]), est = 0;
    for (int j = 0; j < o_.eig_steps; ++j) {
      impl::apply_on(exec, A_, v, u);
      if (jacobi())
        sums<1>(exec, "spmd::solvers::chebyshev::power",
                impl::PowerStep<Acc, value_type, true>{u.owned_access(), dinv_.owned_access()}, nn);
      else
        sums<1>(exec, "spmd::solvers::chebyshev::power",
                impl::PowerStep<Acc, value_type, false>{u.owned_access(), u.owned_access()}, nn);
      const double unorm = std::sqrt(nn[0]);
      est = unorm / vnorm;
      if (!(unorm > 0) || !std::isfinite(unorm)) break;
      impl::for_points(exec, "spmd::solvers::chebyshev::power_scale", u,
                       impl::Scale<Acc, value_type>{u.owned_access(), static_cast<value_type>(1 / unorm)});
      vnorm = 1;
      std::swap(v, u);
    }
    est_hi_ = est;
    est_lo_ = 0;
    hi_ = est * o_.safety;
    lo_ = hi_ * (o_.lower_ratio > 0 ? o_.lower_ratio : 0.1);
  }

  const Operator& A_;
  ChebyshevOptions o_;
  vector_type dinv_, res_, d_, w_;
  double lo_ = 0, hi_ = 0, est_lo_ = 0, est_hi_ = 0;
};

/// The Chebyshev preconditioner of A (see the file comment), built on `exec`. Collective.
template <class Operator>
Preconditioner<typename Operator::vector_type> chebyshev(const typename Operator::vector_type::execution_space& exec,
                                                         const Operator& A, const ChebyshevOptions& opts = {}) {
  return Chebyshev<Operator>(exec, A, opts);
}
/// chebyshev() on a default instance. Collective.
template <class Operator>
Preconditioner<typename Operator::vector_type> chebyshev(const Operator& A, const ChebyshevOptions& opts = {}) {
  return Chebyshev<Operator>(A, opts);
}

}  // namespace spmd::solvers
