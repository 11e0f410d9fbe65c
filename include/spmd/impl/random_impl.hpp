#pragma once
// Random numbers, element functions: Philox4x32-10 (Random123's philox4x32_R, a counter-based
// generator: the output is a pure function of a 128-bit counter and a 64-bit key) and the
// transforms to uniform, normal and integer values. Every function here is device-callable and
// uses only operations whose result IEEE 754 fixes (integer arithmetic, exact conversions and
// scalings, +, -, *, /, sqrt, and fma written out), so a CPU and a GPU give the same bits:
// - no libm calls: log and cos are evaluated here by fixed polynomials (each a few ulp from
//   the correctly rounded value), because the host's libm and CUDA's libdevice round them
//   differently;
// - every a * b + c is an explicit fma: a compiler may fuse (or not) a written-out a * b + c
//   (nvcc does by default, GCC does when the target has FMA), which changes the last bit.
//
// Counter layout: (index low 32 bits, index high 32 bits, stream low, stream high); key: (seed
// low, seed high). One counter gives 4 x 32 random bits; element i of an array uses counter i.

#include <Kokkos_Core.hpp>

#include <Random123/philox.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "spmd/math.hpp"
#include "spmd/types.hpp"

namespace spmd::impl::rng {

/// The key and stream of a draw, as Philox words.
struct Key {
  std::uint32_t k0, k1;  // seed
  std::uint32_t s0, s1;  // stream
};
inline Key make_key(std::uint64_t seed, std::uint64_t stream) {
  return Key{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
             static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)};
}

/// The four 32-bit words of counter i. Local.
struct Words {
  std::uint32_t w[4];
};
KOKKOS_INLINE_FUNCTION Words philox(const Key& key, const std::uint64_t i) {
  philox4x32_ctr_t c = {{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), key.s0, key.s1}};
  philox4x32_key_t k = {{key.k0, key.k1}};
  const philox4x32_ctr_t r = philox4x32_R(10, c, k);
  return Words{{r.v[0], r.v[1], r.v[2], r.v[3]}};
}

KOKKOS_INLINE_FUNCTION std::uint64_t join64(const std::uint32_t lo, const std::uint32_t hi) {
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

/// Correctly rounded a * b + c, the same on every backend.
KOKKOS_INLINE_FUNCTION double fused(const double a, const double b, const double c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return ::fma(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
KOKKOS_INLINE_FUNCTION float fused(const float a, const float b, const float c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return ::fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// k * 2^-53 for the top 53 bits k of r: a double in [0, 1) (exact).
KOKKOS_INLINE_FUNCTION double unit53(const std::uint64_t r) {
  return static_cast<double>(r >> 11) * 0x1.0p-53;
}

/// c[0] x^(K-1) + ... + c[K-1] by Horner's rule with fma (the same bits everywhere).
template <int K>
KOKKOS_INLINE_FUNCTION double horner(const double (&c)[K], const double x) {
  double p = c[0];
  for (int j = 1; j < K; ++j) p = fused(p, x, c[j]);
  return p;
}

/// log(q * 2^-53) for an integer q in [1, 2^53]: q = m 2^e with m in [sqrt(1/2), sqrt(2)),
/// log m = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172, by its series to t^25 (truncation
/// below 1e-20 relative). Within 3 ulp of the correctly rounded value; the same bits everywhere.
KOKKOS_INLINE_FUNCTION double log_q53(const std::uint64_t q) {
  int e = 0;
  for (int s = 32; s > 0; s >>= 1)  // e = floor(log2 q), by halving steps
    if ((q >> (e + s)) != 0) e += s;
  double m = static_cast<double>(q) / static_cast<double>(std::uint64_t(1) << e);  // exact, in [1, 2)
  if (m > 0x1.6a09e667f3bcdp+0) {                                                  // sqrt(2)
    m *= 0.5;
    ++e;
  }
  const double t = (m - 1.0) / (m + 1.0);  // m - 1 is exact (Sterbenz)
  // 1/25, 1/23, ..., 1/3, 1: atanh(t) / t in powers of t^2
  const double c[] = {0x1.47ae147ae147bp-5,
                      0x1.642c8590b2164p-5,
                      0x1.8618618618618p-5,
                      0x1.af286bca1af28p-5,
                      0x1.e1e1e1e1e1e1ep-5,
                      0x1.1111111111111p-4,
                      0x1.3b13b13b13b14p-4,
                      0x1.745d1745d1746p-4,
                      0x1.c71c71c71c71cp-4,
                      0x1.2492492492492p-3,
                      0x1.999999999999ap-3,
                      0x1.5555555555555p-2,
                      1.0};
  const double log_m = (2.0 * t) * horner(c, t * t);
  return fused(static_cast<double>(e - 53), 0x1.62e42fefa39efp-1, log_m);  // + (e - 53) ln 2
}

/// cos(2 pi k 2^-53) for an integer k in [0, 2^53): 2 pi x = q pi/2 + a with q the nearest
/// quarter turn (integer arithmetic, exact) and |a| <= pi/4; cos a and sin a by their Taylor
/// series to a^18 and a^19 (truncation below 3e-18), in powers of -a^2. Within 1e-15 of cos;
/// the same bits everywhere.
KOKKOS_INLINE_FUNCTION double cos_turn53(const std::uint64_t k) {
  const std::uint64_t q = (k + (std::uint64_t(1) << 50)) >> 51;  // nearest quarter turn, 0..4
  const std::int64_t r = static_cast<std::int64_t>(k) - static_cast<std::int64_t>(q << 51);
  const double a = static_cast<double>(r) * 0x1.0p-51 * 0x1.921fb54442d18p+0;  // r/2^51 exact, * pi/2
  const double x = -(a * a);
  if ((q & 1) == 0) {  // 1/18!, 1/16!, ..., 1/2!, 1
    const double c[] = {0x1.6827863b97d97p-53, 0x1.ae7f3e733b81fp-45,
                        0x1.93974a8c07c9dp-37, 0x1.1eed8eff8d898p-29,
                        0x1.27e4fb7789f5cp-22, 0x1.a01a01a01a01ap-16,
                        0x1.6c16c16c16c17p-10, 0x1.5555555555555p-5,
                        0x1.0000000000000p-1,  1.0};
    const double cos_a = horner(c, x);
    return (q & 2) ? -cos_a : cos_a;  // q = 0, 4: cos a; q = 2: -cos a
  }
  // 1/19!, 1/17!, ..., 1/3!, 1
  const double c[] = {
      0x1.2f49b46814157p-57, 0x1.952c77030ad4ap-49, 0x1.ae7f3e733b81fp-41, 0x1.6124613a86d09p-33, 0x1.ae64567f544e4p-26,
      0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-13, 0x1.1111111111111p-7,  0x1.5555555555555p-3,  1.0};
  const double sin_a = a * horner(c, x);
  return (q & 2) ? sin_a : -sin_a;  // q = 1: cos(pi/2 + a) = -sin a; q = 3: sin a
}

/// A uniform value in [low, high) from counter i: low + (high - low) u, u = k 2^-53 (double; 53
/// random bits) or k 2^-24 (float; 24 bits), one fma. Local.
template <class T>
KOKKOS_INLINE_FUNCTION T uniform(const Key& key, const std::uint64_t i, const T low, const T width) {
  static_assert(std::is_floating_point_v<T>, "spmd::random::uniform: needs a floating-point type");
  const Words w = philox(key, i);
  if constexpr (std::is_same_v<T, float>) {
    const float u = static_cast<float>(w.w[0] >> 8) * 0x1.0p-24f;
    return fused(width, u, low);
  } else {
    const double u = unit53(join64(w.w[0], w.w[1]));
    return static_cast<T>(fused(static_cast<double>(width), u, static_cast<double>(low)));
  }
}

/// A standard normal value from counter i by Box-Muller: u1 = (k1 + 1) 2^-53 in (0, 1] from
/// words 0-1, u2 = k2 2^-53 in [0, 1) from words 2-3, z = sqrt(-2 log u1) cos(2 pi u2); then
/// mean + stddev z (one fma). The sine branch of the pair is not used. Local.
template <class T>
KOKKOS_INLINE_FUNCTION T normal(const Key& key, const std::uint64_t i, const T mean, const T stddev) {
  static_assert(std::is_floating_point_v<T>, "spmd::random::normal: needs a floating-point type");
  const Words w = philox(key, i);
  const std::uint64_t q1 = (join64(w.w[0], w.w[1]) >> 11) + 1;
  const std::uint64_t k2 = join64(w.w[2], w.w[3]) >> 11;
  const double z = math::sqrt(-2.0 * log_q53(q1)) * cos_turn53(k2);
  return static_cast<T>(fused(static_cast<double>(stddev), z, static_cast<double>(mean)));
}

/// An integer in [low, low + range) from counter i: low + (r mod range), r the 64 bits of words
/// 0-1 (range >= 1; the bias is below range / 2^64). Local.
template <class T>
KOKKOS_INLINE_FUNCTION T integer(const Key& key, const std::uint64_t i, const T low, const std::uint64_t range) {
  static_assert(std::is_integral_v<T>, "spmd::random::integers: needs an integral type");
  const Words w = philox(key, i);
  const std::uint64_t r = join64(w.w[0], w.w[1]) % range;
  return static_cast<T>(static_cast<std::uint64_t>(low) + r);
}

/// Row-major linear index of g over a shape with strides `stride`.
template <int N>
KOKKOS_INLINE_FUNCTION std::uint64_t linear(const Kokkos::Array<index_t, N>& g,
                                            const Kokkos::Array<index_t, N>& stride) {
  index_t i = 0;
  for (int d = 0; d < N; ++d) i += g[d] * stride[d];
  return static_cast<std::uint64_t>(i);
}

enum class Kind { uniform, normal, integer };

/// The generator functor of a lazy random expression (impl::GenExpr): element g of the shape is
/// the value of counter linear(g).
template <Kind K, class T, int N>
struct Draw {
  Key key;
  Kokkos::Array<index_t, N> stride;
  T a;              // low or mean
  T b;              // width or stddev (uniform, normal)
  std::uint64_t n;  // range (integer)
  KOKKOS_INLINE_FUNCTION T operator()(const Kokkos::Array<index_t, N>& g) const {
    const std::uint64_t i = linear<N>(g, stride);
    if constexpr (K == Kind::uniform)
      return uniform<T>(key, i, a, b);
    else if constexpr (K == Kind::normal)
      return normal<T>(key, i, a, b);
    else
      return integer<T>(key, i, a, n);
  }
};

}  // namespace spmd::impl::rng
