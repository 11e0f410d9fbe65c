#pragma once
/// \file math.hpp
/// spmd::math: device-callable math functions under one name across Kokkos versions (Kokkos
/// 3.x keeps them in Kokkos::Experimental, Kokkos 4 in Kokkos). Local.

#include <Kokkos_Core.hpp>

namespace spmd::math {
#if KOKKOS_VERSION >= 30700
using Kokkos::abs;
using Kokkos::atan2;
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::log;
using Kokkos::pow;
using Kokkos::sin;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::atan2;
using Kokkos::Experimental::cos;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::log;
using Kokkos::Experimental::pow;
using Kokkos::Experimental::sin;
using Kokkos::Experimental::sqrt;
// The Kokkos::complex overloads (Kokkos 3.4 keeps them in Kokkos, the real ones above in
// Kokkos::Experimental).
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::log;
using Kokkos::pow;
using Kokkos::sin;
using Kokkos::sqrt;
/// |x| (Kokkos 3.4 has no device abs for every type). Device-callable.
template <class T>
KOKKOS_INLINE_FUNCTION T abs(T x) {
  return x < T(0) ? -x : x;
}
#endif
}  // namespace spmd::math
