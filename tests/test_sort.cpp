// sort, argsort and unique (sort.hpp) against serial references computed here with
// std::stable_sort (NumPy's order: NaNs last; stable: equal keys in index order) and std::unique:
// random keys with many duplicates, NaNs, already sorted, reversed and constant input, integer
// keys, several sizes including 0 and sizes below the rank count (empty blocks), a halo on the
// input, a view and an expression operand; the result laid out in the input's balanced blocks.
//
//   n = 3 at 4 ranks: ranks 0, 1, 2 own one key each, rank 3 none; n = 1000 at 3 ranks:
//   334 | 333 | 333 keys.
#include "breadth_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <spmd/sort.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::expect_all;
using spmd::testing::from_host;
using spmd::testing::world;

namespace {

/// NumPy's order of keys: a NaN after every number, NaNs equivalent to each other.
template <class T>
bool numpy_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

/// The stable argsort of v (the serial reference).
template <class T>
std::vector<index_t> ref_argsort(const std::vector<T>& v) {
  std::vector<index_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), index_t(0));
  std::stable_sort(idx.begin(), idx.end(),
                   [&](index_t i, index_t j) { return numpy_less(v[std::size_t(i)], v[std::size_t(j)]); });
  return idx;
}

/// Equal element by element, NaN equal to NaN (bit patterns of numbers compared as values).
template <class T>
bool same_keys(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (!(a[i] == b[i])) return false;
  }
  return true;
}

/// np.unique: sorted, one of each value, one NaN for all NaNs.
template <class T>
std::vector<T> ref_unique(const std::vector<T>& v) {
  std::vector<T> s;
  for (index_t i : ref_argsort(v)) s.push_back(v[std::size_t(i)]);
  std::vector<T> u;
  for (T x : s) {
    if (!u.empty()) {
      const T y = u.back();
      bool same = x == y;
      if constexpr (std::is_floating_point_v<T>) same = same || (std::isnan(x) && std::isnan(y));
      if (same) continue;
    }
    u.push_back(x);
  }
  return u;
}

/// A small deterministic generator (the same on every rank).
struct Lcg {
  std::uint64_t s;
  std::uint64_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return s >> 33;
  }
};

enum class Kind { random_dups, random_wide, nans, sorted, reversed, constant };
const char* name(Kind k) {
  switch (k) {
    case Kind::random_dups:
      return "random keys with duplicates";
    case Kind::random_wide:
      return "random keys";
    case Kind::nans:
      return "keys with NaNs";
    case Kind::sorted:
      return "sorted keys";
    case Kind::reversed:
      return "reversed keys";
    case Kind::constant:
      return "constant keys";
  }
  return "?";
}

std::vector<double> make_keys(Kind k, index_t n, std::uint64_t seed) {
  Lcg g{seed};
  std::vector<double> v(static_cast<std::size_t>(n));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (index_t i = 0; i < n; ++i) {
    double x = 0;
    switch (k) {
      case Kind::random_dups:
        x = double(g.next() % 7) - 3.0;
        break;
      case Kind::random_wide:
        x = double(g.next() % 1000003) * 1e-3 - 500.0;
        break;
      case Kind::nans:
        x = (g.next() % 5 == 0) ? nan : double(g.next() % 4);
        break;
      case Kind::sorted:
        x = double(i / 3);
        break;
      case Kind::reversed:
        x = double(n - i);
        break;
      case Kind::constant:
        x = 2.5;
        break;
    }
    if (k == Kind::random_dups && i % 11 == 5) x = -0.0;  // equal to 0.0
    v[std::size_t(i)] = x;
  }
  return v;
}

/// sort, argsort and unique of `a` (holding `v`) against the references; `what` names the case.
template <class T>
void check_all_three(const Array<T, 1>& a, const std::vector<T>& v, const std::string& what) {
  const auto s = spmd::sort(a);
  const auto i = spmd::argsort(a);
  const auto u = spmd::unique(a);
  static_assert(std::is_same_v<std::decay_t<decltype(i)>, Array<index_t, 1>>, "argsort gives index_t");
  const auto idx = ref_argsort(v);
  std::vector<T> sorted;
  for (index_t k : idx) sorted.push_back(v[std::size_t(k)]);
  const auto uref = ref_unique(v);
  // every check of the case, then one agreement (collectives are slow at 3-4 ranks on 2 cores)
  const std::vector<T> got_s = spmd::allgather(s), got_u = spmd::allgather(u);
  const std::vector<index_t> got_i = spmd::allgather(i);
  std::string bad;
  // the result is laid out in the input's balanced blocks
  if (!(s.shape() == a.shape() && s.owned() == a.owned() && i.owned() == a.owned())) bad += " layout";
  if (!same_keys(got_s, sorted)) bad += " sort";
  if (got_i != idx) bad += " argsort";
  if (!(u.shape()[0] == index_t(uref.size()) && same_keys(got_u, uref))) bad += " unique";
  expect_all(bad.empty(), (what + ": wrong" + bad).c_str());
}
}  // namespace

TEST(Sort, DoublesOfEveryKindAndSize) {
  const int p = world().size();
  std::uint64_t seed = 1;
  // (kept to 18 cases: each takes about 10 collectives, slow at 3-4 ranks on 2 cores)
  const std::vector<Kind> every{Kind::random_dups, Kind::random_wide, Kind::nans,
                                Kind::sorted,      Kind::reversed,    Kind::constant};
  const std::vector<std::pair<index_t, std::vector<Kind>>> cases{
      {0, {Kind::random_dups}},
      {1, {Kind::random_dups, Kind::nans}},
      {3, {Kind::random_dups, Kind::nans, Kind::constant}},
      {7, {Kind::random_dups, Kind::nans, Kind::reversed}},
      {100, every},
      {1000, {Kind::random_dups, Kind::random_wide, Kind::nans}}};
  for (const auto& [n, kinds] : cases) {
    for (Kind k : kinds) {
      const auto v = make_keys(k, n, seed++);
      const auto a = from_host<1>(Distribution<1>(world(), {n}), v);
      check_all_three(a, v,
                      std::string(name(k)) + ", n = " + std::to_string(n) + " at " + std::to_string(p) + " ranks");
    }
  }
}

TEST(Sort, IntegersHaloViewsAndExpressions) {
  // integer keys with duplicates
  const index_t n = 257;
  std::vector<int> iv(n);
  Lcg g{42};
  for (auto& x : iv) x = int(g.next() % 50) - 25;
  const auto ia = from_host<1, int>(Distribution<1>(world(), {n}), iv, -777);
  check_all_three(ia, iv, "int keys");
  // an input with a halo (the halo's garbage must not be sorted)
  const auto v = make_keys(Kind::random_dups, 60, 7);
  const auto h = from_host<1>(Distribution<1>(world(), {60}, spmd::halo(1)), v, 1e300);
  check_all_three(h, v, "an input with a halo");
  // a view: x[5:50:3]; and an expression: -2 * x
  const std::vector<double> w(v.begin(), v.end());
  std::vector<double> sub, neg;
  for (index_t k = 5; k < 50; k += 3) sub.push_back(w[std::size_t(k)]);
  for (double x : w) neg.push_back(-2.0 * x);
  const auto sv = spmd::sort(h(spmd::slice(5, 50, 3)));
  const auto iv2 = spmd::argsort(h(spmd::slice(5, 50, 3)));
  std::vector<double> sref;
  const auto sidx = ref_argsort(sub);
  for (index_t k : sidx) sref.push_back(sub[std::size_t(k)]);
  expect_all(same_keys(spmd::allgather(sv), sref), "sort of a strided view");
  expect_all(spmd::allgather(iv2) == sidx, "argsort of a strided view: the view's indices");
  std::vector<double> nref;
  for (index_t k : ref_argsort(neg)) nref.push_back(neg[std::size_t(k)]);
  expect_all(same_keys(spmd::allgather(spmd::sort(-2.0 * h)), nref), "sort of an expression");
  expect_all(same_keys(spmd::allgather(spmd::unique(-2.0 * h)), ref_unique(neg)), "unique of an expression");
  // the execution-space-first form
  const auto se = spmd::sort(Kokkos::DefaultExecutionSpace(), h);
  std::vector<double> href;
  for (index_t k : ref_argsort(v)) href.push_back(v[std::size_t(k)]);
  expect_all(same_keys(spmd::allgather(se), href), "sort on an execution space instance");
}

TEST(Sort, Errors) {
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sort(Array<double, 1>()), "spmd::sort: operand is a null array");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::unique(Array<int, 1>()), "spmd::unique: operand is a null array");
}
