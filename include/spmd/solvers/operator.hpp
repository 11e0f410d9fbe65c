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
/// spmd::sparse::CsrMatrix satisfies it as it is; spmd::solvers::Laplacian is the matrix-free
/// (2N+1)-point Laplacian on N-d arrays. A user operator needs nothing else: no base class, no
/// virtual functions. The solvers check the concept at compile time with
/// `static_assert_linear_operator<Op>()`, which names the missing member.

#include <string>
#include <type_traits>
#include <utility>

#include "spmd/array.hpp"

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
