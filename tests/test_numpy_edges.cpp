// NumPy's rules at the edges (NumPy 1.24, Debian's /usr/bin/python3; tests/numpy_edges.py runs
// the same cases through NumPy itself), against serial references written here from those rules,
// not from the library's code:
// - min / max / norm_inf, whole and per axis: NaN when the line (the array) holds a NaN;
//   argmin / argmax, whole and per axis: the first NaN in row-major (global) order, else the
//   first occurrence. NaNs in the middle of a line, in the first and last rank's blocks, several
//   in a line, an all-NaN line; float and double; integer arrays unaffected; infinities.
// - var / std with ddof >= the count: the sum divided by max(n - ddof, 0), so inf, or NaN for a
//   zero numerator; never negative.
// - minimum / maximum element-wise: a NaN on either side gives that NaN (the first operand's when
//   both are), a signed-zero tie gives the second operand, checked on the bits (std::signbit).
//
//   the 2-D arrays are 10 x 7: rows cut 4 | 3 | 3 at 3 ranks, 3 | 3 | 2 | 2 at 4; also on the
//   grids (1, p) (columns cut) and (p, 1); the 1-D arrays have 13 elements (5 | 4 | 4 at 3 ranks).
#include "breadth_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <spmd/axis_reduce.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::expect_all;
using spmd::testing::from_host;
using spmd::testing::world;

namespace {

/// Bit-for-bit equality (NaNs included), or both NaN when `any_nan` (a reduction's NaN: its sign
/// and payload are not specified).
template <class T>
bool same(T got, T want, bool any_nan = false) {
  if (any_nan && std::isnan(got) && std::isnan(want)) return true;
  return std::memcmp(&got, &want, sizeof(T)) == 0;
}
template <class T>
bool same_all(const std::vector<T>& got, const std::vector<T>& want, bool any_nan = true) {
  if (got.size() != want.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(same(got[i], want[i], any_nan) || (!std::isnan(want[i]) && got[i] == want[i]))) return false;
  return true;
}

/// NumPy's reduction of one line (values in order) by min (Less) or max: NaN when there is one,
/// else the extremum. Written from the rule, not from the library's comparison.
template <class T>
T ref_extreme(const std::vector<T>& line, bool less) {
  for (const T x : line)
    if (std::isnan(x)) return x;
  T best = line.at(0);
  for (const T x : line) best = less ? std::min(best, x) : std::max(best, x);
  return best;
}
/// NumPy's argmin (Less) / argmax of a line: the first NaN, else the first extremum.
template <class T>
index_t ref_arg(const std::vector<T>& line, bool less) {
  for (std::size_t i = 0; i < line.size(); ++i)
    if (std::isnan(line[i])) return index_t(i);
  const T best = ref_extreme(line, less);
  for (std::size_t i = 0; i < line.size(); ++i)
    if (line[i] == best) return index_t(i);
  return -1;
}

/// The lines of a rows x cols row-major array along `axis` (0: the columns, 1: the rows).
template <class T>
std::vector<std::vector<T>> lines(const std::vector<T>& v, index_t rows, index_t cols, int axis) {
  std::vector<std::vector<T>> out(std::size_t(axis == 0 ? cols : rows));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) out[std::size_t(axis == 0 ? j : i)].push_back(v[std::size_t(i * cols + j)]);
  return out;
}

/// 10 x 7 values with NaNs: column 1 one in the middle (row 5), column 2 in row 0 (the first
/// rank's block), column 3 in row 9 (the last rank's block), column 4 three (rows 1, 6, 8),
/// column 6 all NaN; row 2 has no NaN but column 6's; rows hold NaNs at their start, middle
/// and end. The other values repeat (ties across rank boundaries) and include infinities.
template <class T>
std::vector<T> nan_grid() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  std::vector<T> v(70);
  for (index_t i = 0; i < 10; ++i)
    for (index_t j = 0; j < 7; ++j) {
      T x = T((i * 5 + j * 3 + 1) % 6) - T(2.5);
      if (i == 3 && j == 0) x = -inf;
      if (i == 7 && j == 5) x = inf;
      const bool is_nan = (j == 1 && i == 5) || (j == 2 && i == 0) || (j == 3 && i == 9) ||
                          (j == 4 && (i == 1 || i == 6 || i == 8)) || j == 6;
      v[std::size_t(i * 7 + j)] = is_nan ? nan : x;
    }
  return v;
}

template <class T>
void PerAxisSelectingReductions() {
  const int p = world().size();
  const index_t rows = 10, cols = 7;
  const std::vector<T> ref = nan_grid<T>();
  for (const auto& d :
       {Distribution<2>(world(), {rows, cols}), Distribution<2>(world(), {rows, cols}, spmd::grid({p, 1})),
        Distribution<2>(world(), {rows, cols}, spmd::grid({1, p}), spmd::halo(1))}) {
    const auto a = from_host<2, T>(d, ref, T(-1e30));
    const std::string where = " on " + d.describe();
    for (int axis : {0, 1}) {
      std::vector<T> lo, hi;
      std::vector<index_t> alo, ahi;
      for (const auto& line : lines(ref, rows, cols, axis)) {
        lo.push_back(ref_extreme(line, true));
        hi.push_back(ref_extreme(line, false));
        alo.push_back(ref_arg(line, true));
        ahi.push_back(ref_arg(line, false));
      }
      const std::string what = " axis " + std::to_string(axis) + where;
      expect_all(same_all(spmd::allgather(spmd::min(a, spmd::axis(axis))), lo), ("min" + what).c_str());
      expect_all(same_all(spmd::allgather(spmd::max(a, spmd::axis(axis), spmd::keepdims)), hi),
                 ("max keepdims" + what).c_str());
      expect_all(spmd::allgather(spmd::argmin(a, spmd::axis(axis))) == alo, ("argmin" + what).c_str());
      expect_all(spmd::allgather(spmd::argmax(a, spmd::axis(axis))) == ahi, ("argmax" + what).c_str());
      // max and argmax agree on every line (the disagreement this test was written for)
      const auto m = spmd::allgather(spmd::max(a, spmd::axis(axis)));
      const auto k = spmd::allgather(spmd::argmax(a, spmd::axis(axis)));
      bool agree = m.size() == k.size();
      for (std::size_t t = 0; agree && t < m.size(); ++t) {
        const std::size_t at = axis == 0 ? std::size_t(k[t]) * cols + t : t * cols + std::size_t(k[t]);
        agree = same(m[t], ref[at], true);
      }
      expect_all(agree, ("max == a[argmax]" + what).c_str());
    }
    // over both axes: the scalar (the whole-array path)
    expect_all(std::isnan(spmd::max(a, spmd::axes(0, 1))), ("max over both axes" + where).c_str());
    // an expression and a slice (copied first) of the same data
    std::vector<T> twice(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) twice[i] = T(2) * ref[i];
    std::vector<T> want;
    for (const auto& line : lines(twice, rows, cols, 1)) want.push_back(ref_extreme(line, true));
    expect_all(same_all(spmd::allgather(spmd::min(T(2) * a, spmd::axis(1))), want), ("min(2 a)" + where).c_str());
    using spmd::slice;
    const auto s = a(slice(0, 6), slice(0, 3));  // rows 0..5, columns 0..2: NaNs at (0, 2), (5, 1)
    std::vector<T> sub;
    for (index_t i = 0; i < 6; ++i)
      for (index_t j = 0; j < 3; ++j) sub.push_back(ref[std::size_t(i * cols + j)]);
    std::vector<T> smax;
    for (const auto& line : lines(sub, 6, 3, 0)) smax.push_back(ref_extreme(line, false));
    expect_all(same_all(spmd::allgather(spmd::max(s, spmd::axis(0))), smax), ("max of a slice" + where).c_str());
  }
}

template <class T>
void WholeArraySelectingReductions() {
  const index_t n = 13;
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const Distribution<1> d(world(), {n});
  // a NaN at the first element (rank 0's block), in the middle, at the last (the last rank's
  // block), several, all; none
  const std::vector<std::vector<index_t>> cases = {{0},        {6}, {12},
                                                   {4, 9, 11}, {},  {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};
  for (const auto& at : cases) {
    std::vector<T> ref(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) ref[std::size_t(i)] = T((i * 7) % 5) - T(2);  // ties across ranks
    for (const index_t i : at) ref[std::size_t(i)] = nan;
    const auto a = from_host<1, T>(d, ref);
    std::string where = " with NaNs at {";
    for (const index_t i : at) where += std::to_string(i) + " ";
    where += "}";
    std::vector<T> mag(ref);
    for (auto& x : mag) x = std::abs(x);
    expect_all(same(spmd::min(a), ref_extreme(ref, true), true), ("min" + where).c_str());
    expect_all(same(spmd::max(a), ref_extreme(ref, false), true), ("max" + where).c_str());
    expect_all(same(spmd::norm_inf(a), ref_extreme(mag, false), true), ("norm_inf" + where).c_str());
    expect_all(spmd::argmin(a)[0] == ref_arg(ref, true), ("argmin" + where).c_str());
    expect_all(spmd::argmax(a)[0] == ref_arg(ref, false), ("argmax" + where).c_str());
    // an expression: the same NaNs (NaN + 1 is NaN)
    expect_all(same(spmd::max(a + T(1)), T(ref_extreme(ref, false) + T(1)), true), ("max(a + 1)" + where).c_str());
    // 2-D: the same values as 1 x 13 on the grid (1, p): the NaN on any rank
    const auto b = from_host<2, T>(Distribution<2>(world(), {1, n}, spmd::grid({1, world().size()})), ref);
    expect_all(spmd::argmax(b)[1] == ref_arg(ref, false), ("argmax 2-D" + where).c_str());
  }
  // infinities: the min of +infs is +inf (not the largest finite value), argmin 0; likewise max
  const auto pinf = spmd::full<T>(d, inf), ninf = spmd::full<T>(d, -inf);
  EXPECT_EQ(spmd::min(pinf), inf);
  EXPECT_EQ(spmd::argmin(pinf)[0], 0);
  EXPECT_EQ(spmd::max(ninf), -inf);
  EXPECT_EQ(spmd::argmax(ninf)[0], 0);
  EXPECT_EQ(spmd::max(pinf), inf);
  EXPECT_EQ(spmd::min(spmd::min(pinf, spmd::axis(0), spmd::keepdims)), inf);
  EXPECT_EQ(spmd::argmin(pinf, spmd::axis(0)), 0);
}

}  // namespace

TEST(NumPyEdges, PerAxisMinMaxArgPropagateNaNDouble) {
  PerAxisSelectingReductions<double>();
}
TEST(NumPyEdges, PerAxisMinMaxArgPropagateNaNFloat) {
  PerAxisSelectingReductions<float>();
}
TEST(NumPyEdges, WholeArrayMinMaxArgPropagateNaNDouble) {
  WholeArraySelectingReductions<double>();
}
TEST(NumPyEdges, WholeArrayMinMaxArgPropagateNaNFloat) {
  WholeArraySelectingReductions<float>();
}

TEST(NumPyEdges, IntegerArraysUnaffected) {
  const index_t rows = 10, cols = 7;
  std::vector<int> ref(std::size_t(rows * cols));
  for (index_t t = 0; t < rows * cols; ++t) ref[std::size_t(t)] = int((t * 37) % 23) - 11;
  ref[5] = std::numeric_limits<int>::min();
  ref[66] = std::numeric_limits<int>::max();
  const auto a = from_host<2, int>(Distribution<2>(world(), {rows, cols}), ref);
  for (int axis : {0, 1}) {
    std::vector<int> lo, hi;
    std::vector<index_t> alo;
    for (const auto& line : lines(ref, rows, cols, axis)) {
      lo.push_back(*std::min_element(line.begin(), line.end()));
      hi.push_back(*std::max_element(line.begin(), line.end()));
      alo.push_back(index_t(std::min_element(line.begin(), line.end()) - line.begin()));
    }
    expect_all(spmd::allgather(spmd::min(a, spmd::axis(axis))) == lo, "int min per axis");
    expect_all(spmd::allgather(spmd::max(a, spmd::axis(axis))) == hi, "int max per axis");
    expect_all(spmd::allgather(spmd::argmin(a, spmd::axis(axis))) == alo, "int argmin per axis");
  }
  EXPECT_EQ(spmd::min(a), std::numeric_limits<int>::min());
  EXPECT_EQ(spmd::max(a), std::numeric_limits<int>::max());
  EXPECT_EQ(spmd::argmax(a)[0], 9);
  EXPECT_EQ(spmd::argmax(a)[1], 3);
}

namespace {
/// NumPy's variance of a line with ddof: sum((x - mean)^2) / max(n - ddof, 0), computed here in
/// long double and rounded (the library's two passes agree to rounding).
double ref_var(const std::vector<double>& line, index_t ddof) {
  long double m = 0;
  for (const double x : line) m += x;
  m /= static_cast<long double>(line.size());
  long double s = 0;
  for (const double x : line) s += (x - m) * (x - m);
  const index_t n = index_t(line.size());
  const long double div = static_cast<long double>(n - ddof > 0 ? n - ddof : 0);
  return static_cast<double>(s / div);
}
bool close_or_special(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= 1e-13 * std::max(1.0, std::abs(want));
}
}  // namespace

TEST(NumPyEdges, VarStdWithDdofAtOrAboveTheCount) {
  // 6 x 5: row 3 constant (0 / 0 when ddof >= 5), the others not (inf)
  const index_t rows = 6, cols = 5;
  std::vector<double> ref(std::size_t(rows * cols));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) ref[std::size_t(i * cols + j)] = i == 3 ? 2.5 : std::sin(1.0 + i + 0.3 * j * j);
  const int p = world().size();
  for (const auto& d :
       {Distribution<2>(world(), {rows, cols}), Distribution<2>(world(), {rows, cols}, spmd::grid({1, p}))}) {
    const auto a = from_host<2>(d, ref);
    const std::string where = " on " + d.describe();
    for (const index_t ddof : {index_t(0), index_t(1), index_t(4), index_t(5), index_t(6), index_t(40)}) {
      const std::string what = " ddof " + std::to_string(ddof) + where;
      for (int axis : {0, 1}) {
        const auto ls = lines(ref, rows, cols, axis);
        const auto v = spmd::allgather(spmd::var(a, spmd::axis(axis), ddof));
        const auto s = spmd::allgather(spmd::std(a, spmd::axis(axis), spmd::keepdims, ddof));
        bool ok = v.size() == ls.size() && s.size() == ls.size();
        for (std::size_t t = 0; ok && t < ls.size(); ++t) {
          const double want = ref_var(ls[t], ddof);
          ok = close_or_special(v[t], want) && close_or_special(s[t], std::sqrt(want)) && !(v[t] < 0);
        }
        expect_all(ok, ("var/std axis " + std::to_string(axis) + what).c_str());
      }
      // over every axis: the scalar path (30 values: inf from ddof 30 on)
      const double want = ref_var(ref, ddof), got = spmd::var(a, spmd::axes(0, 1), ddof);
      expect_all(close_or_special(got, want) && !(got < 0), ("var over both axes" + what).c_str());
    }
    const double v30 = spmd::var(a, spmd::axes(0, 1), 30), v31 = spmd::std(a, spmd::axes(0, 1), 31);
    expect_all(std::isinf(v30) && v30 > 0 && std::isinf(v31) && v31 > 0, ("var/std ddof = n, n + 1" + where).c_str());
  }
  // a constant array: 0 / 0 is NaN for ddof >= n (NumPy's value), 0 below
  const auto c = spmd::full<double>(world(), {7}, 1.25);
  EXPECT_EQ(spmd::var(c, spmd::axis(0), 6), 0.0);
  EXPECT_TRUE(std::isnan(spmd::var(c, spmd::axis(0), 7)));
  EXPECT_TRUE(std::isnan(spmd::std(c, spmd::axis(0), 9)));
}

namespace {
/// NumPy's minimum (Less) / maximum of one pair, case by case: a's NaN, else b's NaN, else the
/// strictly smaller (larger), else (a tie, signed zeros included) b.
template <class T>
T ref_select(T a, T b, bool less) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (less ? a < b : b < a) return a;
  return b;
}

template <class T>
void ElementwiseMinMax() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const T mnan = -nan;  // a NaN with the sign bit set: which NaN comes back is checked too
  // pairs (a, b), each on a different position: so the pairs fall on every rank's block
  const std::vector<std::pair<T, T>> pairs = {
      {T(-0.0), T(0.0)}, {T(0.0), T(-0.0)}, {T(-0.0), T(-0.0)}, {T(0.0), T(0.0)}, {nan, T(1)},
      {T(1), nan},       {nan, mnan},       {mnan, nan},        {nan, T(-0.0)},   {T(0.0), mnan},
      {T(1), T(2)},      {T(2), T(1)},      {-inf, inf},        {inf, nan},       {T(3), T(3)}};
  std::vector<T> av, bv;
  for (const auto& [x, y] : pairs) {
    av.push_back(x);
    bv.push_back(y);
  }
  const index_t n = index_t(pairs.size());
  const Distribution<1> d(world(), {n});
  const auto a = from_host<1, T>(d, av), b = from_host<1, T>(d, bv);
  std::vector<T> lo, hi;
  for (const auto& [x, y] : pairs) {
    lo.push_back(ref_select(x, y, true));
    hi.push_back(ref_select(x, y, false));
  }
  const auto bits = [](const std::vector<T>& got, const std::vector<T>& want) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (!same(got[i], want[i]) || std::signbit(got[i]) != std::signbit(want[i])) return false;
    return true;
  };
  Array<T, 1> r(d);
  r = spmd::minimum(a, b);
  expect_all(bits(spmd::allgather(r), lo), "minimum(a, b) bit for bit");
  r = spmd::maximum(a, b);
  expect_all(bits(spmd::allgather(r), hi), "maximum(a, b) bit for bit");
  // a scalar operand on either side
  r = spmd::maximum(a, T(0.0));
  std::vector<T> want;
  for (const T x : av) want.push_back(ref_select(x, T(0.0), false));
  expect_all(bits(spmd::allgather(r), want), "maximum(a, 0.0) bit for bit");
  r = spmd::minimum(T(-0.0), b);
  want.clear();
  for (const T y : bv) want.push_back(ref_select(T(-0.0), y, true));
  expect_all(bits(spmd::allgather(r), want), "minimum(-0.0, b) bit for bit");
  // the explicit cases, spelled out (NumPy 1.24: np.maximum(-0.0, 0.0) is 0.0, np.maximum(0.0,
  // -0.0) is -0.0, np.minimum(0.0, -0.0) is -0.0, np.minimum(-0.0, 0.0) is 0.0)
  const auto mx = spmd::allgather(Array<T, 1>(spmd::maximum(a, b)));
  const auto mn = spmd::allgather(Array<T, 1>(spmd::minimum(a, b)));
  EXPECT_FALSE(std::signbit(mx[0]));
  EXPECT_TRUE(std::signbit(mx[1]));
  EXPECT_FALSE(std::signbit(mn[0]));
  EXPECT_TRUE(std::signbit(mn[1]));
  EXPECT_TRUE(std::isnan(mn[4]) && std::isnan(mx[5]) && std::isnan(mx[13]));
  EXPECT_FALSE(std::signbit(mx[6]));  // both NaN: the first operand's (+NaN)
  EXPECT_TRUE(std::signbit(mn[7]));   // (-NaN)
}
}  // namespace

TEST(NumPyEdges, ElementwiseMinimumMaximumDouble) {
  ElementwiseMinMax<double>();
}
TEST(NumPyEdges, ElementwiseMinimumMaximumFloat) {
  ElementwiseMinMax<float>();
}
