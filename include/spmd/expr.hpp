#pragma once
/// \file expr.hpp
/// Lazy, fused array expressions with NumPy semantics over Arrays, slices (ArrayView) and
/// scalars:
///
///   center = 0.2 * (center + north + east + west + south);   // ONE kernel; NumPy's result
///   next(c) = where(u(c) > 0.0, sqrt(u(c)), 0.0);
///   double r = spmd::norm2(u(c) - v(c));                      // no temporary array (reduce.hpp)
///
/// Operators + - * / (unary -), comparisons < <= > >= == != (bool expressions), && || !, and
/// the functions abs, sqrt, exp, log, sin, cos, pow, minimum, maximum, where, `astype<U>`, and
/// real, imag, conj, angle (complex numbers: Kokkos::complex<float/double>) build an
/// expression tree (plain structs holding the operands' handles); nothing runs until the
/// expression is assigned (`view = expr`, `array = expr`, `a += expr`, spmd::assign) or reduced
/// (reduce.hpp). Shapes broadcast with NumPy's rules (aligned at the last axes; extents equal or
/// 1; `a - row`, `a - mean(a, axis(0), keepdims)`), and the right side of an assignment is
/// stretched to the destination's shape as NumPy's `dst[...] = e` does (`c(all) = row`,
/// `c = row * 2.0`; the destination is never broadcast); shapes that do not broadcast are a collective
/// spmd::Error naming them ("operands could not be broadcast together with shapes (4, 6) (5,)"). Element types follow
/// NumPy's rules for Python scalars (a scalar takes the array's type unless it is floating and the array integral); `/`
/// between integers divides as doubles. Complex operands follow np.result_type (complex64 with a
/// float64 array is complex128; a complex array keeps its type with any scalar; a real floating
/// array with a complex scalar becomes complex of its precision); ordering (< <= > >= minimum
/// maximum && ||) is not defined for them (a static_assert).
///
/// Evaluation (spmd::assign, collective over the destination's communicator; impl/expr_eval.hpp):
///   1. each rank computes the box J of destination indices whose parent elements it owns;
///   2. every array operand is classified from replicated data only (no communication, the
///      same verdict on every rank and at every rank count):
///        - direct: read in place (it reads the destination's layout at the same positions, or
///          shifted by at most the halo width: a halo read, which sees what the halo holds,
///          so exchange halos first; along a periodic axis the shift counts modulo the axis
///          length, so u[1:-1, 0] read for u[1:-1, -1] is a shift by +1: the periodic halo);
///        - moved: anything else (other process grid, other shape, permuted or strided
///          differently, shifted beyond the halo along an axis without a halo, another plane
///          of a dropped axis) is copied by an impl::RegionPlan into a temporary laid out like
///          the destination, then read in place. Plans and temporaries are cached in the
///          destination array (at most 16 per array, least recently used dropped), so a loop
///          that repeats an assignment builds and allocates nothing after its first pass;
///        - broadcast: an operand of another shape (fewer axes, or extent 1 where the expression
///          is longer): an impl::BroadcastPlan (cached like the moves) brings this rank exactly
///          the part of it that J reads (index 0 along its extent-1 axes, J's range along the
///          others) into a compact buffer, which the kernel reads with address step 0 along the
///          broadcast axes;
///        - error: a shift along a kept axis wider than a nonzero halo there (the halo was
///          meant for this read and is too narrow) is a collective spmd::Error;
///   3. if the destination's storage is also read at other positions (a stencil update in
///      place), NumPy's as-if-into-a-temporary result needs the old values: host spaces
///      evaluate a few rows behind (a ring of rows per thread), devices into a buffer (cached,
///      grown once) that is then copied back. Otherwise the kernel writes the destination directly;
///   4. one kernel over J (the kernel layer, impl/kernels.hpp) evaluates the whole tree per
///      point. Each operand's address is base + sum_d coef[d] * j[d], precomputed on the host;
///      when every operand and the destination have unit stride along the last axis, the host
///      kernel's inner loop is contiguous (it vectorises) and on a GPU consecutive threads read
///      consecutive elements.
/// Only owned points of the destination's parent inside the selection are written, never its
/// halo (boundary values kept there persist). Work runs on the execution space instance given
/// first (spmd::assign(exec, dst, src)), else on a default instance of the arrays' space.

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "spmd/array.hpp"
#include "spmd/impl/expr_eval.hpp"
#include "spmd/slice.hpp"

namespace spmd {

namespace impl {
/// The message of assigning complex values to a real array (a static_assert's: a literal).
#define SPMD_COMPLEX_TO_REAL                                                                   \
  "spmd::assign: a complex value cannot be assigned to a real array (NumPy would discard the " \
  "imaginary part): assign real(z), imag(z) or abs(z)"
/// spmd::assign's one body; `label` names the kernel (nullptr: the default names). Collective.
template <class Exec, class Dst, class Src>
void assign_labelled(const Exec& exec, const Dst& dst, const Src& src, const char* label) {
  constexpr const char* fn = "spmd::assign";
  if constexpr (is_array<Dst>::value) {
    assign_labelled(exec, spmd::view_of(dst), src, label);
  } else {
    static_assert(is_view<Dst>::value, "spmd::assign: the destination is an Array or an ArrayView");
    static_assert(std::is_same_v<Exec, typename Dst::execution_space>,
                  "spmd::assign: the execution space instance must be of the destination's execution space");
    using T = typename Dst::value_type;
    ExprState<T, typename Dst::memory_space>* own = nullptr;  // the destination's cache
    if constexpr (is_scalar_v<Src>) {
      static_assert(is_complex_v<T> || !is_complex_v<Src>, SPMD_COMPLEX_TO_REAL);
      assign_expr(exec, dst, ScalarExpr<T>{static_cast<T>(src)}, fn, own, label);
    } else {
      static_assert(is_operand_v<Src>, "spmd::assign: the source is a scalar, an Array, a view or an expression");
      static_assert(is_complex_v<T> || !is_complex_v<value_of<Src>>, SPMD_COMPLEX_TO_REAL);
      assign_expr(exec, dst, as_node(src), fn, own, label);
    }
  }
}
}  // namespace impl

///@{
/// dst = src with NumPy semantics, on `exec`: dst is an Array (all of it) or an ArrayView; src a
/// scalar, an Array, an ArrayView or an expression of dst's shape. Writes only dst's owned points
/// (halos untouched). Collective over dst's communicator (see the file comment for what moves).
/// The kernel is named `spmd::expr::assign` for profilers; pass `spmd::label("app::update")` last
/// to give it the statement's own name (`a = e`, `a += e` named: `spmd::assign(a, e, l)`,
/// `spmd::assign(a, a + e, l)`; see docs/profiling.md).
template <class Exec, class Dst, class Src, std::enable_if_t<Kokkos::is_execution_space<Exec>::value, int> = 0>
void assign(const Exec& exec, const Dst& dst, const Src& src) {
  impl::assign_labelled(exec, dst, src, nullptr);
}
template <class Exec, class Dst, class Src, std::enable_if_t<Kokkos::is_execution_space<Exec>::value, int> = 0>
void assign(const Exec& exec, const Dst& dst, const Src& src, const Label& label) {
  impl::assign_labelled(exec, dst, src, label.name.c_str());
}
template <class Dst, class Src, std::enable_if_t<!Kokkos::is_execution_space<Dst>::value, int> = 0>
void assign(const Dst& dst, const Src& src) {
  impl::assign_labelled(typename Dst::execution_space(), dst, src, nullptr);
}
template <class Dst, class Src, std::enable_if_t<!Kokkos::is_execution_space<Dst>::value, int> = 0>
void assign(const Dst& dst, const Src& src, const Label& label) {
  impl::assign_labelled(typename Dst::execution_space(), dst, src, label.name.c_str());
}
///@}

// ---- operators ------------------------------------------------------------------------------------

/// Element-wise a + b of arrays, views, expressions and scalars: a lazy expression (nothing runs
/// until it is assigned or reduced). Local. The other arithmetic operators and the comparisons
/// below build expressions alike.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator+(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::add>(a, b);
}
/// Element-wise a - b (a lazy expression). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator-(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::sub>(a, b);
}
/// Element-wise a * b (a lazy expression). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator*(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::mul>(a, b);
}
/// True division (integers divide as doubles, as NumPy's `/`).
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator/(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::div>(a, b);
}
/// Element-wise a < b (a bool expression). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator<(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::lt>(a, b);
}
/// Element-wise a <= b (a bool expression). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator<=(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::le>(a, b);
}
/// Element-wise a > b (a bool expression). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator>(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::gt>(a, b);
}
/// Element-wise a >= b (a bool expression). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator>=(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::ge>(a, b);
}
/// Element-wise equality (a bool expression), as NumPy's `==`.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator==(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::eq>(a, b);
}
/// Element-wise inequality (a bool expression), as NumPy's `!=`. Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator!=(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::ne>(a, b);
}
/// Element-wise logical and (NumPy's logical_and). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator&&(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::land>(a, b);
}
/// Element-wise logical or (NumPy's logical_or). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto operator||(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::lor>(a, b);
}
/// Element-wise logical not (NumPy's logical_not). Local.
template <class A, impl::if_operand<A> = 0>
auto operator!(const A& a) {
  return impl::make_unary<impl::UnOp::lnot, bool>(a);
}
/// Element-wise negation (bool operands become int, as in NumPy). Local.
template <class A, impl::if_operand<A> = 0>
auto operator-(const A& a) {
  using V = impl::value_of<A>;
  return impl::make_unary<impl::UnOp::neg, std::conditional_t<std::is_same_v<V, bool>, int, V>>(a);
}

// ---- functions --------------------------------------------------------------------------------------

/// Element-wise |a| (NumPy's abs; bool operands become int; the modulus, a real value, for
/// complex operands: hypot(re, im)). Local.
template <class A, impl::if_operand<A> = 0>
auto abs(const A& a) {
  using V = impl::value_of<A>;
  return impl::make_unary<impl::UnOp::abs, std::conditional_t<std::is_same_v<V, bool>, int, V>>(a);
}
/// Element-wise real part (NumPy's real: real for a complex operand, the operand itself for a real
/// one). Local.
template <class A, impl::if_operand<A> = 0>
auto real(const A& a) {
  return impl::make_unary<impl::UnOp::real, impl::value_of<A>>(a);
}
/// Element-wise imaginary part (NumPy's imag: real for a complex operand, zeros of the operand's
/// type for a real one). Local.
template <class A, impl::if_operand<A> = 0>
auto imag(const A& a) {
  return impl::make_unary<impl::UnOp::imag, impl::value_of<A>>(a);
}
/// Element-wise complex conjugate (NumPy's conj; a real operand is unchanged). Local.
template <class A, impl::if_operand<A> = 0>
auto conj(const A& a) {
  return impl::make_unary<impl::UnOp::conj, impl::value_of<A>>(a);
}
/// Element-wise argument atan2(imag, real) in radians, in (-pi, pi] (NumPy's angle; real: the
/// operand's real type, double for integers; 0 or pi for a real operand). Local.
template <class A, impl::if_operand<A> = 0>
auto angle(const A& a) {
  return impl::make_unary<impl::UnOp::angle, impl::floating_t<impl::value_of<A>>>(a);
}
/// Element-wise square root (integers are converted to double, as NumPy's sqrt). Local.
template <class A, impl::if_operand<A> = 0>
auto sqrt(const A& a) {
  return impl::make_unary<impl::UnOp::sqrt, impl::floating_t<impl::value_of<A>>>(a);
}
/// Element-wise e^a (integers as double). Local.
template <class A, impl::if_operand<A> = 0>
auto exp(const A& a) {
  return impl::make_unary<impl::UnOp::exp, impl::floating_t<impl::value_of<A>>>(a);
}
/// Element-wise natural logarithm (integers as double). Local.
template <class A, impl::if_operand<A> = 0>
auto log(const A& a) {
  return impl::make_unary<impl::UnOp::log, impl::floating_t<impl::value_of<A>>>(a);
}
/// Element-wise sine (integers as double). Local.
template <class A, impl::if_operand<A> = 0>
auto sin(const A& a) {
  return impl::make_unary<impl::UnOp::sin, impl::floating_t<impl::value_of<A>>>(a);
}
/// Element-wise cosine (integers as double). Local.
template <class A, impl::if_operand<A> = 0>
auto cos(const A& a) {
  return impl::make_unary<impl::UnOp::cos, impl::floating_t<impl::value_of<A>>>(a);
}
/// The elements converted to U (NumPy's astype, lazily; real to complex, not complex to real:
/// take real(z)).
template <class U, class A, impl::if_operand<A> = 0>
auto astype(const A& a) {
  static_assert(impl::is_complex_v<U> || !impl::is_complex_v<impl::value_of<A>>,
                "spmd::astype: a complex operand converts to a complex type only (take real(z), imag(z) or abs(z))");
  return impl::make_unary<impl::UnOp::cast, U>(a);
}
/// Element-wise a ** b (NumPy's power). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto pow(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::pow>(a, b);
}
/// Element-wise minimum (NumPy's minimum; not the reduction min), bit for bit as NumPy: a NaN in
/// either operand gives that NaN (a's when both are), a tie gives b (minimum(0.0, -0.0) is
/// -0.0). There is no fmin / fmax (NaN-ignoring). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto minimum(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::minimum>(a, b);
}
/// Element-wise maximum (NumPy's maximum; not the reduction max): NaN and ties as minimum
/// (maximum(-0.0, 0.0) is 0.0, maximum(0.0, -0.0) is -0.0). Local.
template <class A, class B, impl::if_binary<A, B> = 0>
auto maximum(const A& a, const B& b) {
  return impl::make_binary<impl::BinOp::maximum>(a, b);
}
/// cond ? a : b element-wise (NumPy's where); a and b may be scalars.
template <class C, class A, class B,
          std::enable_if_t<impl::is_operand_v<C> && (impl::is_operand_v<A> || impl::is_scalar_v<A>)&&(
                                                        impl::is_operand_v<B> || impl::is_scalar_v<B>),
                           int> = 0>
auto where(const C& cond, const A& a, const B& b) {
  using NC = impl::node_t<C>;
  using NA = impl::node_t<A>;
  using NB = impl::node_t<B>;
  using R = typename impl::promote<NA, NB>::type;
  const NC c = impl::as_node(cond);
  const NA x = impl::as_node(a);
  const NB y = impl::as_node(b);
  constexpr int rank = impl::WhereExpr<R, NC, NA, NB>::rank;
  return impl::WhereExpr<R, NC, NA, NB>{c, x, y, impl::broadcast_shape<rank>("where", c, x, y)};
}

template <class T, int N, class M>
template <class E, class>
Array<T, N, M>::Array(const E& e) {
  static_assert(E::rank == N, "spmd::Array(expression): the expression has another number of axes than the array");
  if constexpr (impl::terminal_count<E>::value == 0) {
    throw Error::replicated(impl::str("spmd::Array(expression): the expression of shape ", impl::shape_str(e.shape()),
                                      " has no array operand to take a communicator from (a generator alone): make the "
                                      "array first (spmd::empty), then assign"));
  } else {
    const auto& anchor = impl::first_terminal(e);
    // The layout below is chosen from this rank's expression: agree first that every rank has
    // one of the same shape (else some would build a new distribution, a collective, and others
    // not).
    impl::agree_shape(anchor.comm(), "spmd::Array(expression)", e.shape());
    Distribution<N> d;
    if constexpr (std::decay_t<decltype(anchor.parent())>::rank == N) {
      const auto& p = anchor.parent();
      if (p.shape() == e.shape() && impl::same_selection(anchor.selection(), impl::Selection<N, N>::identity()))
        d = p.distribution();
    }
    if (d.is_null()) d = Distribution<N>(anchor.comm(), e.shape());
    bool halo = false;
    for (int a = 0; a < N; ++a) halo = halo || d.halo()[a] > 0;
    *this = Array(d, Label{"spmd::Array"}, halo ? Init::zero : Init::none);
    assign(*this, e);
  }
}

/// A new Array holding the elements of a view or expression, on an automatic distribution of
/// its shape over the first operand's communicator (options: halo, periodic, grid, label).
/// Collective.
template <class E, class... Opts, std::enable_if_t<impl::is_expression_v<E> && impl::are_options_v<Opts...>, int> = 0>
auto copy(const E& e, const Opts&... opts) {
  return impl::copy_expr(e, opts...);
}

}  // namespace spmd
