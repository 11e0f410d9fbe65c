// Reductions against serial references computed here from the same host data.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "spmd_test.hpp"

using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::host_array;
using spmd::testing::world;

namespace {
template <int N, class T = double>
spmd::Array<T, N> from_host(const Index<N>& shape, const std::vector<T>& ref, int halo = 0) {
  auto a = spmd::zeros<T>(Distribution<N>(world(), shape, spmd::halo(halo)), spmd::label("spmd::test::reduce"));
  a.fill_with_halo(T(999));  // halo garbage must never reach a reduction
  spmd::scatter(a, world().rank() == 0 ? ref : std::vector<T>{});
  return a;
}
template <int N>
Index<N> unflatten(index_t lin, const Index<N>& shape) {
  Index<N> g{};
  for (int d = N - 1; d >= 0; --d) {
    g[d] = lin % shape[d];
    lin /= shape[d];
  }
  return g;
}
double rel(double a, double b) {
  return std::abs(a - b) / std::max(1.0, std::abs(b));
}
}  // namespace

namespace reduce_tests {
// In a free function: CUDA does not allow KOKKOS_LAMBDA inside gtest's (private) TestBody.
void AllReductionsAgainstSerial2D() {
  const Index<2> shape{9, 7};
  // Values with a known pattern; a few negative, irrational-ish.
  auto ref = host_array<2>(shape, [](const Index<2>& g) { return std::sin(0.7 * g[0] + 1.3 * g[1]) * (1 + g[0]); });
  auto a = from_host<2>(shape, ref, 1);
  auto ref2 = host_array<2>(shape, [](const Index<2>& g) { return 0.5 + 0.01 * (g[0] - g[1]); });
  auto b = from_host<2>(shape, ref2, 1);

  const double s = std::accumulate(ref.begin(), ref.end(), 0.0);
  double p = 1, dot = 0, n2 = 0, ninf = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    p *= ref2[i];
    dot += ref[i] * ref2[i];
    n2 += ref[i] * ref[i];
    ninf = std::max(ninf, std::abs(ref[i]));
  }
  EXPECT_LT(rel(spmd::sum(a), s), 1e-13);
  EXPECT_LT(rel(spmd::prod(b), p), 1e-13);
  EXPECT_EQ(spmd::min(a), *std::min_element(ref.begin(), ref.end()));
  EXPECT_EQ(spmd::max(a), *std::max_element(ref.begin(), ref.end()));
  EXPECT_LT(rel(spmd::mean(a), s / ref.size()), 1e-13);
  EXPECT_LT(rel(spmd::dot(a, b), dot), 1e-13);
  EXPECT_LT(rel(spmd::norm2(a), std::sqrt(n2)), 1e-13);
  EXPECT_EQ(spmd::norm_inf(a), ninf);
  const auto imin = std::min_element(ref.begin(), ref.end()) - ref.begin();
  const auto imax = std::max_element(ref.begin(), ref.end()) - ref.begin();
  EXPECT_EQ(spmd::argmin(a), unflatten<2>(imin, shape));
  EXPECT_EQ(spmd::argmax(a), unflatten<2>(imax, shape));
  const auto pos = std::count_if(ref.begin(), ref.end(), [](double v) { return v > 0; });
  EXPECT_EQ(spmd::count_if(
                a, KOKKOS_LAMBDA(double v) { return v > 0; }),
            pos);
  EXPECT_TRUE(spmd::any_of(
      a, KOKKOS_LAMBDA(double v) { return v > 0; }));
  EXPECT_FALSE(spmd::all_of(
      a, KOKKOS_LAMBDA(double v) { return v > 0; }));
  EXPECT_TRUE(spmd::all_of(
      b, KOKKOS_LAMBDA(double v) { return v > 0; }));
}
}  // namespace reduce_tests
TEST(Reduce, AllReductionsAgainstSerial2D) {
  reduce_tests::AllReductionsAgainstSerial2D();
}

TEST(Reduce, ArgminArgmaxTiesGoToTheLowestIndex) {
  // The minimum (-5) appears at flat indices 3, 10 and 17 and the maximum (9) at 2 and 16: with
  // 20 elements over up to 4 ranks the repeats sit on different ranks.
  std::vector<double> ref(20, 1.0);
  ref[3] = ref[10] = ref[17] = -5.0;
  ref[16] = ref[2] = 9.0;
  auto a = from_host<1>({20}, ref);
  EXPECT_EQ(spmd::argmin(a), (Index<1>{3}));
  EXPECT_EQ(spmd::argmax(a), (Index<1>{2}));
  // Same in 3-D; with all values equal the answer is the origin.
  auto c = spmd::full(world(), {3, 4, 5}, 2.0);
  EXPECT_EQ(spmd::argmin(c), (Index<3>{0, 0, 0}));
  EXPECT_EQ(spmd::argmax(c), (Index<3>{0, 0, 0}));
}

TEST(Reduce, IntegerArraysAndMeanIsFloating) {
  auto a = spmd::arange<int>(world(), 10);  // 0..9
  EXPECT_EQ(spmd::sum(a), 45);
  EXPECT_EQ(spmd::min(a), 0);
  EXPECT_EQ(spmd::max(a), 9);
  EXPECT_DOUBLE_EQ(spmd::mean(a), 4.5);
  EXPECT_DOUBLE_EQ(spmd::norm2(a), std::sqrt(285.0));
  EXPECT_EQ(spmd::dot(a, a), 285);
  auto neg = spmd::arange<int>(world(), -3, 2, 1);  // -3..1
  EXPECT_EQ(spmd::norm_inf(neg), 3);
  EXPECT_EQ(spmd::argmax(neg), (Index<1>{4}));
}

TEST(Reduce, FourDimensionsAndEmptyRanks) {
  const Index<4> shape{3, 2, 4, 3};
  auto ref =
      host_array<4>(shape, [](const Index<4>& g) { return static_cast<double>(g[0] * 7 - g[1] * 3 + g[2] - g[3]); });
  auto a = from_host<4>(shape, ref, 1);
  EXPECT_EQ(spmd::sum(a), std::accumulate(ref.begin(), ref.end(), 0.0));
  EXPECT_EQ(spmd::min(a), *std::min_element(ref.begin(), ref.end()));
  // 1 element over up to 4 ranks: all but one own nothing and contribute the identity.
  auto one = from_host<1>({1}, std::vector<double>{-2.5});
  EXPECT_EQ(spmd::sum(one), -2.5);
  EXPECT_EQ(spmd::prod(one), -2.5);
  EXPECT_EQ(spmd::min(one), -2.5);
  EXPECT_EQ(spmd::max(one), -2.5);
  EXPECT_EQ(spmd::argmax(one), (Index<1>{0}));
}

namespace reduce_tests {
void AllreduceOfDeviceViewsWithEachBackend() {
  const int p = world().size(), r = world().rank();
  for (spmd::Backend b : spmd::testing::backends()) {
    Kokkos::View<double*> v("spmd::test::partials", 5);
    Kokkos::View<long long*> w("spmd::test::counts", 3);
    Kokkos::parallel_for(
        "spmd::test::fill", 5, KOKKOS_LAMBDA(int i) {
          v(i) = (r + 1) * (i + 0.5);
          if (i < 3) w(i) = (r + 1) * (i + 1);
        });
    spmd::allreduce(world(), v, spmd::Op::sum, b);
    spmd::allreduce(world(), w, spmd::Op::max, b);
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w);
    for (int i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(hv(i), p * (p + 1) / 2.0 * (i + 0.5)) << spmd::to_string(b);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(hw(i), static_cast<long long>(p) * (i + 1)) << spmd::to_string(b);
  }
}
}  // namespace reduce_tests
TEST(Reduce, AllreduceOfDeviceViewsWithEachBackend) {
  reduce_tests::AllreduceOfDeviceViewsWithEachBackend();
}

namespace reduce_tests {
void ZeroSizeArrays() {
  auto e = spmd::zeros<double>(world(), {0, 3});
  EXPECT_EQ(spmd::sum(e), 0.0);
  EXPECT_EQ(spmd::prod(e), 1.0);
  EXPECT_EQ(spmd::norm2(e), 0.0);
  EXPECT_EQ(spmd::norm_inf(e), 0.0);
  EXPECT_FALSE(spmd::any_of(
      e, KOKKOS_LAMBDA(double) { return true; }));
  EXPECT_TRUE(spmd::all_of(
      e, KOKKOS_LAMBDA(double) { return false; }));
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::min(e), "zero-size");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::argmax(e), "zero-size");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::mean(e), "zero-size");
}
}  // namespace reduce_tests
TEST(Reduce, ZeroSizeArrays) {
  reduce_tests::ZeroSizeArrays();
}
