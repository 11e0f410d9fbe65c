#pragma once
/// \file random.hpp
/// Reproducible random numbers: spmd::random::{uniform, normal, integers} fill an array (or a
/// slice), and Generator::{uniform, normal, integers} give the same values as a lazy expression
/// (`u = 1.0 + 0.1 * g.normal(u.shape());`, one fused kernel, no temporary).
///
/// The generator is counter-based (Philox4x32-10 from the Random123 library): the element at
/// row-major index i of the array (or of the slice, or of the expression's shape) is a pure
/// function of (seed, stream, i). Nothing is stored or advanced, so 1, 2, 3 or 4 ranks, any
/// process grid, any halo, and a CPU or a GPU build give bit-identical arrays; the value at a
/// given index can also be computed alone (value_at). The transforms use only operations IEEE
/// 754 fixes (integer arithmetic, exact scalings, fma, sqrt, and the library's own polynomial
/// log and cos instead of the math library's), so the normal numbers are bit-identical across
/// backends too. See docs/api/random.md.
///
///   spmd::random::Generator g{42};                  // seed 42, stream 0
///   spmd::random::uniform(a, g);                    // a[i] in [0, 1)
///   spmd::random::normal(b, g.stream(1), 0.0, 2.0); // another stream: independent of a
///   spmd::random::integers(c, g.stream(2), 0, 6);   // c[i] in {0, ..., 5}
///
/// One draw per (seed, stream): uniform, normal and integers of the same generator read the
/// same counters, so their values are not independent of each other; give each array its own
/// stream (Generator::stream).

#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "spmd/expr.hpp"
#include "spmd/impl/random_impl.hpp"

namespace spmd::random {

namespace detail {
template <int N, std::size_t R>
Kokkos::Array<index_t, N> strides(const std::array<index_t, R>& shape) {
  Kokkos::Array<index_t, N> s;
  index_t st = 1;
  for (int d = N - 1; d >= 0; --d) {
    s[d] = st;
    st *= shape[d];
  }
  return s;
}
template <std::size_t R>
Index<static_cast<int>(R)> to_index(const index_t (&shape)[R]) {
  Index<static_cast<int>(R)> s{};
  for (std::size_t d = 0; d < R; ++d) s[d] = shape[d];
  return s;
}
}  // namespace detail

/// The key of a draw: a 64-bit seed and a 64-bit stream number. A plain value (no state): the
/// same generator draws the same numbers every time, on every rank.
struct Generator {
  std::uint64_t seed = 0;       ///< the seed: the same seed draws the same numbers
  std::uint64_t stream_id = 0;  ///< the stream: another stream of one seed draws independent numbers

  /// The same seed with another stream: independent numbers for another array. Local.
  Generator stream(std::uint64_t s) const { return Generator{seed, s}; }

  /// A lazy expression of `shape` whose element at row-major index i is uniform in [low, high)
  /// (T floating). Use it inside expressions or assign it. Local (building it).
  template <class T = double, std::size_t R>
  auto uniform(const std::array<index_t, R>& shape, T low = T(0), T high = T(1)) const {
    constexpr int N = static_cast<int>(R);
    static_assert(std::is_floating_point_v<T>, "spmd::random::Generator::uniform: T must be floating-point");
    using D = impl::rng::Draw<impl::rng::Kind::uniform, T, N>;
    return impl::GenExpr<D, T, N>{{}, D{key(), detail::strides<N>(shape), low, T(high - low), 0}, shape};
  }
  /// Normal values with mean `mean` and standard deviation `stddev` (>= 0), lazily. Local.
  template <class T = double, std::size_t R>
  auto normal(const std::array<index_t, R>& shape, T mean = T(0), T stddev = T(1)) const {
    constexpr int N = static_cast<int>(R);
    static_assert(std::is_floating_point_v<T>, "spmd::random::Generator::normal: T must be floating-point");
    if (!(stddev >= T(0)))
      throw Error::replicated(impl::str("spmd::random::normal: stddev must be >= 0 (got ", stddev, ")"));
    using D = impl::rng::Draw<impl::rng::Kind::normal, T, N>;
    return impl::GenExpr<D, T, N>{{}, D{key(), detail::strides<N>(shape), mean, stddev, 0}, shape};
  }
  /// Integers in [low, high) (T integral; low < high), lazily. Local.
  template <class T = index_t, std::size_t R>
  auto integers(const std::array<index_t, R>& shape, T low, T high) const {
    constexpr int N = static_cast<int>(R);
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "spmd::random::Generator::integers: T must be an integer type");
    if (!(low < high))
      throw Error::replicated(
          impl::str("spmd::random::integers: needs low < high (got low = ", +low, ", high = ", +high, ")"));
    using D = impl::rng::Draw<impl::rng::Kind::integer, T, N>;
    const auto range = static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low);
    return impl::GenExpr<D, T, N>{{}, D{key(), detail::strides<N>(shape), low, T(0), range}, shape};
  }
  ///@{
  /// The same draws with a braced shape: `g.uniform({n, m})`, `g.normal({n})`,
  /// `g.integers<int>({n, m}, 0, 6)`. Local.
  template <class T = double, std::size_t R>
  auto uniform(const index_t (&shape)[R], T low = T(0), T high = T(1)) const {
    return uniform<T, R>(detail::to_index(shape), low, high);
  }
  template <class T = double, std::size_t R>
  auto normal(const index_t (&shape)[R], T mean = T(0), T stddev = T(1)) const {
    return normal<T, R>(detail::to_index(shape), mean, stddev);
  }
  template <class T = index_t, std::size_t R>
  auto integers(const index_t (&shape)[R], T low, T high) const {
    return integers<T, R>(detail::to_index(shape), low, high);
  }
  ///@}

  /// The Philox key words of this generator (impl/random_impl.hpp). Local.
  impl::rng::Key key() const { return impl::rng::make_key(seed, stream_id); }
};

/// The value a uniform draw of `g` has at row-major index i (what uniform(a, g, low, high) writes
/// there), computed alone: device-callable, e.g. inside a user's kernel. Local.
template <class T = double>
KOKKOS_INLINE_FUNCTION T uniform_at(const impl::rng::Key& key, index_t i, T low = T(0), T high = T(1)) {
  return impl::rng::uniform<T>(key, static_cast<std::uint64_t>(i), low, T(high - low));
}
/// The value of a normal draw at row-major index i. Local.
template <class T = double>
KOKKOS_INLINE_FUNCTION T normal_at(const impl::rng::Key& key, index_t i, T mean = T(0), T stddev = T(1)) {
  return impl::rng::normal<T>(key, static_cast<std::uint64_t>(i), mean, stddev);
}
/// The value of an integers draw in [low, high) at row-major index i. Local.
template <class T>
KOKKOS_INLINE_FUNCTION T integer_at(const impl::rng::Key& key, index_t i, T low, T high) {
  return impl::rng::integer<T>(key, static_cast<std::uint64_t>(i), low,
                               static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low));
}

namespace detail {
template <class E>
using if_exec = std::enable_if_t<Kokkos::is_execution_space<E>::value, int>;
template <class E>
using if_not_exec = std::enable_if_t<!Kokkos::is_execution_space<E>::value, int>;
}  // namespace detail

///@{
/// Fill `dst` (an Array, or a slice of one: indices are the slice's own) with uniform values in
/// [low, high) drawn by `g`, on `exec`. Writes owned points only (halos untouched, as any
/// assignment). Local (no communication; the arguments must be the same on every rank).
template <class Exec, class Dst, detail::if_exec<Exec> = 0>
void uniform(const Exec& exec, const Dst& dst, const Generator& g, typename Dst::value_type low = 0,
             typename Dst::value_type high = 1) {
  assign(exec, dst, g.uniform<typename Dst::value_type>(dst.shape(), low, high));
}
template <class Dst, detail::if_not_exec<Dst> = 0>
void uniform(const Dst& dst, const Generator& g, typename Dst::value_type low = 0, typename Dst::value_type high = 1) {
  uniform(typename Dst::execution_space(), dst, g, low, high);
}
///@}

///@{
/// Fill `dst` with normal values (mean, stddev >= 0) drawn by `g`, on `exec` (Box-Muller, see
/// the file comment). Local; a negative stddev is an spmd::Error on every rank.
template <class Exec, class Dst, detail::if_exec<Exec> = 0>
void normal(const Exec& exec, const Dst& dst, const Generator& g, typename Dst::value_type mean = 0,
            typename Dst::value_type stddev = 1) {
  assign(exec, dst, g.normal<typename Dst::value_type>(dst.shape(), mean, stddev));
}
template <class Dst, detail::if_not_exec<Dst> = 0>
void normal(const Dst& dst, const Generator& g, typename Dst::value_type mean = 0,
            typename Dst::value_type stddev = 1) {
  normal(typename Dst::execution_space(), dst, g, mean, stddev);
}
///@}

///@{
/// Fill `dst` (integral elements) with integers in [low, high) drawn by `g`, on `exec`. Local;
/// low >= high is an spmd::Error on every rank.
template <class Exec, class Dst, detail::if_exec<Exec> = 0>
void integers(const Exec& exec, const Dst& dst, const Generator& g, typename Dst::value_type low,
              typename Dst::value_type high) {
  assign(exec, dst, g.integers<typename Dst::value_type>(dst.shape(), low, high));
}
template <class Dst, detail::if_not_exec<Dst> = 0>
void integers(const Dst& dst, const Generator& g, typename Dst::value_type low, typename Dst::value_type high) {
  integers(typename Dst::execution_space(), dst, g, low, high);
}
///@}

}  // namespace spmd::random
