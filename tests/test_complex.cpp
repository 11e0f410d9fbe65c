// Complex arrays (spmd::Array<Kokkos::complex<double or float>, N>): creation, slices with steps,
// halo exchange, gather / scatter, redistribution, fused expressions with NumPy's promotion,
// the complex functions and the reductions, each against a serial reference computed here with
// std::complex. Shapes are odd (7 x 5, 11) so that 3 ranks get uneven blocks:
//
//   7 x 5 on 3 ranks (grid 3 x 1): rows 0..2 | 3..4 | 5..6 on ranks 0 | 1 | 2
//   on 4 ranks (grid 2 x 2):       rows 0..3 | 4..6, columns 0..2 | 3..4
#include "spmd_test.hpp"

#include <spmd/config.hpp>
#if SPMD_HAVE_HDF5
#include <spmd/io/checkpoint.hpp>
#endif

#include <cmath>
#include <complex>
#include <filesystem>
#include <limits>
#include <tuple>
#include <algorithm>
#include <type_traits>
#include <vector>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::slice;
using spmd::testing::world;

namespace {

using Z = Kokkos::complex<double>;
using ZF = Kokkos::complex<float>;
using Ref = std::complex<double>;

/// The serial reference's value at (i, j): exact in binary (halves and quarters), nonzero.
Ref ref_value(index_t i, index_t j) {
  return Ref(static_cast<double>(i) + 0.5 * static_cast<double>(j) + 0.25,
             static_cast<double>(j) - 0.25 * static_cast<double>(i) - 1.0);
}
/// The same value built on the device (a functor: fromfunction's f).
template <class C>
struct Pattern {
  KOKKOS_INLINE_FUNCTION C operator()(index_t i, index_t j) const {
    using R = typename C::value_type;
    return C(static_cast<R>(static_cast<double>(i) + 0.5 * static_cast<double>(j) + 0.25),
             static_cast<R>(static_cast<double>(j) - 0.25 * static_cast<double>(i) - 1.0));
  }
};

template <class C>
Ref to_ref(const C& z) {
  return Ref(static_cast<double>(z.real()), static_cast<double>(z.imag()));
}

/// Every element of `got` (a gathered array) equals ref(index) within tol (relative to |ref| + 1).
template <class C, class Shape, class F>
void expect_near(const std::vector<C>& got, const Shape& shape, F&& ref, double tol, const char* what) {
  constexpr int N = static_cast<int>(std::tuple_size<Shape>::value);
  const auto want = spmd::testing::host_array<N, Ref>(shape, ref);
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t k = 0; k < want.size() && bad < 5; ++k) {
    const Ref g = to_ref(got[k]);
    if (std::abs(g - want[k]) > tol * (std::abs(want[k]) + 1.0)) {
      ADD_FAILURE() << what << " at flat index " << k << ": got " << g << ", want " << want[k];
      ++bad;
    }
  }
}

void expect_near(const Ref& got, const Ref& want, double tol, const char* what) {
  EXPECT_LE(std::abs(got - want), tol * (std::abs(want) + 1.0)) << what << ": got " << got << ", want " << want;
}

/// A 2-D complex array of shape n x m holding the pattern (halo h).
template <class C>
Array<C, 2> pattern_array(index_t n, index_t m, int h = 0) {
  return spmd::fromfunction<C>(world(), {n, m}, Pattern<C>{}, spmd::halo(h));
}

// ---- compile-time rules: promotion and the element types of the functions -----------------------

template <class A, class B>
using sum_of = typename decltype(std::declval<const A&>() + std::declval<const B&>())::value_type;
static_assert(std::is_same_v<sum_of<Array<Z, 2>, Array<Z, 2>>, Z>);
static_assert(std::is_same_v<sum_of<Array<ZF, 2>, Array<double, 2>>, Z>, "complex64 + float64 is complex128");
static_assert(std::is_same_v<sum_of<Array<ZF, 2>, Array<float, 2>>, ZF>);
static_assert(std::is_same_v<sum_of<Array<ZF, 2>, Array<Z, 2>>, Z>);
static_assert(std::is_same_v<sum_of<Array<ZF, 2>, Array<int, 2>>, Z>, "complex64 + int32 is complex128");
static_assert(std::is_same_v<sum_of<Array<ZF, 2>, double>, ZF>, "a Python float scalar keeps complex64");
static_assert(std::is_same_v<sum_of<Array<ZF, 2>, Z>, ZF>, "a Python complex scalar keeps complex64");
static_assert(std::is_same_v<sum_of<Array<float, 2>, Z>, ZF>, "float32 * 1j is complex64");
static_assert(std::is_same_v<sum_of<Array<double, 2>, ZF>, Z>);
static_assert(std::is_same_v<sum_of<Array<int, 2>, Z>, Z>);
static_assert(std::is_same_v<sum_of<double, Array<ZF, 2>>, ZF>);
template <class E>
using value_t = typename E::value_type;
static_assert(std::is_same_v<value_t<decltype(spmd::abs(std::declval<Array<Z, 1>>()))>, double>);
static_assert(std::is_same_v<value_t<decltype(spmd::abs(std::declval<Array<ZF, 1>>()))>, float>);
static_assert(std::is_same_v<value_t<decltype(spmd::real(std::declval<Array<ZF, 1>>()))>, float>);
static_assert(std::is_same_v<value_t<decltype(spmd::imag(std::declval<Array<Z, 1>>()))>, double>);
static_assert(std::is_same_v<value_t<decltype(spmd::angle(std::declval<Array<Z, 1>>()))>, double>);
static_assert(std::is_same_v<value_t<decltype(spmd::conj(std::declval<Array<ZF, 1>>()))>, ZF>);
static_assert(std::is_same_v<value_t<decltype(spmd::sqrt(std::declval<Array<Z, 1>>()))>, Z>);
static_assert(std::is_same_v<value_t<decltype(spmd::exp(std::declval<Array<ZF, 1>>()))>, ZF>);
static_assert(std::is_same_v<value_t<decltype(spmd::real(std::declval<Array<int, 1>>()))>, int>);
static_assert(std::is_same_v<value_t<decltype(std::declval<Array<ZF, 1>>() / 2)>, ZF>);
static_assert(std::is_same_v<decltype(spmd::norm2(std::declval<Array<Z, 1>>())), double>);
static_assert(std::is_same_v<decltype(spmd::mean(std::declval<Array<ZF, 1>>())), ZF>);
static_assert(std::is_same_v<decltype(spmd::vdot(std::declval<Array<Z, 1>>(), std::declval<Array<Z, 1>>())), Z>);

// ---- creation, element access, copies ----------------------------------------------------------

void Creation() {
  const Z v(1.5, -2.0);
  auto z = spmd::zeros<Z>(world(), {7, 5});
  auto o = spmd::ones<ZF>(world(), {7, 5});
  auto f = spmd::full<Z>(world(), {7, 5}, v, spmd::halo(1));
  expect_near(
      spmd::allgather(z), Index<2>{7, 5}, [](const Index<2>&) { return Ref(0); }, 0, "zeros");
  expect_near(
      spmd::allgather(o), Index<2>{7, 5}, [](const Index<2>&) { return Ref(1); }, 0, "ones");
  expect_near(
      spmd::allgather(f), Index<2>{7, 5}, [&](const Index<2>&) { return to_ref(v); }, 0, "full");
  f.fill(Z(0, 3));
  expect_near(
      spmd::allgather(f), Index<2>{7, 5}, [](const Index<2>&) { return Ref(0, 3); }, 0, "fill");
  auto p = pattern_array<Z>(7, 5, 1);
  const auto ref = [](const Index<2>& g) { return ref_value(g[0], g[1]); };
  expect_near(spmd::allgather(p), Index<2>{7, 5}, ref, 0, "fromfunction");
  Array<Z, 2> q = p;  // a deep copy
  p.set({3, 4}, Z(-1, -1));
  EXPECT_EQ(to_ref(p.get(3, 4)), Ref(-1, -1));
  expect_near(spmd::allgather(q), Index<2>{7, 5}, ref, 0, "copy");
  q = Z(2, 0.5);  // a complex scalar
  expect_near(
      spmd::allgather(q), Index<2>{7, 5}, [](const Index<2>&) { return Ref(2, 0.5); }, 0, "q = scalar");
  q = 4.0;  // a real scalar into a complex array
  expect_near(
      spmd::allgather(q), Index<2>{7, 5}, [](const Index<2>&) { return Ref(4); }, 0, "q = real scalar");
  auto pf = pattern_array<ZF>(7, 5);
  expect_near(spmd::allgather(pf), Index<2>{7, 5}, ref, 0, "fromfunction<complex<float>>");
}

// ---- slices with steps, halo exchange, gather / scatter, redistribution ------------------------

void SlicesWithSteps() {
  const auto a = pattern_array<Z>(7, 5);
  auto s = spmd::copy(a(slice(1, 7, 2), slice(4, spmd::none, -2)));  // rows 1, 3, 5; columns 4, 2, 0
  ASSERT_EQ(s.shape(), (Index<2>{3, 3}));
  expect_near(
      spmd::allgather(s), Index<2>{3, 3}, [](const Index<2>& g) { return ref_value(1 + 2 * g[0], 4 - 2 * g[1]); }, 0,
      "a[1:7:2, 4::-2]");
  // Writing through a strided view of another array: b[::3, 1:4] = conj(a[2:5, ::2]).
  auto b = spmd::zeros<Z>(world(), {7, 5});
  b(slice(spmd::none, spmd::none, 3), slice(1, 4)) = spmd::conj(a(slice(2, 5), slice(spmd::none, spmd::none, 2)));
  expect_near(
      spmd::allgather(b), Index<2>{7, 5},
      [](const Index<2>& g) {
        if (g[0] % 3 != 0 || g[1] < 1 || g[1] >= 4) return Ref(0);
        return std::conj(ref_value(2 + g[0] / 3, 2 * (g[1] - 1)));
      },
      0, "b[::3, 1:4] = conj(a[2:5, ::2])");
}

void HaloExchange() {
  for (const bool periodic : {false, true}) {
    const Distribution<2> d = periodic ? Distribution<2>(world(), {7, 5}, spmd::halo(1), spmd::periodic())
                                       : Distribution<2>(world(), {7, 5}, spmd::halo(1));
    for (const auto backend : spmd::testing::backends()) {
      auto a = spmd::full<Z>(d, Z(-7, -7));
      a = spmd::fromfunction({7, 5}, Pattern<Z>{});
      spmd::HaloExchange<Z, 2> plan(d, spmd::Pattern::box, d.halo(), backend);
      plan.exchange(a);
      const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
      const auto storage = spmd::testing::storage_box(d);
      index_t k = 0;
      int bad = 0;
      spmd::for_each_index(storage, [&](const Index<2>& g) {
        Index<2> src = g;
        bool inside = true;
        for (int ax = 0; ax < 2; ++ax) {
          const index_t n = d.extent(ax);
          if (g[ax] < 0 || g[ax] >= n) {  // outside the shape: the periodic image, else untouched
            if (periodic)
              src[ax] = (g[ax] + n) % n;
            else
              inside = false;
          }
        }
        const Ref want = inside ? ref_value(src[0], src[1]) : Ref(-7, -7);
        const Ref got = to_ref(host.data()[k++]);
        if (got != want && bad++ < 3)
          ADD_FAILURE() << "rank " << world().rank() << " periodic " << periodic << " at " << spmd::impl::shape_str(g)
                        << ": got " << got << ", want " << want;
      });
    }
  }
}

void GatherScatterRedistribute() {
  const Index<2> shape{7, 5};
  std::vector<ZF> global;
  for (index_t i = 0; i < 7; ++i)
    for (index_t j = 0; j < 5; ++j) global.push_back(Pattern<ZF>{}(i, j));
  auto a = spmd::zeros<ZF>(world(), {7, 5}, spmd::halo(1));
  spmd::scatter(a, world().rank() == 0 ? global : std::vector<ZF>{}, 0);
  const auto ref = [](const Index<2>& g) { return ref_value(g[0], g[1]); };
  expect_near(spmd::allgather(a), shape, ref, 0, "scatter then allgather");
  const auto g = spmd::gather(a, world().size() - 1);
  if (world().rank() == world().size() - 1) {
    expect_near(g, shape, ref, 0, "gather");
  }
  // Redistribution onto the transposed process grid (1 x p: columns) with another halo.
  spmd::DistributionOptions o;
  o.dims = {1, world().size()};
  o.halo = {1};
  auto b = spmd::zeros<ZF>(Distribution<2>(world(), shape, o));
  spmd::redistribute(b, a);
  expect_near(spmd::allgather(b), shape, ref, 0, "redistribute");
}

// ---- expressions ----------------------------------------------------------------------------------

void Arithmetic() {
  const Index<2> shape{7, 5};
  const auto a = pattern_array<Z>(7, 5);
  const auto b = spmd::fromfunction(
      world(), {7, 5},
      KOKKOS_LAMBDA(index_t i, index_t j) {
        return Z(1.0 + static_cast<double>(j), 0.5 * static_cast<double>(i) - 1.0);
      },
      spmd::grid({1, world().size()}));  // another grid: moved operands
  const auto r = spmd::fromfunction<double>(
      world(), {7, 5}, KOKKOS_LAMBDA(index_t i, index_t j) { return 0.5 + static_cast<double>(i * 5 + j); });
  const auto bref = [](index_t i, index_t j) {
    return Ref(1.0 + static_cast<double>(j), 0.5 * static_cast<double>(i) - 1.0);
  };
  const auto rref = [](index_t i, index_t j) { return 0.5 + static_cast<double>(i * 5 + j); };
  const double tol = 1e-14;

  Array<Z, 2> c(a * b + spmd::conj(a) / (b + 1.0) - Z(0, 2) * r);
  expect_near(
      spmd::allgather(c), shape,
      [&](const Index<2>& g) {
        const Ref x = ref_value(g[0], g[1]), y = bref(g[0], g[1]);
        return x * y + std::conj(x) / (y + 1.0) - Ref(0, 2) * rref(g[0], g[1]);
      },
      tol, "a * b + conj(a) / (b + 1) - 2j * r");

  c = -a * a;  // in place over a copy of a's layout
  c += r;
  c /= 2;
  expect_near(
      spmd::allgather(c), shape,
      [&](const Index<2>& g) {
        const Ref x = ref_value(g[0], g[1]);
        return (-x * x + rref(g[0], g[1])) / 2.0;
      },
      tol, "c = -a * a; c += r; c /= 2");

  // complex<float> with a double array is complex<double>; with a double scalar complex<float>.
  const auto af = pattern_array<ZF>(7, 5);
  auto mixed = spmd::copy(af * r + 0.5);
  static_assert(std::is_same_v<decltype(mixed)::value_type, Z>);
  expect_near(
      spmd::allgather(mixed), shape, [&](const Index<2>& g) { return ref_value(g[0], g[1]) * rref(g[0], g[1]) + 0.5; },
      tol, "complex<float> * double array + 0.5");
  auto single = spmd::copy(af * 0.1 + Z(0, 1));
  static_assert(std::is_same_v<decltype(single)::value_type, ZF>);
  expect_near(
      spmd::allgather(single), shape, [&](const Index<2>& g) { return ref_value(g[0], g[1]) * 0.1 + Ref(0, 1); }, 1e-6,
      "complex<float> * 0.1 + 1j (complex<float>)");
  // A real array meets a complex scalar: complex of the array's precision.
  auto lifted = spmd::copy(r * Z(0, 1) + 2.0);
  expect_near(
      spmd::allgather(lifted), shape, [&](const Index<2>& g) { return Ref(2, rref(g[0], g[1])); }, 0, "r * 1j + 2");
  // Equality is defined (NumPy's ==); the ordering comparisons are not (a static_assert).
  EXPECT_EQ(spmd::count_nonzero(a == a), 35);
  index_t real_ones = 0;  // elements equal to their conjugate
  for (index_t i = 0; i < 7; ++i)
    for (index_t j = 0; j < 5; ++j) real_ones += ref_value(i, j).imag() == 0 ? 1 : 0;
  EXPECT_EQ(spmd::count_nonzero(a != spmd::conj(a)), 35 - real_ones);
  // where with complex branches
  auto w = spmd::copy(spmd::where(r > 10.0, a, Z(0, -1)));
  expect_near(
      spmd::allgather(w), shape,
      [&](const Index<2>& g) { return rref(g[0], g[1]) > 10.0 ? ref_value(g[0], g[1]) : Ref(0, -1); }, 0,
      "where(r > 10, a, -1j)");
}

void Functions() {
  const Index<2> shape{7, 5};
  const auto a = pattern_array<Z>(7, 5);
  const auto ref = [](const Index<2>& g) { return ref_value(g[0], g[1]); };
  const double tol = 1e-14;
  const auto check_real = [&](const auto& e, auto f, double t, const char* what) {
    auto x = spmd::copy(e);
    using V = typename decltype(x)::value_type;
    static_assert(std::is_floating_point_v<V>, "a real result");
    const auto got = spmd::allgather(x);
    const auto want = spmd::testing::host_array<2, double>(shape, [&](const Index<2>& g) { return f(ref(g)); });
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(static_cast<double>(got[k]), want[k], t * (std::abs(want[k]) + 1.0)) << what << " at " << k;
  };
  check_real(
      spmd::real(a), [](Ref z) { return z.real(); }, 0, "real");
  check_real(
      spmd::imag(a), [](Ref z) { return z.imag(); }, 0, "imag");
  check_real(
      spmd::abs(a), [](Ref z) { return std::abs(z); }, tol, "abs");
  check_real(
      spmd::angle(a), [](Ref z) { return std::arg(z); }, tol, "angle");
  check_real(
      spmd::abs(pattern_array<ZF>(7, 5)), [](Ref z) { return std::abs(z); }, 1e-6, "abs (complex<float>)");
  expect_near(
      spmd::allgather(spmd::copy(spmd::conj(a))), shape, [&](const Index<2>& g) { return std::conj(ref(g)); }, 0,
      "conj");
  expect_near(
      spmd::allgather(spmd::copy(spmd::exp(a * 0.25))), shape,
      [&](const Index<2>& g) { return std::exp(ref(g) * 0.25); }, tol, "exp");
  expect_near(
      spmd::allgather(spmd::copy(spmd::sqrt(a))), shape, [&](const Index<2>& g) { return std::sqrt(ref(g)); }, tol,
      "sqrt");
  expect_near(
      spmd::allgather(spmd::copy(spmd::log(a))), shape, [&](const Index<2>& g) { return std::log(ref(g)); }, tol,
      "log");
  expect_near(
      spmd::allgather(spmd::copy(spmd::sin(a * 0.1) + spmd::cos(a * 0.1))), shape,
      [&](const Index<2>& g) { return std::sin(ref(g) * 0.1) + std::cos(ref(g) * 0.1); }, tol, "sin + cos");
  expect_near(
      spmd::allgather(spmd::copy(spmd::pow(a, Z(2, 0.5)))), shape,
      [&](const Index<2>& g) { return std::pow(ref(g), Ref(2, 0.5)); }, 1e-13, "pow(a, 2 + 0.5j)");
  expect_near(
      spmd::allgather(spmd::copy(spmd::sqrt(pattern_array<ZF>(7, 5)))), shape,
      [&](const Index<2>& g) { return std::sqrt(ref(g)); }, 1e-6, "sqrt (complex<float>)");
  // Real operands: imag is zero, angle 0 or pi, conj the operand.
  const auto r = spmd::fromfunction<double>(
      world(), {7, 5}, KOKKOS_LAMBDA(index_t i, index_t j) { return static_cast<double>(i) - static_cast<double>(j); });
  EXPECT_EQ(spmd::sum(spmd::abs(spmd::imag(r))), 0.0);
  EXPECT_EQ(spmd::sum(spmd::conj(r) - r), 0.0);
  const double pi = std::acos(-1.0);
  EXPECT_NEAR(spmd::sum(spmd::angle(r)), pi * 10, 1e-12);  // 10 of the 35 are negative
  // A complex array built from real and imaginary parts, then taken apart again.
  auto z = spmd::zeros<Z>(world(), {7, 5});
  z = r + Z(0, 1) * (r * r);
  EXPECT_EQ(spmd::norm2(spmd::real(z) - r), 0.0);
  EXPECT_EQ(spmd::norm2(spmd::imag(z) - r * r), 0.0);
  auto u = spmd::copy(spmd::astype<Z>(r));
  EXPECT_EQ(spmd::norm2(u - r), 0.0);
}

// ---- reductions ------------------------------------------------------------------------------------

void Reductions() {
  const auto a = pattern_array<Z>(7, 5);
  const auto b = spmd::copy(spmd::conj(a) * Z(0.5, 1.0) + 1.0, spmd::grid({1, world().size()}));
  Ref s(0), p(1), d(0), vd(0), sb(0);
  double n2 = 0;
  for (index_t i = 0; i < 7; ++i)
    for (index_t j = 0; j < 5; ++j) {
      const Ref x = ref_value(i, j), y = std::conj(x) * Ref(0.5, 1.0) + 1.0;
      s += x;
      sb += y;
      p *= x * 0.25;
      d += x * y;
      vd += std::conj(x) * y;
      n2 += std::norm(x);
    }
  const double tol = 1e-13;
  expect_near(to_ref(spmd::sum(a)), s, tol, "sum");
  expect_near(to_ref(spmd::prod(a * 0.25)), p, tol, "prod");
  expect_near(to_ref(spmd::mean(a)), s / 35.0, tol, "mean");
  expect_near(to_ref(spmd::dot(a, b)), d, tol, "dot (no conjugation)");
  expect_near(to_ref(spmd::vdot(a, b)), vd, tol, "vdot (conjugates a)");
  expect_near(to_ref(spmd::vdot(a, a)), Ref(n2), tol, "vdot(a, a)");
  EXPECT_NEAR(spmd::norm2(a), std::sqrt(n2), tol * std::sqrt(n2));
  EXPECT_NEAR(spmd::norm_inf(spmd::abs(a)), std::abs(ref_value(6, 4)), 1e-14 * 10);
  // complex<float>
  const auto af = pattern_array<ZF>(7, 5);
  expect_near(to_ref(spmd::sum(af)), s, 1e-6, "sum (complex<float>)");
  expect_near(to_ref(spmd::mean(af)), s / 35.0, 1e-6, "mean (complex<float>)");
  EXPECT_NEAR(spmd::norm2(af), std::sqrt(n2), 1e-6 * std::sqrt(n2));
  // Per-axis sums and means: np.sum(a, axis=0), np.mean(a, axis=1).
  auto col = spmd::sum(a, spmd::axis(0));
  expect_near(
      spmd::allgather(col), Index<1>{5},
      [](const Index<1>& g) {
        Ref t(0);
        for (index_t i = 0; i < 7; ++i) t += ref_value(i, g[0]);
        return t;
      },
      tol, "sum(a, axis=0)");
  auto row = spmd::mean(b, spmd::axis(1));
  expect_near(
      spmd::allgather(row), Index<1>{7},
      [](const Index<1>& g) {
        Ref t(0);
        for (index_t j = 0; j < 5; ++j) t += std::conj(ref_value(g[0], j)) * Ref(0.5, 1.0) + 1.0;
        return t / 5.0;
      },
      tol, "mean(b, axis=1)");
  auto rowprod = spmd::prod(a * 0.5, spmd::axis(1));
  expect_near(
      spmd::allgather(rowprod), Index<1>{7},
      [](const Index<1>& g) {
        Ref t(1);
        for (index_t j = 0; j < 5; ++j) t *= ref_value(g[0], j) * 0.5;
        return t;
      },
      tol, "prod(a * 0.5, axis=1)");
  EXPECT_EQ(spmd::count_nonzero(a), 35);
  EXPECT_EQ(spmd::count_nonzero(a - a), 0);
  EXPECT_TRUE(spmd::all_of(a));
  // An empty operand: sum 0, prod 1.
  auto e = spmd::zeros<Z>(world(), {0, 3});
  EXPECT_EQ(to_ref(spmd::sum(e)), Ref(0));
  EXPECT_EQ(to_ref(spmd::prod(e)), Ref(1));
  // Backend-level all-reduce of a complex View (MPI here; NCCL as two real sums on GPUs).
  Kokkos::View<Z*, spmd::DefaultMemorySpace> v("v", 3);
  Kokkos::deep_copy(v, Z(1.0, static_cast<double>(world().rank())));
  spmd::allreduce(world(), v, spmd::Op::sum);
  const auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  const int np = world().size();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(to_ref(hv(k)), Ref(np, np * (np - 1) / 2.0));
}

// ---- variance and standard deviation ----------------------------------------------------------------

/// NumPy's var of complex numbers: the mean of |z - mean|^2 (real), with ddof; std its root;
/// over both axes (a scalar), one axis, and keepdims; against sums written out here.
void Variance() {
  const auto a = pattern_array<Z>(7, 5, 1);
  const auto af = pattern_array<ZF>(7, 5);
  // serial reference: var over rows (axis 0), columns (axis 1) and all
  auto ref_var = [](bool rows, index_t fixed, index_t ddof) {
    const index_t n = rows ? 7 : 5;
    Ref m(0);
    for (index_t k = 0; k < n; ++k) m += rows ? ref_value(k, fixed) : ref_value(fixed, k);
    m /= static_cast<double>(n);
    double s = 0;
    for (index_t k = 0; k < n; ++k) s += std::norm((rows ? ref_value(k, fixed) : ref_value(fixed, k)) - m);
    return s / static_cast<double>(n - ddof);
  };
  Ref mall(0);
  for (index_t i = 0; i < 7; ++i)
    for (index_t j = 0; j < 5; ++j) mall += ref_value(i, j);
  mall /= 35.0;
  double sall = 0;
  for (index_t i = 0; i < 7; ++i)
    for (index_t j = 0; j < 5; ++j) sall += std::norm(ref_value(i, j) - mall);
  for (index_t ddof : {0, 1}) {
    const double v = spmd::var(a, spmd::axes(0, 1), ddof);
    static_assert(std::is_same_v<decltype(spmd::var(a, spmd::axes(0, 1))), double>);
    EXPECT_NEAR(v, sall / static_cast<double>(35 - ddof), 1e-12 * sall);
    EXPECT_NEAR(spmd::std(a, spmd::axes(0, 1), ddof), std::sqrt(sall / static_cast<double>(35 - ddof)), 1e-12 * sall);
    const auto v0 = spmd::var(a, spmd::axis(0), ddof);  // shape {5}
    static_assert(std::is_same_v<typename decltype(v0)::value_type, double>);
    const auto g0 = spmd::allgather(v0);
    ASSERT_EQ(g0.size(), 5u);
    for (index_t j = 0; j < 5; ++j) EXPECT_NEAR(g0[static_cast<std::size_t>(j)], ref_var(true, j, ddof), 1e-12);
    const auto s1 = spmd::std(a, spmd::axis(1), spmd::keepdims, ddof);  // shape {7, 1}
    EXPECT_EQ(s1.shape(), (Index<2>{7, 1}));
    const auto g1 = spmd::allgather(s1);
    for (index_t i = 0; i < 7; ++i)
      EXPECT_NEAR(g1[static_cast<std::size_t>(i)], std::sqrt(ref_var(false, i, ddof)), 1e-12);
  }
  const float vf = spmd::var(af, spmd::axes(0, 1));
  EXPECT_NEAR(vf, sall / 35.0, 1e-5 * sall);
}

// ---- order, truth, scans: sort, argsort, unique; per-axis any / all / count_nonzero; cumsum ---

/// NumPy's order of complex keys, written as a tuple: (re is NaN, im is NaN, re or 0 when NaN,
/// im or 0 when NaN) compared lexicographically. Local.
auto numpy_key(const Ref& z) {
  const bool nr = std::isnan(z.real()), ni = std::isnan(z.imag());
  return std::make_tuple(nr, ni, nr ? 0.0 : z.real(), ni ? 0.0 : z.imag());
}

/// sort / argsort (stable) / unique of complex keys against std::stable_sort by numpy_key, with
/// repeated keys, equal real parts, and each class of NaN parts; the array spans the ranks
/// (29 elements: uneven blocks on 3 and 4 ranks). Per-axis count_nonzero / any / all, and
/// cumsum / cumprod along each axis and flat, against sums written out here.
void OrderAndTruth() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<Ref> keys;
  for (index_t i = 0; i < 29; ++i) {
    const double re = static_cast<double>((i * 7) % 5) - 2.0, im = static_cast<double>((i * 3) % 4) * 0.5;
    keys.push_back(i % 11 == 3 ? Ref(re, nan) : i % 13 == 5 ? Ref(nan, im) : i == 20 ? Ref(nan, nan) : Ref(re, im));
  }
  Array<Z, 1> x(Distribution<1>(world(), {29}));
  std::vector<Z> host;
  for (const Ref& k : keys) host.push_back(Z(k.real(), k.imag()));
  spmd::scatter(x, world().rank() == 0 ? host : std::vector<Z>{});
  std::vector<index_t> order(keys.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<index_t>(k);
  std::stable_sort(order.begin(), order.end(), [&](index_t p, index_t q) {
    return numpy_key(keys[static_cast<std::size_t>(p)]) < numpy_key(keys[static_cast<std::size_t>(q)]);
  });
  const auto same = [](const Ref& p, const Z& q) {
    const auto eq = [](double u, double v) { return u == v || (std::isnan(u) && std::isnan(v)); };
    return eq(p.real(), q.real()) && eq(p.imag(), q.imag());
  };
  const auto sorted = spmd::allgather(spmd::sort(x));
  const auto idx = spmd::allgather(spmd::argsort(x));
  ASSERT_EQ(sorted.size(), keys.size());
  ASSERT_EQ(idx.size(), keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    EXPECT_EQ(idx[k], order[k]) << "argsort at " << k;
    EXPECT_TRUE(same(keys[static_cast<std::size_t>(order[k])], sorted[k]))
        << "sort at " << k << ": got " << to_ref(sorted[k]) << ", want " << keys[static_cast<std::size_t>(order[k])];
  }
  // unique: distinct keys in order, every key with a NaN part one (the first in the order)
  std::vector<Ref> want;
  for (index_t o : order) {
    const Ref& k = keys[static_cast<std::size_t>(o)];
    const bool has_nan = std::isnan(k.real()) || std::isnan(k.imag());
    if (want.empty()) {
      want.push_back(k);
    } else {
      const Ref& b = want.back();
      const bool back_nan = std::isnan(b.real()) || std::isnan(b.imag());
      if (!(has_nan && back_nan) && !(k == b)) want.push_back(k);
    }
  }
  const auto u = spmd::allgather(spmd::unique(x));
  ASSERT_EQ(u.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k)
    EXPECT_TRUE(same(want[k], u[k])) << "unique at " << k << ": got " << to_ref(u[k]) << ", want " << want[k];

  // Per-axis truth: a 7 x 5 array with zeros where (i + 2 j) % 3 == 0 and purely imaginary or
  // purely real values elsewhere (a nonzero complex value is true whichever part is nonzero).
  const auto zero_at = [](index_t i, index_t j) { return (i + 2 * j) % 3 == 0; };
  Array<Z, 2> t(Distribution<2>(world(), {7, 5}));
  std::vector<Z> th;
  for (index_t i = 0; i < 7; ++i)
    for (index_t j = 0; j < 5; ++j) th.push_back(zero_at(i, j) ? Z(0, 0) : (j % 2 ? Z(0, -1.5) : Z(2.5, 0)));
  spmd::scatter(t, world().rank() == 0 ? th : std::vector<Z>{});
  auto t0 = spmd::count_nonzero(t, spmd::axis(0));
  auto t1 = spmd::any_of(t * 0.0 + spmd::where(spmd::real(t) > 0.0, t, Z(0)), spmd::axis(1));
  auto t2 = spmd::all_of(t, spmd::axis(1));
  const auto c0 = spmd::allgather(t0);
  const auto a1 = spmd::allgather(Array<int, 1>(spmd::astype<int>(t1)));  // (no vector<bool> gather)
  const auto l1 = spmd::allgather(Array<int, 1>(spmd::astype<int>(t2)));
  for (index_t j = 0; j < 5; ++j) {
    index_t c = 0;
    for (index_t i = 0; i < 7; ++i) c += zero_at(i, j) ? 0 : 1;
    EXPECT_EQ(c0[static_cast<std::size_t>(j)], c) << "count_nonzero(t, axis=0) at " << j;
  }
  for (index_t i = 0; i < 7; ++i) {
    bool any = false, all = true;
    for (index_t j = 0; j < 5; ++j) {
      any = any || (!zero_at(i, j) && j % 2 == 0);  // the real-valued nonzeros
      all = all && !zero_at(i, j);
    }
    EXPECT_EQ(static_cast<bool>(a1[static_cast<std::size_t>(i)]), any) << "any(where(real > 0, t, 0), axis=1) at " << i;
    EXPECT_EQ(static_cast<bool>(l1[static_cast<std::size_t>(i)]), all) << "all(t, axis=1) at " << i;
  }

  // cumsum along each axis and flat, cumprod along axis 1 (np.cumsum / np.cumprod of complex)
  const auto a = pattern_array<Z>(7, 5);
  for (int ax = 0; ax < 2; ++ax) {
    expect_near(
        spmd::allgather(spmd::cumsum(a, spmd::axis(ax))), Index<2>{7, 5},
        [&](const Index<2>& g) {
          Ref c(0);
          for (index_t k = 0; k <= g[ax]; ++k) c += ax == 0 ? ref_value(k, g[1]) : ref_value(g[0], k);
          return c;
        },
        1e-14, ax == 0 ? "cumsum(a, axis=0)" : "cumsum(a, axis=1)");
  }
  expect_near(
      spmd::allgather(spmd::cumprod(a * 0.5, spmd::axis(1))), Index<2>{7, 5},
      [&](const Index<2>& g) {
        Ref c(1);
        for (index_t k = 0; k <= g[1]; ++k) c *= ref_value(g[0], k) * 0.5;
        return c;
      },
      1e-14, "cumprod(a * 0.5, axis=1)");
  expect_near(
      spmd::allgather(spmd::cumsum(a)), Index<1>{35},
      [&](const Index<1>& g) {
        Ref c(0);
        for (index_t k = 0; k <= g[0]; ++k) c += ref_value(k / 5, k % 5);
        return c;
      },
      1e-14, "cumsum(a) (flat)");
}

// ---- random complex arrays ------------------------------------------------------------------------

/// The documented recipe (docs/api/random.md): two streams, the second times 1i, one fused
/// kernel; element i is (normal_at(stream 0, i), normal_at(stream 1, i)) on any rank count.
void RandomRecipe() {
  const spmd::random::Generator g{7};
  Array<Z, 2> z(Distribution<2>(world(), {7, 5}, spmd::halo(1)));
  z = g.normal({7, 5}) + Z(0, 1) * g.stream(1).normal({7, 5});
  const auto k0 = g.key(), k1 = g.stream(1).key();
  expect_near(
      spmd::allgather(z), Index<2>{7, 5},
      [&](const Index<2>& i) {
        const index_t f = i[0] * 5 + i[1];
        return Ref(spmd::random::normal_at(k0, f), spmd::random::normal_at(k1, f));
      },
      0, "normal + 1i * normal");
  ZF u0(0, 0);
  Array<ZF, 1> u(Distribution<1>(world(), {11}));
  u = g.uniform<float>({11}) + ZF(0, 1) * g.stream(2).uniform<float>({11});
  u0 = u.get(0);
  EXPECT_EQ(u0.real(), spmd::random::uniform_at<float>(g.key(), 0));
  EXPECT_EQ(u0.imag(), spmd::random::uniform_at<float>(g.stream(2).key(), 0));
}

// ---- HDF5 checkpoints -------------------------------------------------------------------------------

#if SPMD_HAVE_HDF5
/// complex128 and complex64 arrays saved (h5py's compound {r, i}: tests/check_h5py.py reads one
/// with h5py) and loaded on another process grid and halo; a complex dataset refuses a real or
/// narrower complex array on every rank.
void Checkpoint() {
  const std::string dir = "complex-test/np" + std::to_string(world().size());
  if (world().rank() == 0) std::filesystem::create_directories(dir);
  world().barrier();
  const std::string path = dir + "/z.h5";
  const auto a = pattern_array<Z>(7, 5, 1);
  const auto af = pattern_array<ZF>(7, 5);
  const auto r = spmd::copy(spmd::real(a));
  spmd::io::save(path, {{"z", a}, {"zf", af}, {"re", r}});
  const auto info = spmd::io::inspect(path, world());
  EXPECT_EQ(info.find("z")->type, spmd::io::ElementType::complex128);
  EXPECT_EQ(info.find("zf")->type, spmd::io::ElementType::complex64);
  const Distribution<2> other(world(), {7, 5}, spmd::grid({1, world().size()}), spmd::halo(1));
  const auto ref = [](const Index<2>& g) { return ref_value(g[0], g[1]); };
  expect_near(spmd::allgather(spmd::io::load<Z>(path, "z", other)), Index<2>{7, 5}, ref, 0, "load complex128");
  expect_near(spmd::allgather(spmd::io::load<ZF>(path, "zf", other)), Index<2>{7, 5}, ref, 0, "load complex64");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::io::load<ZF>(path, "z", other), "holds complex128 elements");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::io::load<double>(path, "z", other), "holds complex128 elements");
}
#endif

}  // namespace

// (The bodies are free functions: nvcc does not take KOKKOS_LAMBDA in a test's private TestBody.)
TEST(Complex, Creation) {
  Creation();
}
TEST(Complex, SlicesWithSteps) {
  SlicesWithSteps();
}
TEST(Complex, HaloExchange) {
  HaloExchange();
}
TEST(Complex, GatherScatterRedistribute) {
  GatherScatterRedistribute();
}
TEST(Complex, Arithmetic) {
  Arithmetic();
}
TEST(Complex, Functions) {
  Functions();
}
TEST(Complex, Reductions) {
  Reductions();
}
TEST(Complex, Variance) {
  Variance();
}
TEST(Complex, RandomRecipe) {
  RandomRecipe();
}
TEST(Complex, OrderAndTruth) {
  OrderAndTruth();
}
#if SPMD_HAVE_HDF5
TEST(Complex, Checkpoint) {
  Checkpoint();
}
#endif
