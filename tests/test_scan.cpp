// Scans (scan.hpp) against a sequential serial reference computed here: cumsum and cumprod
// along every axis of 1-D, 2-D and 3-D arrays, of expressions and slices, on several process
// grids (so the exclusive scan of block totals crosses 1 to 4 ranks along the axis), empty
// blocks, element types, and bad axes as collective errors.
//
//   1-D: 3 elements at 4 ranks (a rank owns nothing); 2-D 9 x 8 on the automatic grid, (1, p)
//   and (p, 1); 3-D 4 x 5 x 6 on (p, 1, 1) and (1, 1, p).
#include "breadth_test.hpp"

#include <cmath>
#include <vector>

#include <spmd/scan.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::all_close;
using spmd::testing::expect_all;
using spmd::testing::from_host;
using spmd::testing::host_array;
using spmd::testing::world;

namespace {

/// Sequential scan of `v` (row-major, `shape`) along `axis`, as NumPy's add.accumulate.
template <int N>
std::vector<double> ref_scan(const Index<N>& shape, std::vector<double> v, int axis, bool prod) {
  index_t stride = 1;
  for (int d = N - 1; d > axis; --d) stride *= shape[d];
  spmd::for_each_index(spmd::Box<N>{Index<N>{}, shape}, [&](const Index<N>& g) {
    if (g[axis] == 0) return;
    index_t at = 0;
    for (int d = 0; d < N; ++d) at = at * shape[d] + g[d];
    const double prev = v[std::size_t(at - stride)];
    v[std::size_t(at)] = prod ? prev * v[std::size_t(at)] : prev + v[std::size_t(at)];
  });
  return v;
}

}  // namespace

namespace scan_tests {

void OneD() {
  for (index_t n : {index_t(3), index_t(100)}) {
    const auto ref = host_array<1>(Index<1>{n}, [](const Index<1>& g) { return 1.0 + 0.01 * double(g[0] % 7); });
    const auto a = from_host<1>(Distribution<1>(world(), {n}), ref);
    expect_all(all_close(spmd::allgather(spmd::cumsum(a)), ref_scan<1>({n}, ref, 0, false), 1e-14), "cumsum 1-D");
    expect_all(all_close(spmd::allgather(spmd::cumprod(a)), ref_scan<1>({n}, ref, 0, true), 1e-13), "cumprod 1-D");
    // at one rank (the axis not cut) the sums are NumPy's sequential ones, bit for bit
    if (world().size() == 1)
      expect_all(all_close(spmd::allgather(spmd::cumsum(a)), ref_scan<1>({n}, ref, 0, false), 0.0), "cumsum bitwise");
  }
  // integers accumulate in index_t; bool counts
  auto k = spmd::arange<int>(world(), 10);
  auto ck = spmd::cumsum(k);
  static_assert(std::is_same_v<decltype(ck), Array<index_t, 1>>, "cumsum of int is index_t");
  const auto hk = spmd::allgather(ck);
  bool ok = hk.size() == 10;
  for (index_t i = 0; ok && i < 10; ++i) ok = hk[std::size_t(i)] == i * (i + 1) / 2;
  expect_all(ok, "cumsum of int");
  const auto hb = spmd::allgather(spmd::cumsum(k > 4));
  ok = hb.size() == 10;
  for (index_t i = 0; ok && i < 10; ++i) ok = hb[std::size_t(i)] == (i > 4 ? i - 4 : 0);
  expect_all(ok, "cumsum of bool");
}

void TwoAndThreeD() {
  const int p = world().size();
  const Index<2> s2{9, 8};
  const auto r2 = host_array<2>(s2, [](const Index<2>& g) { return std::sin(0.7 * g[0] + 1.3 * g[1]) + 1.5; });
  for (const auto& d : {Distribution<2>(world(), s2), Distribution<2>(world(), s2, spmd::grid({1, p})),
                        Distribution<2>(world(), s2, spmd::grid({p, 1}), spmd::halo(1))}) {
    const auto a = from_host<2>(d, r2);
    const std::string where = " on " + d.describe();
    for (int ax : {0, 1, -1}) {
      const int axis = ax < 0 ? ax + 2 : ax;
      auto c = spmd::cumsum(a, spmd::axis(ax));
      EXPECT_EQ(c.shape(), s2);
      expect_all(all_close(spmd::allgather(c), ref_scan<2>(s2, r2, axis, false), 1e-14),
                 ("cumsum 2-D axis" + where).c_str());
      expect_all(all_close(spmd::allgather(spmd::cumprod(a, spmd::axis(ax))), ref_scan<2>(s2, r2, axis, true), 1e-13),
                 ("cumprod 2-D axis" + where).c_str());
    }
    // an expression and a slice
    std::vector<double> sq(r2.size());
    for (std::size_t i = 0; i < r2.size(); ++i) sq[i] = 2.0 * r2[i] - 1.0;
    expect_all(
        all_close(spmd::allgather(spmd::cumsum(2.0 * a - 1.0, spmd::axis(0))), ref_scan<2>(s2, sq, 0, false), 1e-14),
        ("cumsum of an expression" + where).c_str());
    const auto vref =
        host_array<2>(Index<2>{7, 4}, [&](const Index<2>& g) { return r2[std::size_t((g[0] + 1) * 8 + 2 * g[1])]; });
    auto v = a(spmd::slice(1, -1), spmd::slice(spmd::none, spmd::none, 2));
    expect_all(all_close(spmd::allgather(spmd::cumsum(v, spmd::axis(1))), ref_scan<2>({7, 4}, vref, 1, false), 1e-14),
               ("cumsum of a slice" + where).c_str());
  }
  const Index<3> s3{4, 5, 6};
  const auto r3 =
      host_array<3>(s3, [](const Index<3>& g) { return 1.0 + 0.05 * std::cos(double(g[0] + 2 * g[1] - g[2])); });
  for (const auto& d :
       {Distribution<3>(world(), s3, spmd::grid({p, 1, 1})), Distribution<3>(world(), s3, spmd::grid({1, 1, p}))}) {
    const auto a = from_host<3>(d, r3);
    for (int axis = 0; axis < 3; ++axis)
      expect_all(all_close(spmd::allgather(spmd::cumsum(a, spmd::axis(axis))), ref_scan<3>(s3, r3, axis, false), 1e-14),
                 ("cumsum 3-D on " + d.describe()).c_str());
  }
}

void Errors() {
  auto a = spmd::zeros<double>(world(), {4, 5});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::cumsum(a, spmd::axis(2)),
                               "axis 2 is out of bounds for an operand of shape {4, 5}");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::cumprod(a, spmd::axis(-3)), "axis -3 is out of bounds");
}

}  // namespace scan_tests

TEST(Scan, OneD) {
  scan_tests::OneD();
}
TEST(Scan, TwoAndThreeD) {
  scan_tests::TwoAndThreeD();
}
TEST(Scan, Errors) {
  scan_tests::Errors();
}
