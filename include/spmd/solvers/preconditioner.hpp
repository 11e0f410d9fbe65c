#pragma once
/// \file solvers/preconditioner.hpp
/// The one preconditioner interface every solver takes (CG, pipelined CG, GMRES, FGMRES,
/// BiCGStab), and the Jacobi preconditioner.
///
/// A type P is a preconditioner for vectors V (an spmd::Array) when it has
///
///   using vector_type = V;
///   void apply(const typename V::execution_space& exec, const V& r, const V& z) const;
///                        z = M^-1 r on `exec` (r and z distinct vectors of the operator's
///                        layout; apply may overwrite r's halo, never its owned values).
///                        Collective or Neighbour-collective.
///
/// and optionally
///
///   Precond kind() const;        what it is (Precond::other when absent)
///   bool symmetric() const;      M^-1 is symmetric positive definite, so CG and pipelined CG
///                                may use it (absent: not declared, and they accept it)
///   std::string describe() const;  one line for messages and reports
///
/// Preconditioner<V> holds any such P (shared, type-erased: a copy is a handle on the same
/// preconditioner) so that one solver type serves every preconditioner. The preconditioners of
/// the library: jacobi(A) here, chebyshev(A, ...) (solvers/chebyshev.hpp), block_ilu(A)
/// (solvers/ilu.hpp) and multigrid(L, ...) (solvers/multigrid.hpp). Each keeps a reference to
/// its operator, which must outlive it.

#include <Kokkos_Core.hpp>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/error.hpp"
#include "spmd/solvers/impl/kernels.hpp"
#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"

namespace spmd::solvers {

namespace impl {
template <class P, class V, class = void>
struct has_precond_apply : std::false_type {};
template <class P, class V>
struct has_precond_apply<P, V,
                         std::void_t<typename P::vector_type, decltype(std::declval<const P&>().apply(
                                                                  std::declval<const typename V::execution_space&>(),
                                                                  std::declval<const V&>(), std::declval<const V&>()))>>
    : std::is_same<typename P::vector_type, V> {};
template <class P, class = void>
struct has_kind : std::false_type {};
template <class P>
struct has_kind<P, std::void_t<decltype(std::declval<const P&>().kind())>> : std::true_type {};
template <class P, class = void>
struct has_symmetric : std::false_type {};
template <class P>
struct has_symmetric<P, std::void_t<decltype(std::declval<const P&>().symmetric())>> : std::true_type {};
template <class P, class = void>
struct has_describe : std::false_type {};
template <class P>
struct has_describe<P, std::void_t<decltype(std::declval<const P&>().describe())>> : std::true_type {};
}  // namespace impl

/// True when P is a preconditioner for vectors V (see the file comment).
template <class P, class V>
inline constexpr bool is_preconditioner_v = impl::has_precond_apply<P, V>::value;

/// Any preconditioner for vectors V (see the file comment), or none (default-constructed).
/// Copies share the preconditioner.
template <class Vector>
class Preconditioner {
 public:
  /// The vectors.
  using vector_type = Vector;
  /// The element type.
  using value_type = typename Vector::value_type;
  /// The execution space of apply().
  using execution_space = typename Vector::execution_space;

  /// No preconditioner. Local.
  Preconditioner() = default;

  /// Holds `p` (moved into shared storage). Local.
  template <class P, std::enable_if_t<is_preconditioner_v<std::decay_t<P>, Vector>, int> = 0>
  Preconditioner(P&& p) {  // NOLINT(google-explicit-constructor): any preconditioner converts
    using Q = std::decay_t<P>;
    auto held = std::make_shared<const Q>(std::forward<P>(p));
    if constexpr (impl::has_kind<Q>::value) kind_ = held->kind();
    if constexpr (impl::has_symmetric<Q>::value) {
      declared_ = true;
      symmetric_ = held->symmetric();
    }
    if constexpr (impl::has_describe<Q>::value)
      describe_ = held->describe();
    else
      describe_ = to_string(kind_);
    apply_ = [held](const execution_space& exec, const Vector& r, const Vector& z) { held->apply(exec, r, z); };
    held_ = std::move(held);
  }

  /// z = M^-1 r on `exec`. Collective or Neighbour-collective (as the preconditioner held).
  void apply(const execution_space& exec, const Vector& r, const Vector& z) const {
    if (!apply_) throw Error::replicated("spmd::solvers::Preconditioner::apply: no preconditioner");
    apply_(exec, r, z);
  }
  /// apply() on a default instance.
  void apply(const Vector& r, const Vector& z) const { apply(execution_space(), r, z); }

  /// True when a preconditioner is held. Local.
  explicit operator bool() const { return static_cast<bool>(apply_); }
  /// What it is (Precond::none when empty). Local.
  Precond kind() const { return apply_ ? kind_ : Precond::none; }
  /// Declared symmetric positive definite (true when it did not say). Local.
  bool symmetric() const { return !declared_ || symmetric_; }
  /// Whether the preconditioner said if it is symmetric. Local.
  bool declares_symmetry() const { return declared_; }
  /// One line naming it. Local.
  const std::string& describe() const { return describe_; }

 private:
  std::function<void(const execution_space&, const Vector&, const Vector&)> apply_;
  std::shared_ptr<const void> held_;
  Precond kind_ = Precond::other;
  bool declared_ = false, symmetric_ = false;
  std::string describe_ = "none";
};

namespace impl {

/// dinv = 1 / diag(A) on `exec`, with a collective spmd::Error naming `fn` when an entry is
/// zero, NaN or infinite. Returns true when every entry is positive. Collective.
template <class Exec, class Op, class V>
bool inverse_diagonal(const Exec& exec, const Op& A, const V& dinv, const std::string& fn) {
  using T = typename V::value_type;
  impl::diagonal_on(exec, A, dinv);
  const auto bad = sum_points<2>(exec, "spmd::solvers::jacobi_invert", dinv, Invert<Acc<V>, T>{dinv.owned_access()});
  double counts[2] = {static_cast<double>(bad.v[0]), static_cast<double>(bad.v[1])};
  dinv.comm().allreduce(counts, 2, spmd::Op::sum);
  if (counts[0] > 0)
    throw Error::replicated(
        spmd::impl::str(fn, ": Jacobi: the operator's diagonal has ", counts[0], " zero, NaN or infinite entries"));
  return counts[1] == 0;
}

}  // namespace impl

/// The Jacobi preconditioner z = D^-1 r, D = diag(A) (an operator with diagonal(d)).
template <class Operator>
class Jacobi {
 public:
  using vector_type = typename Operator::vector_type;             ///< the operator's vector
  using value_type = typename vector_type::value_type;            ///< its element type
  using execution_space = typename vector_type::execution_space;  ///< where it runs

  /// The inverse diagonal of A, computed on `exec`. Collective; throws the same spmd::Error on
  /// every rank when a diagonal entry is zero, NaN or infinite.
  Jacobi(const execution_space& exec, const Operator& A) : dinv_(A.make_vector("spmd::solvers::jacobi::dinv")) {
    static_assert(has_diagonal_v<Operator>,
                  "spmd::solvers::Jacobi: the operator needs `void diagonal(const vector_type&) const`");
    positive_ = impl::inverse_diagonal(exec, A, dinv_, "spmd::solvers::jacobi");
  }
  /// On a default instance. Collective.
  explicit Jacobi(const Operator& A) : Jacobi(execution_space(), A) {}

  /// z = D^-1 r. Local.
  void apply(const execution_space& exec, const vector_type& r, const vector_type& z) const {
    impl::for_points(
        exec, "spmd::solvers::jacobi::apply", z,
        impl::Multiply<impl::Acc<vector_type>, value_type>{z.owned_access(), dinv_.owned_access(), r.owned_access()});
  }
  /// The preconditioner's kind (the option that names it). Local.
  Precond kind() const { return Precond::jacobi; }
  /// Symmetric positive definite when every diagonal entry is positive. Local.
  bool symmetric() const { return positive_; }
  /// One line for logs and verdicts: the kind and how it was built. Local.
  std::string describe() const { return positive_ ? "jacobi" : "jacobi (a diagonal entry is negative)"; }
  /// The inverse diagonal. Local.
  const vector_type& inverse_diagonal() const { return dinv_; }

 private:
  vector_type dinv_;
  bool positive_ = true;
};

/// The Jacobi preconditioner of A, on `exec`. Collective.
template <class Operator>
Preconditioner<typename Operator::vector_type> jacobi(const typename Operator::vector_type::execution_space& exec,
                                                      const Operator& A) {
  return Jacobi<Operator>(exec, A);
}
/// jacobi() on a default instance. Collective.
template <class Operator>
Preconditioner<typename Operator::vector_type> jacobi(const Operator& A) {
  return Jacobi<Operator>(A);
}

}  // namespace spmd::solvers
