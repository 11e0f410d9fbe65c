// Per-axis reductions (axis_reduce.hpp) against a serial reference computed here: sum, prod,
// min, max, mean, count_nonzero, any_of, all_of over one axis, several, negative axes, with and
// without keepdims, of arrays, slices and expressions, 2-D and 3-D, on several process grids and
// halos; element types; the scalar form over all axes; argmin / argmax along one axis (ties
// across rank boundaries, NaNs, keepdims, 1-D); bad axes as collective errors.
//
//   the 2-D arrays are 9 x 8 (rows cut 3 | 3 | 3 at 3 ranks; a 2 x 2 grid at 4 ranks), also on
//   the grids (1, p) and (p, 1); the 3-D arrays are 5 x 6 x 7 on the automatic grid and on
//   (1, 1, p), so every axis is cut at some rank count and partial blocks meet in MPI_Reduce.
#include "breadth_test.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include <spmd/axis_reduce.hpp>

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

/// Serial reduction of `v` (row-major, `shape`) over the axes in `mask`: the result in row-major
/// order of the kept axes (the same order with or without keepdims).
template <int N>
std::vector<double> ref_reduce(const Index<N>& shape, const std::vector<double>& v, const std::array<bool, N>& mask,
                               double init, const std::function<double(double, double)>& f) {
  Index<N> oshape{};
  for (int a = 0; a < N; ++a) oshape[a] = mask[a] ? 1 : shape[a];
  std::vector<double> out(static_cast<std::size_t>(spmd::Box<N>{Index<N>{}, oshape}.size()), init);
  std::size_t t = 0;
  spmd::for_each_index(spmd::Box<N>{Index<N>{}, shape}, [&](const Index<N>& g) {
    index_t o = 0;
    for (int a = 0; a < N; ++a) o = o * oshape[a] + (mask[a] ? 0 : g[a]);
    out[std::size_t(o)] = f(out[std::size_t(o)], v[t++]);
  });
  return out;
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

const auto add = [](double a, double b) { return a + b; };
const auto mul = [](double a, double b) { return a * b; };
const auto lo = [](double a, double b) { return std::min(a, b); };
const auto hi = [](double a, double b) { return std::max(a, b); };

}  // namespace

namespace axis_tests {

void TwoD(const Index<2>& shape = {9, 8}) {
  const int p = world().size();
  const double rows_d = double(shape[0]), cols_d = double(shape[1]);
  const auto ref =
      host_array<2>(shape, [](const Index<2>& g) { return std::sin(0.7 * g[0] + 1.3 * g[1]) + 0.1 * g[0]; });
  const std::array<bool, 2> rows{true, false}, cols{false, true};
  for (const auto& d : {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({1, p})),
                        Distribution<2>(world(), shape, spmd::grid({p, 1}), spmd::halo(1))}) {
    const auto a = from_host<2>(d, ref, 1e300);
    const std::string where = " on " + d.describe();
    auto s0 = spmd::sum(a, spmd::axis(0));
    static_assert(std::is_same_v<decltype(s0), Array<double, 1>>, "sum over one axis of 2-D is 1-D");
    EXPECT_EQ(s0.shape(), (Index<1>{shape[1]}));
    expect_all(all_close(spmd::allgather(s0), ref_reduce<2>(shape, ref, rows, 0.0, add), 1e-14),
               ("sum axis 0" + where).c_str());
    auto s1 = spmd::sum(a, spmd::axis(-1), spmd::keepdims);
    EXPECT_EQ(s1.shape(), (Index<2>{shape[0], 1}));
    expect_all(all_close(spmd::allgather(s1), ref_reduce<2>(shape, ref, cols, 0.0, add), 1e-14),
               ("sum axis -1 keepdims" + where).c_str());
    expect_all(
        all_close(spmd::allgather(spmd::prod(a, spmd::axis(1))), ref_reduce<2>(shape, ref, cols, 1.0, mul), 1e-13),
        ("prod axis 1" + where).c_str());
    expect_all(all_close(spmd::allgather(spmd::min(a, spmd::axis(0))), ref_reduce<2>(shape, ref, rows, 1e300, lo), 0.0),
               ("min axis 0" + where).c_str());
    expect_all(
        all_close(spmd::allgather(spmd::max(a, spmd::axis(1))), ref_reduce<2>(shape, ref, cols, -1e300, hi), 0.0),
        ("max axis 1" + where).c_str());
    auto m = ref_reduce<2>(shape, ref, rows, 0.0, add);
    for (auto& x : m) x /= rows_d;
    expect_all(all_close(spmd::allgather(spmd::mean(a, spmd::axis(0))), m, 1e-14), ("mean axis 0" + where).c_str());
    // expressions: no temporary; and truth reductions
    std::vector<double> sq(ref.size()), pos(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      sq[i] = ref[i] * ref[i] + 1.0;
      pos[i] = ref[i] > 0.5 ? 1.0 : 0.0;
    }
    expect_all(all_close(spmd::allgather(spmd::sum(a * a + 1.0, spmd::axis(1))),
                         ref_reduce<2>(shape, sq, cols, 0.0, add), 1e-14),
               ("sum(a * a + 1, axis 1)" + where).c_str());
    auto cnt = spmd::count_nonzero(a > 0.5, spmd::axis(0));
    static_assert(std::is_same_v<decltype(cnt), Array<index_t, 1>>, "count_nonzero gives index_t");
    expect_all(all_close(as_double(spmd::allgather(cnt)), ref_reduce<2>(shape, pos, rows, 0.0, add), 0.0),
               ("count_nonzero(a > 0.5, axis 0)" + where).c_str());
    auto an = spmd::any_of(a > 0.5, spmd::axis(1));
    auto al = spmd::all_of(a > -0.9, spmd::axis(1));
    static_assert(std::is_same_v<decltype(an), Array<bool, 1>>, "any_of gives bool");
    std::vector<double> gt(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) gt[i] = ref[i] > -0.9 ? 1.0 : 0.0;
    const Array<int, 1> ai(spmd::astype<int>(an)), li(spmd::astype<int>(al));  // (no vector<bool> gather)
    expect_all(all_close(as_double(spmd::allgather(ai)), ref_reduce<2>(shape, pos, cols, 0.0, hi), 0.0),
               ("any_of axis 1" + where).c_str());
    expect_all(all_close(as_double(spmd::allgather(li)), ref_reduce<2>(shape, gt, cols, 1.0, lo), 0.0),
               ("all_of axis 1" + where).c_str());
    // var and std: two passes around the means
    for (index_t ddof : {index_t(0), index_t(1)}) {
      const auto s1 = ref_reduce<2>(shape, ref, cols, 0.0, add);
      std::vector<double> dev(ref.size());
      for (std::size_t i = 0; i < ref.size(); ++i) {
        const double mu = s1[i / std::size_t(shape[1])] / cols_d;
        dev[i] = (ref[i] - mu) * (ref[i] - mu);
      }
      auto v = ref_reduce<2>(shape, dev, cols, 0.0, add);
      for (auto& x : v) x /= cols_d - double(ddof);
      expect_all(all_close(spmd::allgather(spmd::var(a, spmd::axis(1), ddof)), v, 1e-13),
                 ("var axis 1" + where).c_str());
      for (auto& x : v) x = std::sqrt(x);
      auto sd = spmd::std(a, spmd::axis(1), spmd::keepdims, ddof);
      EXPECT_EQ(sd.shape(), (Index<2>{shape[0], 1}));
      expect_all(all_close(spmd::allgather(sd), v, 1e-13), ("std axis 1 keepdims" + where).c_str());
    }
    // all axes: the scalars
    const double total = spmd::sum(a);
    EXPECT_NEAR(spmd::sum(a, spmd::axes(0, 1)), total, 1e-12 * std::max(1.0, std::abs(total)));
    double mu = 0, ss = 0;
    for (double x : ref) mu += x / double(ref.size());
    for (double x : ref) ss += (x - mu) * (x - mu);
    const double var = ss / double(ref.size()), sd1 = std::sqrt(ss / double(ref.size() - 1));
    EXPECT_NEAR(spmd::var(a, spmd::axes(0, 1)), var, 1e-13 * std::max(1.0, var));
    EXPECT_NEAR(spmd::std(a, spmd::axes(1, 0), 1), sd1, 1e-13 * std::max(1.0, sd1));
  }
}

void ThreeDSlicesTypes() {
  const int p = world().size();
  const Index<3> shape{5, 6, 7};
  const auto ref =
      host_array<3>(shape, [](const Index<3>& g) { return std::cos(0.3 * g[0] - 0.2 * g[1] + 0.5 * g[2]); });
  for (const auto& d : {Distribution<3>(world(), shape), Distribution<3>(world(), shape, spmd::grid({1, 1, p}))}) {
    const auto a = from_host<3>(d, ref, 1e300);
    const std::string where = " on " + d.describe();
    auto s02 = spmd::sum(a, spmd::axes(0, 2));
    static_assert(std::is_same_v<decltype(s02), Array<double, 1>>, "two axes of 3-D");
    expect_all(all_close(spmd::allgather(s02), ref_reduce<3>(shape, ref, {true, false, true}, 0.0, add), 1e-14),
               ("sum axes (0, 2)" + where).c_str());
    auto k = spmd::max(a, spmd::axes(2, 0), spmd::keepdims);
    EXPECT_EQ(k.shape(), (Index<3>{1, 6, 1}));
    expect_all(all_close(spmd::allgather(k), ref_reduce<3>(shape, ref, {true, false, true}, -1e300, hi), 0.0),
               ("max axes (2, 0) keepdims" + where).c_str());
    expect_all(all_close(spmd::allgather(spmd::min(a, spmd::axis(1))),
                         ref_reduce<3>(shape, ref, {false, true, false}, 1e300, lo), 0.0),
               ("min axis 1" + where).c_str());
    // a slice operand: a[1:, :, ::2], reduced over axis 1
    auto v = a(spmd::slice(1, spmd::none), spmd::all, spmd::slice(spmd::none, spmd::none, 2));
    const Index<3> vs{4, 6, 4};
    const auto vref =
        host_array<3>(vs, [&](const Index<3>& g) { return ref[std::size_t(((g[0] + 1) * 6 + g[1]) * 7 + 2 * g[2])]; });
    expect_all(all_close(spmd::allgather(spmd::sum(v, spmd::axis(1))),
                         ref_reduce<3>(vs, vref, {false, true, false}, 0.0, add), 1e-14),
               ("sum of a slice, axis 1" + where).c_str());
  }
  // integers: the mean is double; sums of bool count
  auto n = spmd::arange<int>(world(), 12);
  Array<int, 2> m2(Distribution<2>(world(), {3, 4}));
  m2 = spmd::astype<int>(spmd::indices(m2.shape(), 0) * 4 + spmd::indices(m2.shape(), 1));
  auto mean0 = spmd::mean(m2, spmd::axis(0));
  static_assert(std::is_same_v<decltype(mean0), Array<double, 1>>, "mean of int is double");
  expect_all(all_close(spmd::allgather(mean0), {4.0, 5.0, 6.0, 7.0}, 0.0), "mean of int over axis 0");
  auto b = spmd::sum(m2 > 5, spmd::axis(1));
  static_assert(std::is_same_v<decltype(b), Array<index_t, 1>>, "sum of bool counts");
  expect_all(all_close(as_double(spmd::allgather(b)), {0.0, 2.0, 4.0}, 0.0), "sum of bool over axis 1");
  EXPECT_EQ(spmd::sum(n), 66);
}

/// Serial argmin (Less) / argmax of `v` (row-major, `shape`) along `axis`: NumPy's first
/// occurrence, and the first NaN when there is one; in row-major order of the kept axes.
template <int N>
std::vector<double> ref_arg(const Index<N>& shape, const std::vector<double>& v, int axis, bool less) {
  Index<N> oshape = shape;
  oshape[axis] = 1;
  std::vector<double> best(static_cast<std::size_t>(spmd::Box<N>{Index<N>{}, oshape}.size()), 0.0);
  std::vector<index_t> at(best.size(), -1);
  std::size_t t = 0;
  spmd::for_each_index(spmd::Box<N>{Index<N>{}, shape}, [&](const Index<N>& g) {
    index_t o = 0;
    for (int a = 0; a < N; ++a) o = o * oshape[a] + (a == axis ? 0 : g[a]);
    const double x = v[t++];
    auto& b = best[std::size_t(o)];
    auto& j = at[std::size_t(o)];
    const bool take = j < 0 || (!std::isnan(b) && (std::isnan(x) || (less ? x < b : x > b)));
    if (take) {
      b = x;
      j = g[axis];
    }
  });
  return std::vector<double>(at.begin(), at.end());
}

void ArgMinMax() {
  const int p = world().size();
  // 2-D, 9 x 8: few distinct values, so the extremum of a column or row appears several times,
  // in blocks of different ranks; column 3 and row 4 hold NaNs (the first NaN wins), column 5 is
  // constant (index 0 on the first rank).
  const Index<2> shape{9, 8};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto ref = host_array<2>(shape, [&](const Index<2>& g) {
    if (g[1] == 3 && (g[0] == 5 || g[0] == 7)) return nan;
    if (g[0] == 4 && g[1] == 6) return nan;
    if (g[1] == 5) return 1.0;
    return double((g[0] * 5 + g[1] * 3 + 2) % 4);
  });
  for (const auto& d : {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({p, 1})),
                        Distribution<2>(world(), shape, spmd::grid({1, p}), spmd::halo(1))}) {
    const auto a = from_host<2>(d, ref, -1e300);
    const std::string where = " on " + d.describe();
    for (int axis : {0, 1}) {
      auto i0 = spmd::argmin(a, spmd::axis(axis));
      static_assert(std::is_same_v<decltype(i0), Array<index_t, 1>>, "argmin gives index_t");
      expect_all(all_close(as_double(spmd::allgather(i0)), ref_arg<2>(shape, ref, axis, true), 0.0),
                 ("argmin axis " + std::to_string(axis) + where).c_str());
      auto i1 = spmd::argmax(a, spmd::axis(axis - 2), spmd::keepdims);
      EXPECT_EQ(i1.shape(), (axis == 0 ? Index<2>{1, 8} : Index<2>{9, 1}));
      expect_all(all_close(as_double(spmd::allgather(i1)), ref_arg<2>(shape, ref, axis, false), 0.0),
                 ("argmax axis " + std::to_string(axis - 2) + " keepdims" + where).c_str());
    }
    // of an expression (no NaN in -|a|: NaNs stay NaN) and on an execution space instance
    std::vector<double> neg(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) neg[i] = -2.0 * ref[i];
    expect_all(
        all_close(as_double(spmd::allgather(spmd::argmin(Kokkos::DefaultExecutionSpace(), -2.0 * a, spmd::axis(0)))),
                  ref_arg<2>(shape, neg, 0, true), 0.0),
        ("argmin(-2 a, axis 0)" + where).c_str());
    // argmax of a bool mask: the first true along the axis (0 where none is)
    std::vector<double> mask(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) mask[i] = ref[i] > 1.5 ? 1.0 : 0.0;
    expect_all(all_close(as_double(spmd::allgather(spmd::argmax(a > 1.5, spmd::axis(0)))),
                         ref_arg<2>(shape, mask, 0, false), 0.0),
               ("argmax(a > 1.5, axis 0)" + where).c_str());
  }
  // 3-D on (1, p, 1): the middle axis cut, ties across ranks; a slice operand
  const Index<3> s3{3, 7, 4};
  const auto r3 = host_array<3>(s3, [](const Index<3>& g) { return double((g[0] + 2 * g[1] + 3 * g[2]) % 3); });
  const auto b = from_host<3>(Distribution<3>(world(), s3, spmd::grid({1, p, 1})), r3);
  expect_all(all_close(as_double(spmd::allgather(spmd::argmax(b, spmd::axis(1)))), ref_arg<3>(s3, r3, 1, false), 0.0),
             "argmax of 3-D, axis 1");
  const Index<3> v3{3, 6, 4};
  const auto rv =
      host_array<3>(v3, [&](const Index<3>& g) { return r3[std::size_t((g[0] * 7 + g[1] + 1) * 4 + g[2])]; });
  expect_all(
      all_close(
          as_double(spmd::allgather(spmd::argmin(b(spmd::all, spmd::slice(1, spmd::none), spmd::all), spmd::axis(1)))),
          ref_arg<3>(v3, rv, 1, true), 0.0),
      "argmin of a slice, axis 1");
  // 1-D: the index itself on every rank; ties across rank boundaries (the minimum 0 at 3, 7, 11)
  std::vector<double> r1(13);
  for (std::size_t i = 0; i < r1.size(); ++i) r1[i] = double((i + 1) % 4);
  const auto c = from_host<1>(Distribution<1>(world(), {13}), r1);
  const index_t m = spmd::argmin(c, spmd::axis(0));
  const index_t x = spmd::argmax(c, spmd::axis(-1));
  expect_all(m == 3 && x == 2, "argmin / argmax of 1-D");
  auto k = spmd::argmax(c, spmd::axis(0), spmd::keepdims);
  expect_all(k.shape() == Index<1>{1} && spmd::allgather(k) == std::vector<index_t>{2}, "argmax of 1-D keepdims");
}

void Errors() {
  auto a = spmd::zeros<double>(world(), {4, 5});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sum(a, spmd::axis(2)), "axis 2 is out of bounds for an operand of shape {4, 5}");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sum(a, spmd::axis(-3)), "axis -3 is out of bounds");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sum(a, spmd::axes(1, -1), spmd::keepdims), "named twice");
  auto z = spmd::zeros<double>(world(), {0, 3});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::max(z, spmd::axis(0)), "zero-size reduction");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::argmin(a, spmd::axis(2)), "spmd::argmin: axis 2 is out of bounds");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::argmax(a, spmd::axis(-3), spmd::keepdims), "spmd::argmax: axis -3 is out");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::argmin(z, spmd::axis(0)), "attempt to get argmin of an empty sequence");
  auto s = spmd::sum(z, spmd::axis(0));  // NumPy: zeros of shape (3,)
  expect_all(all_close(spmd::allgather(s), {0.0, 0.0, 0.0}, 0.0), "sum over a zero-length axis");
}

/// The device forms of the local fold, taken on the CPU here under the testing knob: one work
/// item per result point, and the chunked one (AxisChunks: chunks of a point's values over vector
/// groups of lanes, a second kernel joining them; impl::AxisWork::chunked picks). The 9 x 8
/// arrays (axis 0: two chunks per column), tall and wide ones (rows of 1000 in 7 chunks of 32
/// lanes; 5 columns of 1000), and the 3-D multi-axis folds.
void DevicePaths() {
  spmd::testing::KnobsGuard guard;
  spmd::testing::knobs().point_items = true;
  TwoD();
  TwoD({5, 1000});
  TwoD({1000, 5});
  ThreeDSlicesTypes();
}

}  // namespace axis_tests

TEST(AxisReduce, TwoD) {
  axis_tests::TwoD();
}
TEST(AxisReduce, ThreeDSlicesTypes) {
  axis_tests::ThreeDSlicesTypes();
}
TEST(AxisReduce, ArgMinMax) {
  axis_tests::ArgMinMax();
}
TEST(AxisReduce, DevicePaths) {
  axis_tests::DevicePaths();
}
TEST(AxisReduce, Errors) {
  axis_tests::Errors();
}
