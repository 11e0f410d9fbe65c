#pragma once
// Complex element types (Kokkos::complex<float>, Kokkos::complex<double>): the traits the
// expression, reduction and I/O layers ask (is it complex, its real type), NumPy's type
// promotion with complex operands, and the device functions real, imag, conj, abs, angle on
// complex and real values alike. Kokkos::complex works in device code; std::complex does not,
// so nothing here uses it.

#include <Kokkos_Complex.hpp>

#include <type_traits>

namespace spmd::impl {

/// True for Kokkos::complex<R>.
template <class T>
struct is_complex : std::false_type {};
template <class R>
struct is_complex<Kokkos::complex<R>> : std::true_type {};
template <class T>
inline constexpr bool is_complex_v = is_complex<std::remove_cv_t<T>>::value;

/// The real type of T: R for Kokkos::complex<R>, T itself otherwise.
template <class T>
struct real_part {
  using type = T;
};
template <class R>
struct real_part<Kokkos::complex<R>> {
  using type = R;
};
template <class T>
using real_part_t = typename real_part<std::remove_cv_t<T>>::type;

/// The floating type that holds the real type of T exactly as NumPy chooses it when T meets a
/// complex number: floating types stay, bool and 8/16-bit integers become float, wider integers
/// double (np.result_type(np.int32, np.complex64) is complex128).
template <class T>
using complex_real_t = std::conditional_t<std::is_floating_point_v<real_part_t<T>>, real_part_t<T>,
                                          std::conditional_t<(sizeof(real_part_t<T>) <= 2), float, double>>;

/// The common type of two element types, NumPy's np.result_type for arrays: complex when
/// either is (complex64 with float64 is complex128), else what C++ arithmetic gives.
template <class A, class B, bool = is_complex_v<A> || is_complex_v<B>>
struct common_value {
  using type = decltype(A() + B());
};
template <class A, class B>
struct common_value<A, B, true> {
  using type = Kokkos::complex<decltype(complex_real_t<A>() + complex_real_t<B>())>;
};
template <class A, class B>
using common_value_t = typename common_value<A, B>::type;

/// Element-wise functions of complex and real values (NumPy's real, imag, conj, abs, angle):
/// on a real x, real(x) is x, imag(x) 0, conj(x) x and angle(x) 0 or pi. Device-callable.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION real_part_t<T> real_of(const T& x) {
  if constexpr (is_complex_v<T>)
    return x.real();
  else
    return x;
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION real_part_t<T> imag_of(const T& x) {
  if constexpr (is_complex_v<T>)
    return x.imag();
  else
    return real_part_t<T>(0);
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T conj_of(const T& x) {
  if constexpr (is_complex_v<T>)
    return T(x.real(), -x.imag());
  else
    return x;
}
/// |x|^2 in the real type (re^2 + im^2 for complex). Device-callable.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION real_part_t<T> abs2_of(const T& x) {
  if constexpr (is_complex_v<T>)
    return x.real() * x.real() + x.imag() * x.imag();
  else
    return x * x;
}

}  // namespace spmd::impl
