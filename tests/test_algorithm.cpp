// for_each (global indices), transform, fill and copy against serial references.
#include "spmd_test.hpp"

using spmd::Box;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::host_array;
using spmd::testing::world;

namespace algorithm_tests {
// In a free function: CUDA does not allow KOKKOS_LAMBDA inside gtest's (private) TestBody.
void ForEachSeesGlobalIndices() {
  Distribution<3> d(world(), {5, 7, 3}, spmd::halo(1));
  auto a = spmd::zeros<double>(d);
  auto acc = a.accessor();
  spmd::for_each(
      a, KOKKOS_LAMBDA(index_t i, index_t j, index_t k) { acc(i, j, k) = 100.0 * i + 10.0 * j + k; });
  auto ref = host_array<3>(d.shape(), [](const Index<3>& g) { return 100.0 * g[0] + 10.0 * g[1] + g[2]; });
  EXPECT_EQ(spmd::allgather(a), ref);
}
}  // namespace algorithm_tests
TEST(Algorithm, ForEachSeesGlobalIndices) {
  algorithm_tests::ForEachSeesGlobalIndices();
}

namespace algorithm_tests {
void ForEachOverARegion() {
  // Interior update only: the boundary ring keeps its value (the heat app relies on this).
  Distribution<2> d(world(), {8, 6});
  auto a = spmd::full(d, -1.0);
  auto acc = a.accessor();
  spmd::for_each(
      a, Box<2>{{1, 1}, {7, 5}}, KOKKOS_LAMBDA(index_t i, index_t j) { acc(i, j) = double(i * j); });
  auto ref = host_array<2>(d.shape(), [](const Index<2>& g) {
    const bool inside = g[0] >= 1 && g[0] < 7 && g[1] >= 1 && g[1] < 5;
    return inside ? double(g[0] * g[1]) : -1.0;
  });
  EXPECT_EQ(spmd::allgather(a), ref);
}
}  // namespace algorithm_tests
TEST(Algorithm, ForEachOverARegion) {
  algorithm_tests::ForEachOverARegion();
}

namespace algorithm_tests {
void TransformWithOneTwoThreeInputsAndInPlace() {
  Distribution<2> d(world(), {7, 5}, spmd::halo(1));
  Distribution<2> d0 = d.with_halo({0, 0});
  auto x = spmd::zeros<double>(d), y = spmd::zeros<double>(d0), z = spmd::zeros<double>(d),
       out = spmd::zeros<double>(d);
  auto rx = host_array<2>(d.shape(), [](const Index<2>& g) { return 1.0 + g[0]; });
  auto ry = host_array<2>(d.shape(), [](const Index<2>& g) { return 2.0 * g[1]; });
  auto rz = host_array<2>(d.shape(), [](const Index<2>& g) { return 0.5 * (g[0] + g[1]); });
  const bool root = world().rank() == 0;
  spmd::scatter(x, root ? rx : std::vector<double>{});
  spmd::scatter(y, root ? ry : std::vector<double>{});  // other halo width: still aligned
  spmd::scatter(z, root ? rz : std::vector<double>{});

  spmd::transform(
      out, KOKKOS_LAMBDA(double a) { return -a; }, x);
  std::vector<double> ref(rx.size());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = -rx[i];
  EXPECT_EQ(spmd::allgather(out), ref);

  const double s = 3.0;
  spmd::transform(
      out, KOKKOS_LAMBDA(double a, double b) { return a + s * b; }, x, y);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = rx[i] + s * ry[i];
  EXPECT_EQ(spmd::allgather(out), ref);

  spmd::transform(
      out, KOKKOS_LAMBDA(double a, double b, double c) { return a * b - c; }, x, y, z);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = rx[i] * ry[i] - rz[i];
  EXPECT_EQ(spmd::allgather(out), ref);

  spmd::transform(
      x, KOKKOS_LAMBDA(double a) { return 2.0 * a; }, x);  // in place
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = 2.0 * rx[i];
  EXPECT_EQ(spmd::allgather(x), ref);

  spmd::fill(out, 1.5);
  EXPECT_EQ(spmd::allgather(out), std::vector<double>(ref.size(), 1.5));
  spmd::copyto(y, x);  // different halo widths
  EXPECT_EQ(spmd::allgather(y), ref);
}
}  // namespace algorithm_tests
TEST(Algorithm, TransformWithOneTwoThreeInputsAndInPlace) {
  algorithm_tests::TransformWithOneTwoThreeInputsAndInPlace();
}

namespace algorithm_tests {
void TransformChangesType() {
  auto a = spmd::arange<int>(world(), 11);
  auto b = spmd::zeros<double>(a.distribution());
  spmd::transform(
      b, KOKKOS_LAMBDA(int v) { return 0.5 * v; }, a);
  std::vector<double> ref(11);
  for (int i = 0; i < 11; ++i) ref[i] = 0.5 * i;
  EXPECT_EQ(spmd::allgather(b), ref);
}
}  // namespace algorithm_tests
namespace algorithm_tests {
// Arrays without halo take the flat (1-D, unrolled on GPUs) path: 2-D and 3-D, uneven blocks,
// sizes that are not a multiple of the unroll factor, in place and with several inputs.
void TransformOnContiguousBlocks() {
  for (Index<3> shape : {Index<3>{7, 5, 3}, Index<3>{1, 1, 1}, Index<3>{13, 1, 2}}) {
    Distribution<3> d(world(), shape);
    auto x = spmd::zeros<double>(d), y = spmd::zeros<double>(d), out = spmd::full(d, -1.0);
    auto rx = host_array<3>(shape, [](const Index<3>& g) { return 1.0 + g[0] * 0.5 - g[2]; });
    auto ry = host_array<3>(shape, [](const Index<3>& g) { return 3.0 * g[1] + g[2]; });
    const bool root = world().rank() == 0;
    spmd::scatter(x, root ? rx : std::vector<double>{});
    spmd::scatter(y, root ? ry : std::vector<double>{});
    spmd::transform(
        out, KOKKOS_LAMBDA(double a, double b) { return a * b + 1.0; }, x, y);
    spmd::transform(
        x, KOKKOS_LAMBDA(double a) { return -a; }, x);
    std::vector<double> ref(rx.size()), negx(rx.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ref[i] = rx[i] * ry[i] + 1.0;
      negx[i] = -rx[i];
    }
    EXPECT_EQ(spmd::allgather(out), ref);
    EXPECT_EQ(spmd::allgather(x), negx);
  }
}

// The device forms of the kernel layer (one or several points per work item) run on the host, for lengths
// around the host chunk's multiples and small ones; the row form is covered by the tests above.
struct Affine {
  KOKKOS_INLINE_FUNCTION double operator()(double a, double b) const { return 2.0 * a - b; }
};
void DeviceFormCoversEveryElement() {
  spmd::testing::KnobsGuard guard;
  for (const int form : {0, 1, 2}) {  // rows; one point per item; several points per item
    spmd::testing::knobs().point_items = form > 0;
    spmd::testing::knobs().multi_points = form == 2 ? 1 : 0;
    for (const spmd::index_t n : {1, 3, 4, 5, 11, 4095, 4097}) {
      auto a = spmd::zeros<double>(world(), {n}), b = spmd::zeros<double>(world(), {n});
      auto out = spmd::full<double>(world(), {n}, -99.0);
      auto aa = a.accessor(), ba = b.accessor();
      spmd::for_each(
          a, KOKKOS_LAMBDA(spmd::index_t i) {
            aa(i) = 1.5 * static_cast<double>(i);
            ba(i) = 7.0 - static_cast<double>(i);
          });
      spmd::transform(out, Affine{}, a, b);
      const auto got = spmd::allgather(out);
      for (spmd::index_t i = 0; i < n; ++i)
        ASSERT_EQ(got[static_cast<std::size_t>(i)], 2.0 * (1.5 * i) - (7.0 - i)) << "n " << n << " i " << i;
    }
  }
}
}  // namespace algorithm_tests
TEST(Algorithm, DeviceFormCoversEveryElement) {
  algorithm_tests::DeviceFormCoversEveryElement();
}
TEST(Algorithm, TransformOnContiguousBlocks) {
  algorithm_tests::TransformOnContiguousBlocks();
}

TEST(Algorithm, TransformChangesType) {
  algorithm_tests::TransformChangesType();
}

// spmd::copy between memory spaces (a device array into a host one on a GPU build; the same
// space on a CPU build) and across halo widths; the default overload returns with dst readable.
TEST(Algorithm, CopyAcrossMemorySpaces) {
  auto a = spmd::arange<double>(world(), 0.0, 37.0, 1.0, spmd::halo(1));
  spmd::Array<double, 1, Kokkos::HostSpace> h(a.distribution().with_halo({0}), spmd::label("h"));
  spmd::copyto(h, a);
  std::vector<double> ref(37);
  for (int i = 0; i < 37; ++i) ref[i] = i;
  const auto owned = h.owned();
  for (spmd::index_t i = owned.lo[0]; i < owned.hi[0]; ++i) EXPECT_EQ(h.local()(i - owned.lo[0]), ref[i]);
  spmd::Array<double, 1> back(a.distribution(), spmd::label("back"));
  spmd::copyto(back, h);
  EXPECT_EQ(spmd::allgather(back), ref);
}
