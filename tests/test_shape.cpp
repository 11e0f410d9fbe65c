// Shape functions (shape.hpp) against a serial reference computed here: flip (a view: reads and
// writes through it) and roll (positive, negative, larger than the axis, zero shifts) along every
// axis of 1-D, 2-D and 3-D arrays and views, on several process grids and with halos (a roll must
// never read a stale halo), and bad axes as collective errors.
//
//   2-D: 9 x 8 on the automatic grid, (1, p) and (p, 1) with halo 1; 3-D: 4 x 5 x 6.
#include "breadth_test.hpp"

#include <cmath>
#include <vector>

#include <spmd/shape.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::expect_all;
using spmd::testing::from_host;
using spmd::testing::host_array;
using spmd::testing::world;

namespace {

/// The row-major reference of x moved along `axis`: out[g] = x[g with g[axis] = map(g[axis])].
template <int N, class F>
std::vector<double> remap(const Index<N>& shape, const std::vector<double>& x, int axis, F map) {
  std::vector<double> out;
  spmd::for_each_index(spmd::Box<N>{Index<N>{}, shape}, [&](const Index<N>& g) {
    Index<N> s = g;
    s[axis] = map(g[axis]);
    index_t at = 0;
    for (int d = 0; d < N; ++d) at = at * shape[d] + s[d];
    out.push_back(x[std::size_t(at)]);
  });
  return out;
}

}  // namespace

namespace shape_tests {

void Flip() {
  const int p = world().size();
  const Index<2> shape{9, 8};
  const auto ref = host_array<2>(shape, [](const Index<2>& g) { return 100.0 * g[0] + g[1]; });
  for (const auto& d : {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({1, p})),
                        Distribution<2>(world(), shape, spmd::grid({p, 1}), spmd::halo(1))}) {
    auto a = from_host<2>(d, ref);
    for (int axis : {0, 1, -1}) {
      const int ax = axis < 0 ? axis + 2 : axis;
      const index_t n = shape[ax];
      auto f = spmd::flip(a, spmd::axis(axis));
      const Array<double, 2> c = f;
      expect_all(spmd::allgather(c) == remap<2>(shape, ref, ax, [&](index_t i) { return n - 1 - i; }),
                 ("flip on " + d.describe()).c_str());
    }
    // writing through the view writes a, reversed; a flip of a flip is the array
    auto f = spmd::flip(a, spmd::axis(0));
    f = 2.0 * spmd::flip(f, spmd::axis(0));
    std::vector<double> twice(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) twice[i] = 2.0 * ref[i];
    expect_all(spmd::allgather(a) == remap<2>(shape, twice, 0, [&](index_t i) { return 8 - i; }),
               ("write through flip on " + d.describe()).c_str());
  }
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::flip(spmd::zeros<double>(world(), {3, 4}), spmd::axis(2)),
                               "axis 2 is out of bounds for an operand of shape {3, 4}");
}

void Roll() {
  const int p = world().size();
  const Index<2> shape{9, 8};
  const auto ref = host_array<2>(shape, [](const Index<2>& g) { return 100.0 * g[0] + g[1]; });
  for (const auto& d : {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({1, p})),
                        Distribution<2>(world(), shape, spmd::grid({p, 1}), spmd::halo(1), spmd::periodic())}) {
    const auto a = from_host<2>(d, ref);
    for (int ax = 0; ax < 2; ++ax)
      for (index_t shift : {index_t(1), index_t(3), index_t(-2), index_t(0), index_t(19)}) {
        const index_t n = shape[ax];
        auto r = spmd::roll(a, shift, spmd::axis(ax));
        EXPECT_EQ(r.distribution(), a.distribution());
        const auto want = remap<2>(shape, ref, ax, [&](index_t i) { return (((i - shift) % n) + n) % n; });
        expect_all(spmd::allgather(r) == want, ("roll by " + std::to_string(shift) + " on " + d.describe()).c_str());
      }
    // a view: roll a[1:, ::2] by 2 along axis 1
    const auto v = a(spmd::slice(1, spmd::none), spmd::slice(spmd::none, spmd::none, 2));
    const auto vref =
        host_array<2>(Index<2>{8, 4}, [&](const Index<2>& g) { return ref[std::size_t((g[0] + 1) * 8 + 2 * g[1])]; });
    expect_all(spmd::allgather(spmd::roll(v, 2, spmd::axis(1))) ==
                   remap<2>({8, 4}, vref, 1, [&](index_t i) { return (i + 2) % 4; }),
               ("roll of a view on " + d.describe()).c_str());
  }
  const Index<3> s3{4, 5, 6};
  const auto r3 = host_array<3>(s3, [](const Index<3>& g) { return 100.0 * g[0] + 10.0 * g[1] + g[2]; });
  const auto a3 = from_host<3>(Distribution<3>(world(), s3), r3);
  for (int ax = 0; ax < 3; ++ax)
    expect_all(spmd::allgather(spmd::roll(a3, -1, spmd::axis(ax))) ==
                   remap<3>(s3, r3, ax, [&](index_t i) { return (i + 1) % s3[ax]; }),
               "roll 3-D by -1");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::roll(a3, 1, spmd::axis(-4)), "axis -4 is out of bounds");
}

}  // namespace shape_tests

TEST(Shape, Flip) {
  shape_tests::Flip();
}
TEST(Shape, Roll) {
  shape_tests::Roll();
}
