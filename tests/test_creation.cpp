// Creation from formulas (creation.hpp): linspace against NumPy's algorithm computed here,
// eye/identity, fromfunction (a new array and a lazy expression), index expressions inside
// expressions and on slices, on several process grids and halos, and bad input as collective
// errors.
//
//   the 2-D arrays are 11 x 7: at 3 ranks the rows are cut 4 | 4 | 3, at 4 ranks the automatic
//   grid is 4 x 1; each is also made on the grids (1, p) and with a halo.
#include "spmd_test.hpp"

#include <cmath>
#include <vector>

#include <spmd/creation.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::expect_all;
using spmd::testing::world;

namespace {

/// numpy.linspace(start, stop, num, endpoint) (numpy/core/function_base.py), in double.
std::vector<double> ref_linspace(double start, double stop, index_t num, bool endpoint) {
  std::vector<double> y(static_cast<std::size_t>(num));
  const double div = static_cast<double>(endpoint ? num - 1 : num), delta = stop - start;
  const double step = div > 0 ? delta / div : 0.0;
  for (index_t i = 0; i < num; ++i) {
    const double x = static_cast<double>(i);
    double v;
    if (div > 0)
      v = step == 0 ? x / div * delta : x * step;
    else
      v = x * delta;
    y[static_cast<std::size_t>(i)] = v + start;
  }
  if (endpoint && num > 1) y.back() = stop;
  return y;
}

template <int N>
bool every_rank_equal(const std::vector<double>& got, const std::vector<double>& want) {
  bool ok = got.size() == want.size();
  for (std::size_t i = 0; ok && i < got.size(); ++i) ok = got[i] == want[i];
  return ok;
}

}  // namespace

namespace creation_tests {

void Linspace() {
  struct Case {
    double start, stop;
    index_t num;
    bool endpoint;
  };
  const Case cases[] = {{0.0, 1.0, 11, true},  {-2.5, 7.25, 50, true},    {0.0, 1.0, 10, false},
                        {3.0, 3.0, 5, true},   {1.0, 2.0, 1, true},       {1.0, 2.0, 1, false},
                        {1.0, 2.0, 0, true},   {1e-310, 2e-310, 7, true}, {0.0, 5e-324, 7, true},
                        {10.0, -10.0, 9, true}};
  for (const Case& c : cases) {
    auto a = spmd::linspace(world(), c.start, c.stop, c.num, c.endpoint, spmd::halo(c.num > 8 ? 1 : 0));
    expect_all(every_rank_equal<1>(spmd::allgather(a), ref_linspace(c.start, c.stop, c.num, c.endpoint)),
               "linspace against NumPy's algorithm");
  }
  auto f = spmd::linspace<float>(world(), 0.0, 1.0, 5);
  const auto hf = spmd::allgather(f);
  bool ok = hf.size() == 5;
  for (std::size_t i = 0; ok && i < 5; ++i) ok = hf[i] == static_cast<float>(0.25 * double(i));
  expect_all(ok, "linspace<float>");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::linspace(world(), 0.0, 1.0, -1), "must be non-negative");
}

void EyeAndIdentity() {
  const int p = world().size();
  for (index_t k : {index_t(-2), index_t(0), index_t(3), index_t(9)}) {
    for (int g = 0; g < 2; ++g) {
      auto e = g == 0 ? spmd::eye<double>(world(), 11, 7, k) : spmd::eye<double>(world(), 11, 7, k, spmd::grid({1, p}));
      const auto h = spmd::allgather(e);
      std::vector<double> want(77);
      for (index_t i = 0; i < 11; ++i)
        for (index_t j = 0; j < 7; ++j) want[std::size_t(i * 7 + j)] = j - i == k ? 1.0 : 0.0;
      expect_all(every_rank_equal<2>(h, want), "eye(11, 7, k)");
      EXPECT_EQ(e.shape(), (Index<2>{11, 7}));
    }
  }
  auto id = spmd::identity<int>(world(), 6, spmd::halo(1));
  EXPECT_EQ(spmd::sum(id), 6);
  EXPECT_EQ(spmd::sum(id * spmd::astype<int>(spmd::indices(id.shape(), 0) == spmd::indices(id.shape(), 1))), 6);
  // the halo is zero, not garbage
  const auto& v = id.local_with_halo();
  auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  int halo_sum = 0, all_sum = 0;
  for (int i = 0; i < int(hv.extent(0)); ++i)
    for (int j = 0; j < int(hv.extent(1)); ++j) all_sum += hv(i, j);
  // the owned part of the host copy (a mirror of the strided id.local() could not be copied
  // from a GPU: Kokkos has no copy of non-contiguous views between memory spaces)
  const auto own = id.local();
  const int h0 = id.halo()[0], h1 = id.halo()[1];
  for (int i = 0; i < int(own.extent(0)); ++i)
    for (int j = 0; j < int(own.extent(1)); ++j) halo_sum -= hv(h0 + i, h1 + j);
  expect_all(all_sum + halo_sum == 0, "identity's halo is zero");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::eye<double>(world(), -1, 3), "negative extent");
}

void FromFunction() {
  const int p = world().size();
  std::vector<double> want(77);
  for (index_t i = 0; i < 11; ++i)
    for (index_t j = 0; j < 7; ++j) want[std::size_t(i * 7 + j)] = 1.0 / double(i + j + 1) + 100.0 * double(i);
  auto hilbert = KOKKOS_LAMBDA(index_t i, index_t j) {
    return 1.0 / double(i + j + 1) + 100.0 * double(i);
  };
  const std::vector<Distribution<2>> ds = {Distribution<2>(world(), {11, 7}),
                                           Distribution<2>(world(), {11, 7}, spmd::grid({1, p}), spmd::halo(1))};
  auto a = spmd::fromfunction(world(), {11, 7}, hilbert);
  static_assert(std::is_same_v<decltype(a), Array<double, 2>>, "fromfunction's element type is f's result");
  expect_all(every_rank_equal<2>(spmd::allgather(a), want), "fromfunction(comm, shape, f)");
  auto b = spmd::fromfunction(world(), Index<2>{11, 7}, hilbert, spmd::grid({1, p}), spmd::halo(1));
  expect_all(every_rank_equal<2>(spmd::allgather(b), want), "fromfunction on grid (1, p) with halo");
  // lazy, fused with other operands: c = 2 * a - fromfunction(...) == a
  for (const auto& d : ds) {
    Array<double, 2> c(d);
    c = 2.0 * a - spmd::fromfunction(c.shape(), hilbert);
    expect_all(every_rank_equal<2>(spmd::allgather(c), want), "c = 2 a - fromfunction(shape, f)");
  }
  // integral result converted to the requested type
  auto k = spmd::fromfunction<int>(
      world(), {5}, KOKKOS_LAMBDA(index_t i) { return 2.5 * double(i); });
  const auto hk = spmd::allgather(k);
  bool ok = hk.size() == 5;
  for (int i = 0; ok && i < 5; ++i) ok = hk[std::size_t(i)] == int(2.5 * i);
  expect_all(ok, "fromfunction<int>");
}

void IndexExpressions() {
  const int p = world().size();
  const double dx = 0.1;
  for (const auto& d : {Distribution<2>(world(), {11, 7}), Distribution<2>(world(), {11, 7}, spmd::grid({1, p})),
                        Distribution<2>(world(), {11, 7}, spmd::halo(2))}) {
    Array<double, 2> u(d, spmd::label("u"));
    u = spmd::sin(spmd::indices(u.shape(), 1) * dx) + 10.0 * spmd::indices(u.shape(), 0);
    std::vector<double> want(77);
    for (index_t i = 0; i < 11; ++i)
      for (index_t j = 0; j < 7; ++j) want[std::size_t(i * 7 + j)] = std::sin(double(j) * dx) + 10.0 * double(i);
    const auto h = spmd::allgather(u);
    bool ok = h.size() == want.size();
    for (std::size_t i = 0; ok && i < h.size(); ++i) ok = std::abs(h[i] - want[i]) <= 1e-15 * std::abs(want[i]) + 1e-15;
    expect_all(ok, "u = sin(indices(shape, 1) * dx) + 10 indices(shape, 0)");
    // a slice's own indices: u[1:-1, ::3] = indices(...)[0] * 7 + indices(...)[1]
    u = -1.0;
    auto s = u(spmd::slice(1, -1), spmd::slice(0, 7, 3));
    s = spmd::astype<double>(spmd::indices(s.shape(), 0) * 7 + spmd::indices(s.shape(), 1));
    const auto hs = spmd::allgather(u);
    ok = hs.size() == 77;
    for (index_t i = 0; ok && i < 11; ++i)
      for (index_t j = 0; j < 7; ++j) {
        const bool in = i >= 1 && i < 10 && j % 3 == 0;
        ok = ok && hs[std::size_t(i * 7 + j)] == (in ? double((i - 1) * 7 + j / 3) : -1.0);
      }
    expect_all(ok, "indices on a strided slice");
  }
  // reduced without an index array: sum over i of i (the first operand gives the layout)
  auto ones = spmd::ones<double>(world(), {100});
  EXPECT_EQ(spmd::sum(ones * spmd::indices(ones.shape(), 0)), 4950.0);
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::indices(Index<2>{3, 4}, 2), "axis 2 is out of range");
  Array<double, 1> null;
  SPMD_EXPECT_COLLECTIVE_ERROR(null = spmd::astype<double>(spmd::indices(Index<1>{4}, 0)), "no array operand");
}

}  // namespace creation_tests

/// full() and fill() of arrays with long rows, tall columns and a long last axis in 3-D: every
/// element set (on a GPU, Kokkos 3.4's own N-d fill left a 16 x 2^20 array untouched).
TEST(Creation, FullOfLongRows) {
  const index_t m = index_t(1) << 20;
  auto check = [](const auto& a, double v, const char* what) {
    const double n = double(a.size());
    expect_all(spmd::sum(a) == v * n && spmd::min(a) == v && spmd::max(a) == v, what);
  };
  check(spmd::full<double>(world(), {16, m}, 0.5), 0.5, "full 16 x 2^20");
  check(spmd::full<double>(world(), {m, 16}, 0.5), 0.5, "full 2^20 x 16");
  auto c = spmd::full<double>(world(), {2, 3, m}, 0.25, spmd::halo(1));
  check(c, 0.25, "full 2 x 3 x 2^20 with a halo");
  c.fill(1.5);
  check(c, 1.5, "fill 2 x 3 x 2^20 with a halo");
}

TEST(Creation, Linspace) {
  creation_tests::Linspace();
}
TEST(Creation, EyeAndIdentity) {
  creation_tests::EyeAndIdentity();
}
TEST(Creation, FromFunction) {
  creation_tests::FromFunction();
}
TEST(Creation, IndexExpressions) {
  creation_tests::IndexExpressions();
}
