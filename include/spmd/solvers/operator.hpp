#pragma once
/// \file solvers/operator.hpp
/// The linear-operator concept the solvers take (C++17: traits and a static_assert, no concepts).
///
/// A type Op is a linear operator when it has:
///
///   typename Op::vector_type                    an spmd::Array<T, N, M> (any N, any memory space)
///   void apply(const vector_type& x,            y = A x. Collective or Neighbour-collective: every
///              const vector_type& y) const;     rank of the vectors' communicator calls it.
///                                               x and y are distinct vectors from make_vector;
///                                               apply may overwrite x's halo, never its owned
///                                               values.
///   vector_type make_vector(const std::string& label) const;
///                                               a zero vector on the operator's distribution, with
///                                               the halo the operator needs (the solvers take
///                                               every work vector from here). Local.
///
/// and optionally, for the Jacobi preconditioner:
///
///   void diagonal(const vector_type& d) const;  d = diag(A) on the owned points. Local or
///                                               Collective.
///
/// and optionally, to run on the solver's execution space instance (spmd::solvers::cg(exec, ...)):
///
///   void apply(const execution_space& exec, const vector_type& x, const vector_type& y) const;
///   void diagonal(const execution_space& exec, const vector_type& d) const;
///
/// (execution_space: vector_type::execution_space). An operator without them is called between
/// fences of the solver's instance and of a default one, so its work is ordered either way.
///
/// spmd::sparse::CsrMatrix satisfies it as it is; spmd::solvers::Laplacian is the matrix-free
/// (2N+1)-point Laplacian on N-d arrays. A user operator needs nothing else: no base class, no
/// virtual functions. The solvers check the concept at compile time with
/// `static_assert_linear_operator<Op>()`, which names the missing member.

#include <string>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::solvers {

/// True for spmd::Array<T, N, M>.
template <class V>
struct is_array : std::false_type {};
template <class T, int N, class M>
struct is_array<Array<T, N, M>> : std::true_type {};

namespace impl {
template <class Op, class = void>
struct has_vector_type : std::false_type {};
template <class Op>
struct has_vector_type<Op, std::void_t<typename Op::vector_type>> : is_array<typename Op::vector_type> {};

template <class Op, class = void>
struct has_apply : std::false_type {};
template <class Op>
struct has_apply<
    Op, std::void_t<decltype(std::declval<const Op&>().apply(std::declval<const typename Op::vector_type&>(),
                                                             std::declval<const typename Op::vector_type&>()))>>
    : std::true_type {};

template <class Op, class = void>
struct has_make_vector : std::false_type {};
template <class Op>
struct has_make_vector<Op,
                       std::void_t<decltype(std::declval<const Op&>().make_vector(std::declval<const std::string&>()))>>
    : std::is_same<decltype(std::declval<const Op&>().make_vector(std::declval<const std::string&>())),
                   typename Op::vector_type> {};

template <class Op, class = void>
struct has_diagonal : std::false_type {};
template <class Op>
struct has_diagonal<
    Op, std::void_t<decltype(std::declval<const Op&>().diagonal(std::declval<const typename Op::vector_type&>()))>>
    : std::true_type {};
}  // namespace impl

namespace impl {
template <class Op, class = void>
struct has_exec_apply : std::false_type {};
template <class Op>
struct has_exec_apply<
    Op, std::void_t<decltype(std::declval<const Op&>().apply(
            std::declval<const typename Op::vector_type::execution_space&>(),
            std::declval<const typename Op::vector_type&>(), std::declval<const typename Op::vector_type&>()))>>
    : std::true_type {};
template <class Op, class = void>
struct has_exec_diagonal : std::false_type {};
template <class Op>
struct has_exec_diagonal<Op, std::void_t<decltype(std::declval<const Op&>().diagonal(
                                 std::declval<const typename Op::vector_type::execution_space&>(),
                                 std::declval<const typename Op::vector_type&>()))>> : std::true_type {};

/// Runs f() (an operator's call without an execution space instance) ordered after earlier work
/// on `exec` and before later work on it.
template <class Exec, class F>
void ordered(const Exec& exec, const F& f) {
  spmd::impl::fence(exec, "spmd::solvers: before an operator without execution space instance");
  f();
  spmd::impl::fence(Exec(), "spmd::solvers: after an operator without execution space instance");
}
/// y = A x on `exec` (through the operator's own exec-first apply when it has one).
template <class Exec, class Op, class V>
void apply_on(const Exec& exec, const Op& A, const V& x, const V& y) {
  if constexpr (has_exec_apply<Op>::value)
    A.apply(exec, x, y);
  else
    ordered(exec, [&] { A.apply(x, y); });
}
/// d = diag(A) on `exec`.
template <class Exec, class Op, class V>
void diagonal_on(const Exec& exec, const Op& A, const V& d) {
  if constexpr (has_exec_diagonal<Op>::value)
    A.diagonal(exec, d);
  else
    ordered(exec, [&] { A.diagonal(d); });
}
}  // namespace impl

/// True when Op satisfies the linear-operator concept above.
template <class Op>
inline constexpr bool is_linear_operator_v =
    std::conjunction_v<impl::has_vector_type<Op>, impl::has_apply<Op>, impl::has_make_vector<Op>>;

/// True when Op also has diagonal(d) (what the Jacobi preconditioner needs).
template <class Op>
inline constexpr bool has_diagonal_v = is_linear_operator_v<Op>&& impl::has_diagonal<Op>::value;

/// Compile-time check with a message naming what Op lacks. Local.
template <class Op>
constexpr void static_assert_linear_operator() {
  static_assert(impl::has_vector_type<Op>::value,
                "spmd::solvers: the operator must define `vector_type` as an spmd::Array<T, N, M>");
  if constexpr (impl::has_vector_type<Op>::value) {
    static_assert(impl::has_apply<Op>::value,
                  "spmd::solvers: the operator must have `void apply(const vector_type& x, const vector_type& y) "
                  "const` (y = A x)");
    static_assert(impl::has_make_vector<Op>::value,
                  "spmd::solvers: the operator must have `vector_type make_vector(const std::string& label) const` "
                  "(a zero vector on its distribution)");
    using T = typename Op::vector_type::value_type;
    static_assert(std::is_floating_point_v<T>, "spmd::solvers: the operator's value type must be float or double");
  }
}

}  // namespace spmd::solvers
