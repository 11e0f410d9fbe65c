#pragma once
// Expressions, host side: the element operations (device functions) and the tree of operand
// handles an expression is built as (plain structs: nothing runs until it is assigned or
// reduced), NumPy's type promotion, the shape check, and the visitors over the tree's array
// operands (the terminals).

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>
#include <utility>

#include "spmd/distribution.hpp"
#include "spmd/impl/array_fwd.hpp"
#include "spmd/impl/complex.hpp"
#include "spmd/impl/select.hpp"
#include "spmd/impl/selection.hpp"
#include "spmd/math.hpp"

namespace spmd {
/// Base of generator expressions (random numbers, index expressions): it makes spmd's operators
/// and functions visible to argument-dependent lookup on them (they hold no spmd type).
struct GeneratorBase {};
}  // namespace spmd

namespace spmd::impl {

enum class UnOp { neg, abs, sqrt, exp, log, sin, cos, lnot, cast, real, imag, conj, angle };
enum class BinOp { add, sub, mul, div, pow, minimum, maximum, lt, le, gt, ge, eq, ne, land, lor };

constexpr bool is_comparison(BinOp op) {
  return op == BinOp::lt || op == BinOp::le || op == BinOp::gt || op == BinOp::ge || op == BinOp::eq ||
         op == BinOp::ne || op == BinOp::land || op == BinOp::lor;
}

/// True for the operations whose result is real for a complex operand (abs, real, imag, angle).
constexpr bool real_result(UnOp op) {
  return op == UnOp::abs || op == UnOp::real || op == UnOp::imag || op == UnOp::angle;
}

/// Unary operation Op on values converted to R.
template <UnOp Op, class R>
struct Un {
  using result = std::conditional_t<Op == UnOp::lnot, bool, std::conditional_t<real_result(Op), real_part_t<R>, R>>;
  KOKKOS_FORCEINLINE_FUNCTION static result apply(const R x) {
    if constexpr (Op == UnOp::neg)
      return -x;
    else if constexpr (Op == UnOp::abs && is_complex_v<R>)
      return Kokkos::abs(x);  // hypot(re, im): no overflow for large parts
    else if constexpr (Op == UnOp::abs)
      return x < R(0) ? -x : x;
    else if constexpr (Op == UnOp::real)
      return real_of(x);
    else if constexpr (Op == UnOp::imag)
      return imag_of(x);
    else if constexpr (Op == UnOp::conj)
      return conj_of(x);
    else if constexpr (Op == UnOp::angle)
      return math::atan2(imag_of(x), real_of(x));
    else if constexpr (Op == UnOp::sqrt)
      return math::sqrt(x);
    else if constexpr (Op == UnOp::exp)
      return math::exp(x);
    else if constexpr (Op == UnOp::log)
      return math::log(x);
    else if constexpr (Op == UnOp::sin)
      return math::sin(x);
    else if constexpr (Op == UnOp::cos)
      return math::cos(x);
    else if constexpr (Op == UnOp::lnot && is_complex_v<R>)
      return x == R(0);
    else if constexpr (Op == UnOp::lnot)
      return !x;
    else
      return x;  // cast: the conversion to R is the operation
  }
};

/// True for the operations that need an order (not defined for complex values, as in NumPy 2):
/// < <= > >=, minimum, maximum, and && || (whose truth of a complex value spmd does not define).
constexpr bool needs_order(BinOp op) {
  return op == BinOp::lt || op == BinOp::le || op == BinOp::gt || op == BinOp::ge || op == BinOp::minimum ||
         op == BinOp::maximum || op == BinOp::land || op == BinOp::lor;
}

/// Binary operation Op on values converted to R.
template <BinOp Op, class R>
struct Bin {
  using result = std::conditional_t<is_comparison(Op), bool, R>;
  // evaluated here, at class scope: nvcc warns of a constexpr host function called in a device one
  static constexpr bool unordered = is_complex_v<R> && needs_order(Op);
  KOKKOS_FORCEINLINE_FUNCTION static result apply(const R x, const R y) {
    if constexpr (unordered)
      return result{};  // not reached: make_binary's static_assert stops the build first
    else if constexpr (Op == BinOp::add)
      return x + y;
    else if constexpr (Op == BinOp::sub)
      return x - y;
    else if constexpr (Op == BinOp::mul)
      return x * y;
    else if constexpr (Op == BinOp::div)
      return x / y;
    else if constexpr (Op == BinOp::pow)
      return math::pow(x, y);
    else if constexpr (Op == BinOp::minimum)
      return np_minimum(x, y);  // NumPy: a NaN on either side gives NaN; y on a tie (impl/select.hpp)
    else if constexpr (Op == BinOp::maximum)
      return np_maximum(x, y);
    else if constexpr (Op == BinOp::lt)
      return x < y;
    else if constexpr (Op == BinOp::le)
      return x <= y;
    else if constexpr (Op == BinOp::gt)
      return x > y;
    else if constexpr (Op == BinOp::ge)
      return x >= y;
    else if constexpr (Op == BinOp::eq)
      return x == y;
    else if constexpr (Op == BinOp::ne)
      return x != y;
    else if constexpr (Op == BinOp::land)
      return x && y;
    else
      return x || y;
  }
};

inline const char* op_name(BinOp op) {
  constexpr const char* names[] = {"operator+",  "operator-",  "operator*",  "operator/",  "pow",
                                   "minimum",    "maximum",    "operator<",  "operator<=", "operator>",
                                   "operator>=", "operator==", "operator!=", "operator&&", "operator||"};
  return names[static_cast<int>(op)];
}

/// The memory space of an operand without storage of its own (a generator: random numbers, index
/// expressions, fromfunction): it takes the space of the arrays it meets.
struct AnySpace {};
template <class X, class = void>
struct space_of_node {
  using type = AnySpace;  // scalars
};
template <class X>
struct space_of_node<X, std::void_t<typename X::memory_space>> {
  using type = typename X::memory_space;
};
/// The memory space of operands combined: the first that is not AnySpace.
template <class... X>
struct join_space {
  using type = AnySpace;
};
template <class X, class... Rest>
struct join_space<X, Rest...> {
  using first = typename space_of_node<X>::type;
  using type = std::conditional_t<std::is_same_v<first, AnySpace>, typename join_space<Rest...>::type, first>;
};
/// True when the operands' memory spaces agree (AnySpace agrees with every space).
template <class A, class B>
constexpr bool compatible_spaces() {
  using SA = typename space_of_node<A>::type;
  using SB = typename space_of_node<B>::type;
  return std::is_same_v<SA, AnySpace> || std::is_same_v<SB, AnySpace> || std::is_same_v<SA, SB>;
}

template <class S>
struct ScalarExpr {
  using spmd_expression = void;
  using value_type = S;
  static constexpr int rank = 0;
  S value;
};

template <UnOp Op, class R, class A>
struct UnaryExpr {
  using spmd_expression = void;
  using op = Un<Op, R>;
  using value_type = typename op::result;
  using memory_space = typename A::memory_space;
  static constexpr int rank = A::rank;
  A a;
  Index<rank> shape() const { return a.shape(); }
};

template <BinOp Op, class R, class A, class B>
struct BinaryExpr {
  using spmd_expression = void;
  using op = Bin<Op, R>;
  using value_type = typename op::result;
  using memory_space = typename join_space<A, B>::type;
  static constexpr int rank = A::rank > B::rank ? A::rank : B::rank;
  A a;
  B b;
  Index<rank> shape_;
  const Index<rank>& shape() const { return shape_; }
};

template <class R, class C, class A, class B>
struct WhereExpr {
  using spmd_expression = void;
  using value_type = R;
  static constexpr int rank = C::rank > A::rank ? (C::rank > B::rank ? C::rank : B::rank)
                                                : (A::rank > B::rank ? A::rank : B::rank);
  using memory_space = typename join_space<C, A, B>::type;
  C c;
  A a;
  B b;
  Index<rank> shape_;
  const Index<rank>& shape() const { return shape_; }
};

template <class X>
struct is_array : std::false_type {};
template <class T, int N, class M>
struct is_array<Array<T, N, M>> : std::true_type {};
template <class X>
struct is_view : std::false_type {};
template <class T, int M, int N, class Mem>
struct is_view<ArrayView<T, M, N, Mem>> : std::true_type {};

/// Arrays, views and expressions (not scalars).
template <class X>
inline constexpr bool is_operand_v = is_expression_v<X> || is_array<std::decay_t<X>>::value;
template <class X>
inline constexpr bool is_scalar_v = std::is_arithmetic_v<std::decay_t<X>> || is_complex_v<std::decay_t<X>>;

/// The tree node of an operand: an Array is its whole view, a scalar a ScalarExpr.
template <class T, int N, class M>
ArrayView<T, N, N, M> as_node(const Array<T, N, M>& a) {
  return view_of(a);
}
template <class X, std::enable_if_t<is_expression_v<X>, int> = 0>
const X& as_node(const X& x) {
  return x;
}
template <class S, std::enable_if_t<is_scalar_v<S>, int> = 0>
ScalarExpr<S> as_node(const S& s) {
  return ScalarExpr<S>{s};
}
template <class X>
using node_t = std::decay_t<decltype(as_node(std::declval<const X&>()))>;

/// The type an array of V meets a scalar of S in (NumPy's rule for Python scalars: the scalar
/// takes the array's type unless it is of a higher kind: floating with an integral array,
/// complex with a real one). A complex array keeps its type (complex<float> * 2.0 stays
/// complex<float>, as float * 2.0 stays float); a real floating array with a complex scalar
/// becomes complex of its own precision (float32 * 1j is complex64), an integral one
/// complex<double>.
template <class V, class S>
using with_scalar_t = std::conditional_t<
    is_complex_v<V>, V,
    std::conditional_t<
        is_complex_v<S>, Kokkos::complex<std::conditional_t<std::is_floating_point_v<V>, V, double>>,
        std::conditional_t<std::is_floating_point_v<V> || (std::is_integral_v<S> && !std::is_same_v<V, bool>), V,
                           decltype(V() + S())>>>;

/// The type two operands are converted to (NumPy's rules: with_scalar_t for a scalar, the
/// arrays' result type (common_value_t) otherwise).
template <class A, class B>
struct promote {
  using VA = typename A::value_type;
  using VB = typename B::value_type;
  using common = common_value_t<VA, VB>;
  template <class V, class S>
  using with_scalar = with_scalar_t<V, S>;
  using type = std::conditional_t<A::rank == 0, with_scalar<VB, VA>,
                                  std::conditional_t<B::rank == 0, with_scalar<VA, VB>, common>>;
};
/// The type of sqrt, exp, ... and `/` of V: V for floating and complex V, double otherwise.
template <class V>
using floating_t = std::conditional_t<std::is_floating_point_v<V> || is_complex_v<V>, V, double>;
/// Floating type of norms: T for floating T, R for complex<R>, double otherwise.
template <class T>
using real_t = std::conditional_t<std::is_floating_point_v<real_part_t<T>>, real_part_t<T>, double>;

/// A shape as NumPy prints it: (4, 6), (5,). Local.
template <class C>
std::string np_shape_str(const C& c) {
  std::string s = "(";
  bool first = true;
  for (const auto& v : c) {
    s += (first ? "" : ", ") + std::to_string(v);
    first = false;
  }
  return s + (c.size() == 1 ? ",)" : ")");
}

/// The broadcast shape (NumPy's rules) of the operands of rank > 0, with R axes: shapes are
/// aligned at their last axes, missing leading axes count as 1, and along each axis the extents
/// must be equal or 1 (an extent 1 stretches; 0 with 1 gives 0). Otherwise a collective
/// spmd::Error naming every shape, as NumPy's: "spmd::operator-: operands could not be broadcast
/// together with shapes (4, 6) (5,)" (the message is built only then: expressions are built in
/// hot loops; shapes are replicated, so every rank that builds the expression throws it). Local.
template <int R, class... X>
Index<R> broadcast_shape(const char* fn, const X&... x) {
  Index<R> shape{};
  for (int k = 0; k < R; ++k) shape[k] = 1;
  bool bad = false;
  auto one = [&](const auto& e) {
    constexpr int r = std::decay_t<decltype(e)>::rank;
    if constexpr (r > 0) {
      static_assert(r <= R, "spmd: an operand has more axes than the expression");
      const auto& s = e.shape();
      for (int i = 0; i < r; ++i) {
        const int k = R - r + i;
        const index_t n = s[i];
        if (n == 1) continue;
        if (shape[k] == 1)
          shape[k] = n;
        else if (shape[k] != n)
          bad = true;
      }
    }
  };
  (one(x), ...);
  if (bad) {
    std::string shapes;
    auto name = [&](const auto& e) {
      if constexpr (std::decay_t<decltype(e)>::rank > 0) shapes += " " + np_shape_str(e.shape());
    };
    (name(x), ...);
    throw Error::replicated(str("spmd::", fn, ": operands could not be broadcast together with shapes", shapes));
  }
  return shape;
}

/// True when an operand of shape `s` broadcasts to `shape` (NumPy: aligned at the last axes,
/// each extent equal or 1). Local.
template <class S, class Shape>
bool broadcasts_to(const S& s, const Shape& shape) {
  constexpr int R = static_cast<int>(std::tuple_size<S>::value), M = static_cast<int>(std::tuple_size<Shape>::value);
  if constexpr (R > M) {
    return false;
  } else {
    for (int i = 0; i < R; ++i)
      if (s[i] != 1 && s[i] != shape[M - R + i]) return false;
    return true;
  }
}

template <BinOp Op, class A, class B>
auto make_binary(const A& a, const B& b) {
  using NA = node_t<A>;
  using NB = node_t<B>;
  static_assert(compatible_spaces<NA, NB>(), "spmd: operands live in different memory spaces");
  using P = typename promote<NA, NB>::type;
  static_assert(!(is_complex_v<P> && needs_order(Op)),
                "spmd: complex numbers have no order: <, <=, >, >=, minimum, maximum, && and || are not defined "
                "for complex operands (compare abs(z) or real(z))");
  using R = std::conditional_t<Op == BinOp::land || Op == BinOp::lor, bool,
                               std::conditional_t<Op == BinOp::div || Op == BinOp::pow, floating_t<P>, P>>;
  constexpr int rank = NA::rank > NB::rank ? NA::rank : NB::rank;
  const NA x = as_node(a);
  const NB y = as_node(b);
  return BinaryExpr<Op, R, NA, NB>{x, y, broadcast_shape<rank>(op_name(Op), x, y)};
}

template <UnOp Op, class R, class A>
auto make_unary(const A& a) {
  using NA = node_t<A>;
  static_assert(NA::rank > 0, "spmd: expression functions take an array, a view or an expression");
  return UnaryExpr<Op, R, NA>{as_node(a)};
}

template <class A, class B>
using if_binary =
    std::enable_if_t<(is_operand_v<A> && (is_operand_v<B> || is_scalar_v<B>)) || (is_scalar_v<A> && is_operand_v<B>),
                     int>;
template <class A>
using if_operand = std::enable_if_t<is_operand_v<A>, int>;
template <class A>
using value_of = typename node_t<A>::value_type;

// ---- visiting the array operands (the terminals), in tree order --------------------------------

template <class S, class F>
void visit_terminals(const ScalarExpr<S>&, F&) {}
template <class T, int M, int N, class Mem, class F>
void visit_terminals(const ArrayView<T, M, N, Mem>& v, F& f) {
  f(v);
}
template <UnOp Op, class R, class A, class F>
void visit_terminals(const UnaryExpr<Op, R, A>& e, F& f) {
  visit_terminals(e.a, f);
}
template <BinOp Op, class R, class A, class B, class F>
void visit_terminals(const BinaryExpr<Op, R, A, B>& e, F& f) {
  visit_terminals(e.a, f);
  visit_terminals(e.b, f);
}
template <class R, class C, class A, class B, class F>
void visit_terminals(const WhereExpr<R, C, A, B>& e, F& f) {
  visit_terminals(e.c, f);
  visit_terminals(e.a, f);
  visit_terminals(e.b, f);
}

/// The number of array operands of an expression.
template <class E>
struct terminal_count;
template <class S>
struct terminal_count<ScalarExpr<S>> : std::integral_constant<std::size_t, 0> {};
template <class T, int M, int N, class Mem>
struct terminal_count<ArrayView<T, M, N, Mem>> : std::integral_constant<std::size_t, 1> {};
template <UnOp Op, class R, class A>
struct terminal_count<UnaryExpr<Op, R, A>> : terminal_count<A> {};
template <BinOp Op, class R, class A, class B>
struct terminal_count<BinaryExpr<Op, R, A, B>>
    : std::integral_constant<std::size_t, terminal_count<A>::value + terminal_count<B>::value> {};
template <class R, class C, class A, class B>
struct terminal_count<WhereExpr<R, C, A, B>>
    : std::integral_constant<std::size_t,
                             terminal_count<C>::value + terminal_count<A>::value + terminal_count<B>::value> {};

/// The first array operand (the reference layout of a reduction; generators have none).
template <class T, int M, int N, class Mem>
const ArrayView<T, M, N, Mem>& first_terminal(const ArrayView<T, M, N, Mem>& v) {
  return v;
}
template <UnOp Op, class R, class A>
const auto& first_terminal(const UnaryExpr<Op, R, A>& e) {
  return first_terminal(e.a);
}
template <BinOp Op, class R, class A, class B>
const auto& first_terminal(const BinaryExpr<Op, R, A, B>& e) {
  if constexpr (terminal_count<A>::value > 0)
    return first_terminal(e.a);
  else
    return first_terminal(e.b);
}
template <class R, class C, class A, class B>
const auto& first_terminal(const WhereExpr<R, C, A, B>& e) {
  if constexpr (terminal_count<C>::value > 0)
    return first_terminal(e.c);
  else if constexpr (terminal_count<A>::value > 0)
    return first_terminal(e.a);
  else
    return first_terminal(e.b);
}

/// A user's element function applied to each element (count_if, any_of and all_of with a
/// predicate): f is a device-callable functor (a KOKKOS_LAMBDA) of one value.
template <class F, class A>
struct MapExpr {
  using spmd_expression = void;
  using value_type = std::decay_t<decltype(std::declval<const F&>()(std::declval<typename A::value_type>()))>;
  using memory_space = typename A::memory_space;
  static constexpr int rank = A::rank;
  F f;
  A a;
  Index<rank> shape() const { return a.shape(); }
};
template <class F, class A, class Fn>
void visit_terminals(const MapExpr<F, A>& e, Fn& fn) {
  visit_terminals(e.a, fn);
}
template <class F, class A>
const auto& first_terminal(const MapExpr<F, A>& e) {
  return first_terminal(e.a);
}
template <class F, class A>
struct terminal_count<MapExpr<F, A>> : terminal_count<A> {};

/// A generator: the element at index i of its shape is f(i), f a device functor of
/// Kokkos::Array<index_t, N> (random numbers, index expressions, fromfunction). It has no array
/// operand and no memory space of its own: it is evaluated where it is assigned or reduced,
/// with the indices of the destination view (or of the reduction's first operand).
template <class F, class T, int N>
struct GenExpr : GeneratorBase {
  using spmd_expression = void;
  using value_type = T;
  using memory_space = AnySpace;
  static constexpr int rank = N;
  F f;
  Index<N> shape_;
  const Index<N>& shape() const { return shape_; }
};
template <class F, class T, int N, class Fn>
void visit_terminals(const GenExpr<F, T, N>&, Fn&) {}
template <class F, class T, int N>
struct terminal_count<GenExpr<F, T, N>> : std::integral_constant<std::size_t, 0> {};

/// Number of elements of an expression. Local.
template <class E>
index_t expr_size(const E& e) {
  index_t n = 1;
  for (int d = 0; d < E::rank; ++d) n *= e.shape()[d];
  return n;
}

}  // namespace spmd::impl
