// NumPy broadcasting in expressions (expr.hpp) against a serial reference computed here: a row
// (m,) against (n, m), a keepdims mean (1, m), a column (n, 1), 3-D (n, m, k) against (m, 1),
// (k,) and (n, 1, k), views and slices as operands (reversed, strided, a row of the destination
// itself), fused with where and math functions, generators of fewer axes, reductions whose first
// operand broadcasts or whose operands all do, the cached plan (built once, reused, each rank
// receiving only its part), assignments whose right side is stretched to the destination
// (NumPy's `c[...] = row`), the device code paths, and shapes that do not broadcast.
//
//   a is 9 x 8 on the automatic grid (rows 3 | 3 | 3 at 3 ranks, a 2 x 2 grid at 4 ranks), on
//   (1, p) and (p, 1) with a halo of 1; the row lives on its own 1-D distribution (cut into p
//   blocks that do not line up with a's column blocks), so every rank's part of the row arrives
//   partly from other ranks; 2 x 3 on (p, 1) leaves ranks without rows at 3 and 4 ranks.
#include "breadth_test.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <spmd/axis_reduce.hpp>
#include <spmd/creation.hpp>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::slice;
using spmd::testing::all_close;
using spmd::testing::expect_all;
using spmd::testing::from_host;
using spmd::testing::host_array;
using spmd::testing::world;

namespace {

/// NumPy's broadcast of `v` (row-major, shape `in`) to the shape `out` (serial reference).
template <int R, int M>
std::vector<double> expand(const Index<R>& in, const std::vector<double>& v, const Index<M>& out) {
  std::vector<double> r;
  spmd::for_each_index(spmd::Box<M>{Index<M>{}, out}, [&](const Index<M>& g) {
    index_t o = 0;
    for (int i = 0; i < R; ++i) o = o * in[i] + (in[i] == 1 ? 0 : g[M - R + i]);
    r.push_back(v[static_cast<std::size_t>(o)]);
  });
  return r;
}

template <class F>
std::vector<double> zip(const std::vector<double>& x, const std::vector<double>& y, F f) {
  std::vector<double> r(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) r[i] = f(x[i], y[i]);
  return r;
}

std::vector<double> values(index_t n, double s, double t) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) v[std::size_t(i)] = std::sin(s * double(i) + t) + 0.25 * double(i % 3);
  return v;
}

std::vector<Distribution<2>> grids(const Index<2>& shape) {
  const int p = world().size();
  return {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({1, p}), spmd::halo(1)),
          Distribution<2>(world(), shape, spmd::grid({p, 1}), spmd::halo(1))};
}

const auto sub = [](double x, double y) { return x - y; };
const auto mul = [](double x, double y) { return x * y; };
const auto add = [](double x, double y) { return x + y; };

}  // namespace

namespace bcast_tests {

void RowAgainstMatrix() {
  const Index<2> shape{9, 8};
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return std::cos(0.3 * g[0] + 0.7 * g[1]); });
  const auto rr = values(8, 0.9, 0.1);
  const auto want = zip(ra, expand<1, 2>({8}, rr, shape), sub);
  for (const auto& d : grids(shape)) {
    const std::string where = " on " + d.describe();
    const auto a = from_host<2>(d, ra);
    for (const auto& rd : {Distribution<1>(world(), {8}), Distribution<1>(world(), {8}, spmd::halo(1))}) {
      const auto row = from_host<1>(rd, rr);
      Array<double, 2> c(d, spmd::label("c"));
      c.fill_with_halo(spmd::testing::sentinel);
      c = a - row;
      expect_all(all_close(spmd::allgather(c), want, 0), ("a - row" + where).c_str());
      if (d.halo()[0] > 0) {  // the halo is not written
        const auto h = c.local_with_halo();
        auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), h);
        expect_all(host(0, 0) == spmd::testing::sentinel, ("halo untouched" + where).c_str());
      }
      // the row first, with an execution space instance
      spmd::assign(Kokkos::DefaultExecutionSpace(), c, row * 2.0 + a);
      expect_all(all_close(spmd::allgather(c),
                           zip(expand<1, 2>({8}, rr, shape), ra, [](double r, double x) { return r * 2.0 + x; }), 0),
                 ("row * 2 + a" + where).c_str());
      // the expression's shape is the broadcast shape: a new array from it
      const Array<double, 2> e(row + a);
      EXPECT_EQ(e.shape(), shape);
      expect_all(all_close(spmd::allgather(e), zip(expand<1, 2>({8}, rr, shape), ra, add), 0),
                 ("Array(row + a)" + where).c_str());
    }
  }
}

void MeanSubtraction() {
  const Index<2> shape{9, 8};
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return 0.5 * g[0] * g[0] - std::sin(1.1 * g[1]); });
  std::vector<double> mean(8, 0.0);
  for (index_t i = 0; i < 9; ++i)
    for (index_t j = 0; j < 8; ++j) mean[std::size_t(j)] += ra[std::size_t(i * 8 + j)] / 9.0;
  const auto want = zip(ra, expand<1, 2>({8}, mean, shape), sub);
  for (const auto& d : grids(shape)) {
    const std::string where = " on " + d.describe();
    const auto a = from_host<2>(d, ra);
    Array<double, 2> c(d);
    auto m = spmd::mean(a, spmd::axis(0), spmd::keepdims);  // shape (1, 8)
    EXPECT_EQ(m.shape(), (Index<2>{1, 8}));
    c = a - m;
    expect_all(all_close(spmd::allgather(c), want, 1e-14), ("a - mean(a, axis 0, keepdims)" + where).c_str());
    c = a - spmd::mean(a, spmd::axis(0));  // shape (8,)
    expect_all(all_close(spmd::allgather(c), want, 1e-14), ("a - mean(a, axis 0)" + where).c_str());
    // the column means: (9, 1)
    std::vector<double> cm(9, 0.0);
    for (index_t i = 0; i < 9; ++i)
      for (index_t j = 0; j < 8; ++j) cm[std::size_t(i)] += ra[std::size_t(i * 8 + j)] / 8.0;
    c = a - spmd::mean(a, spmd::axis(1), spmd::keepdims);
    expect_all(all_close(spmd::allgather(c), zip(ra, expand<2, 2>({9, 1}, cm, shape), sub), 1e-14),
               ("a - mean(a, axis 1, keepdims)" + where).c_str());
  }
}

void ColumnAndOuter() {
  const Index<2> shape{9, 8};
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return 1.0 + 0.1 * g[0] - 0.2 * g[1]; });
  const auto rc = values(9, 0.4, 0.3);
  const auto rr = values(8, 1.3, -0.2);
  for (const auto& d : grids(shape)) {
    const std::string where = " on " + d.describe();
    const auto a = from_host<2>(d, ra);
    const auto col = from_host<2>(Distribution<2>(world(), {9, 1}, spmd::halo(1)), rc);
    const auto row = from_host<2>(Distribution<2>(world(), {1, 8}), rr);
    Array<double, 2> c(d);
    c = a * col;
    expect_all(all_close(spmd::allgather(c), zip(ra, expand<2, 2>({9, 1}, rc, shape), mul), 0),
               ("a * col" + where).c_str());
    // no operand of the whole shape: an outer sum
    c = col + row;
    const auto outer = zip(expand<2, 2>({9, 1}, rc, shape), expand<2, 2>({1, 8}, rr, shape), add);
    expect_all(all_close(spmd::allgather(c), outer, 0), ("col + row" + where).c_str());
    // reductions: the first operand broadcasts; every operand broadcasts
    double s = 0, s2 = 0, mx = -1e300;
    for (std::size_t i = 0; i < outer.size(); ++i) {
      s += rc[i / 8] * ra[i];
      s2 += outer[i];
      mx = std::max(mx, outer[i]);
    }
    expect_all(std::abs(spmd::sum(col * a) - s) <= 1e-12 * std::abs(s), ("sum(col * a)" + where).c_str());
    expect_all(std::abs(spmd::sum(col + row) - s2) <= 1e-12 * std::abs(s2), ("sum(col + row)" + where).c_str());
    expect_all(spmd::max(col + row) == mx, ("max(col + row)" + where).c_str());
    const Index<2> at = spmd::argmax(row + col);
    expect_all(outer[std::size_t(at[0] * 8 + at[1])] == mx, ("argmax(row + col)" + where).c_str());
    const auto whole = spmd::copy(col - row);
    EXPECT_EQ(whole.shape(), shape);
    expect_all(all_close(spmd::allgather(whole),
                         zip(expand<2, 2>({9, 1}, rc, shape), expand<2, 2>({1, 8}, rr, shape), sub), 0),
               ("copy(col - row)" + where).c_str());
  }
}

void ThreeD() {
  const int p = world().size();
  const Index<3> shape{5, 6, 7};
  const auto ra =
      host_array<3>(shape, [](const Index<3>& g) { return std::sin(0.2 * g[0] + 0.5 * g[1] - 0.3 * g[2]); });
  const auto r61 = values(6, 0.7, 0.2);
  const auto r7 = values(7, -0.6, 0.5);
  const auto r517 = values(35, 0.3, 0.9);
  for (const auto& d : {Distribution<3>(world(), shape), Distribution<3>(world(), shape, spmd::grid({1, 1, p})),
                        Distribution<3>(world(), shape, spmd::grid({1, p, 1}), spmd::halo(1))}) {
    const std::string where = " on " + d.describe();
    const auto a = from_host<3>(d, ra);
    const auto b61 = from_host<2>(Distribution<2>(world(), {6, 1}), r61);
    const auto b7 = from_host<1>(Distribution<1>(world(), {7}), r7);
    const auto b517 = from_host<3>(Distribution<3>(world(), {5, 1, 7}), r517);
    Array<double, 3> c(d);
    c = a - b61;
    expect_all(all_close(spmd::allgather(c), zip(ra, expand<2, 3>({6, 1}, r61, shape), sub), 0),
               ("a - (6, 1)" + where).c_str());
    c = (a + b7) * b517;
    const auto want = zip(zip(ra, expand<1, 3>({7}, r7, shape), add), expand<3, 3>({5, 1, 7}, r517, shape), mul);
    expect_all(all_close(spmd::allgather(c), want, 1e-15), ("(a + (7,)) * (5, 1, 7)" + where).c_str());
    // a slice of a itself that keeps an axis of extent 1: a[:, :, 2:3] has shape (5, 6, 1)
    c = a - a(spmd::all, spmd::all, slice(2, 3));
    std::vector<double> plane(30);
    for (index_t i = 0; i < 30; ++i) plane[std::size_t(i)] = ra[std::size_t(i * 7 + 2)];
    expect_all(all_close(spmd::allgather(c), zip(ra, expand<3, 3>({5, 6, 1}, plane, shape), sub), 0),
               ("a - a[:, :, 2:3]" + where).c_str());
  }
}

void ViewsAndFusion() {
  const Index<2> shape{9, 8};
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return 0.3 * g[0] - 0.4 * g[1] + 0.05 * g[0] * g[1]; });
  const auto rb = host_array<2>(Index<2>{4, 10}, [](const Index<2>& g) { return 1.0 + g[0] + 0.1 * g[1]; });
  for (const auto& d : grids(shape)) {
    const std::string where = " on " + d.describe();
    const auto b = from_host<2>(Distribution<2>(world(), {4, 10}, spmd::halo(1)), rb);
    // a row that is a reversed, strided slice of another array: b[2, 9:1:-1] (8 elements)
    std::vector<double> rrow;
    for (index_t j = 9; j > 1; --j) rrow.push_back(rb[std::size_t(2 * 10 + j)]);
    {
      auto a = from_host<2>(d, ra);
      Array<double, 2> c(d);
      c = spmd::where(a > b(2, slice(9, 1, -1)), spmd::sqrt(spmd::abs(a)) * b(2, slice(9, 1, -1)),
                      spmd::exp(0.1 * b(2, slice(9, 1, -1))));
      const auto er = expand<1, 2>({8}, rrow, shape);
      std::vector<double> want(ra.size());
      for (std::size_t i = 0; i < ra.size(); ++i)
        want[i] = ra[i] > er[i] ? std::sqrt(std::abs(ra[i])) * er[i] : std::exp(0.1 * er[i]);
      expect_all(all_close(spmd::allgather(c), want, 1e-15), ("where/sqrt/exp with a row slice" + where).c_str());
      // a destination slice, and a column that is a slice: b[0:4, 3:4] against a[2:6, 1:7]
      c.fill(0.0);
      c(slice(2, 6), slice(1, 7)) = a(slice(2, 6), slice(1, 7)) + b(spmd::all, slice(3, 4));
      std::vector<double> w2(ra.size(), 0.0);
      for (index_t i = 2; i < 6; ++i)
        for (index_t j = 1; j < 7; ++j)
          w2[std::size_t(i * 8 + j)] = ra[std::size_t(i * 8 + j)] + rb[std::size_t((i - 2) * 10 + 3)];
      expect_all(all_close(spmd::allgather(c), w2, 0), ("slices" + where).c_str());
      // the row is the destination's own: NumPy evaluates as if into a temporary, so every row
      // subtracts the old a[2] (row 2 becomes 0)
      a = a - a(2, spmd::all);
      std::vector<double> old2(ra.begin() + 16, ra.begin() + 24);
      expect_all(all_close(spmd::allgather(a), zip(ra, expand<1, 2>({8}, old2, shape), sub), 0),
                 ("a = a - a[2]" + where).c_str());
      // += with a broadcast operand, integer row promoted
      auto irow = from_host<1, int>(Distribution<1>(world(), {8}), std::vector<int>{1, -2, 3, -4, 5, -6, 7, -8});
      a += irow;
      std::vector<double> ir{1, -2, 3, -4, 5, -6, 7, -8};
      expect_all(all_close(spmd::allgather(a),
                           zip(zip(ra, expand<1, 2>({8}, old2, shape), sub), expand<1, 2>({8}, ir, shape), add), 0),
                 ("a += int row" + where).c_str());
    }
    {
      // generators of fewer axes and of extent 1 broadcast too
      const auto a = from_host<2>(d, ra);
      Array<double, 2> c(d);
      c = a + 100.0 * spmd::indices({9, 1}, 0) + spmd::indices({8}, 0);
      std::vector<double> want(ra.size());
      for (std::size_t i = 0; i < ra.size(); ++i) want[i] = ra[i] + 100.0 * double(i / 8) + double(i % 8);
      expect_all(all_close(spmd::allgather(c), want, 0), ("generators" + where).c_str());
    }
  }
}

void PlanIsCachedAndMinimal() {
  const int p = world().size();
  const Index<2> shape{9, 8};
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return double(g[0] * 8 + g[1]); });
  auto rr = values(8, 0.5, 0.0);
  Distribution<2> d(world(), shape, spmd::grid({1, p}));  // columns cut: each rank needs its own part
  const auto a = from_host<2>(d, ra);
  auto row = from_host<1>(Distribution<1>(world(), {8}, spmd::grid({p})), rr);
  Array<double, 2> c(d);
  auto& n = spmd::testing::counters();
  const long plans0 = n.broadcast_plans, points0 = n.broadcast_points;
  c = a - row;
  const long plans1 = n.broadcast_plans, points1 = n.broadcast_points;
  expect_all(plans1 - plans0 == 1, "the first evaluation builds one plan");
  // this rank holds exactly its column range of the row
  expect_all(points1 - points0 == d.owned().extent(1), "a rank receives only the row part it reads");
  for (int it = 0; it < 3; ++it) {
    // new values of the row are seen: the data moves each time, the plan is reused
    rr[0] += 1.0;
    row = from_host<1>(row.distribution(), rr);
    c = a - row;
    expect_all(all_close(spmd::allgather(c), zip(ra, expand<1, 2>({8}, rr, shape), sub), 0), "a - new row");
  }
  expect_all(n.broadcast_plans == plans1, "repeated evaluations reuse the plan");
  // a reduction with the same operands has its own target (a): a plan of its own, cached too
  const double s1 = spmd::sum(a - row);
  const long plans2 = n.broadcast_plans;
  const double s2 = spmd::sum(a - row);
  expect_all(n.broadcast_plans == plans2 && s1 == s2, "a repeated reduction reuses its plan");
  // the same row twice in one expression is moved once
  // the same row twice in one expression: one cached entry serves both (moved once)
  c = a - row * row;
  expect_all(n.broadcast_plans == plans2, "an operand read twice uses the cached plan");
  // (to an ulp: a GPU compiler may contract a - row * row into one fma, which rounds once)
  expect_all(all_close(spmd::allgather(c), zip(ra, expand<1, 2>({8}, zip(rr, rr, mul), shape), sub), 4e-16),
             "a - row * row");
}

/// NumPy's `dst[...] = e`: the right side's shape broadcasts to the destination's (a row into
/// every row, a column into every column, a 2-D array into every plane of a 3-D one, into slices
/// of the destination, from the destination itself).
void StretchIntoDestination() {
  const Index<2> shape{9, 8};
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return 1.5 * g[0] - 0.25 * g[1] * g[1]; });
  const auto rr = values(8, 0.7, 0.4);
  const auto rc = values(9, -1.3, 2.0);
  const auto rh = values(4, 2.1, -0.5);
  const auto er = expand<1, 2>({8}, rr, shape);
  for (const auto& d : grids(shape)) {
    const std::string where = " on " + d.describe();
    const auto a = from_host<2>(d, ra);
    const auto row = from_host<1>(Distribution<1>(world(), {8}, spmd::halo(1)), rr);
    const auto col = from_host<2>(Distribution<2>(world(), {9, 1}), rc);
    const auto half = from_host<1>(Distribution<1>(world(), {4}), rh);
    Array<double, 2> c(d, spmd::label("c"));
    c(spmd::all) = row;  // an Array into a view
    expect_all(all_close(spmd::allgather(c), er, 0), ("c[...] = row" + where).c_str());
    c = row * 2.0 - 1.0;  // an expression of fewer axes into an Array
    expect_all(all_close(spmd::allgather(c), zip(er, er, [](double x, double) { return x * 2.0 - 1.0; }), 0),
               ("c[...] = row * 2 - 1" + where).c_str());
    c(spmd::all) = col;  // (9, 1) into (9, 8)
    expect_all(all_close(spmd::allgather(c), expand<2, 2>({9, 1}, rc, shape), 0), ("c[...] = col" + where).c_str());
    // into slices of the destination: rows 2:5, then every other column of row 7 (reversed)
    auto want = ra;
    c = a;
    c(slice(2, 5)) = row + 1.0;
    for (index_t i = 2; i < 5; ++i)
      for (index_t j = 0; j < 8; ++j) want[std::size_t(i * 8 + j)] = rr[std::size_t(j)] + 1.0;
    c(slice(1, 9, 2), slice(7, 0, -2)) = half;  // (4,) into (4, 4)
    for (index_t i = 1; i < 9; i += 2)
      for (index_t k = 0; k < 4; ++k) want[std::size_t(i * 8 + 7 - 2 * k)] = rh[std::size_t(k)];
    expect_all(all_close(spmd::allgather(c), want, 0), ("into slices" + where).c_str());
    // from the destination itself: row 7 into every row, then the last column into every column
    c = a;
    c(spmd::all) = c(7);
    expect_all(
        all_close(spmd::allgather(c), expand<1, 2>({8}, std::vector<double>(ra.begin() + 56, ra.end()), shape), 0),
        ("c[...] = c[7]" + where).c_str());
    c = a;
    spmd::assign(c(spmd::all), c(spmd::all, slice(7, 8)));
    std::vector<double> last;
    for (index_t i = 0; i < 9; ++i) last.push_back(ra[std::size_t(i * 8 + 7)]);
    expect_all(all_close(spmd::allgather(c), expand<2, 2>({9, 1}, last, shape), 0),
               ("c[...] = c[:, 7:8]" + where).c_str());
  }
  // a 2-D array into every plane of a 3-D one, and a keepdims mean (1, 8) into (9, 8)
  const Index<3> s3{3, 9, 8};
  Array<double, 3> b(Distribution<3>(world(), s3), spmd::label("b"));
  const auto a = from_host<2>(Distribution<2>(world(), shape), ra);
  b(spmd::all) = a;
  expect_all(all_close(spmd::allgather(b), expand<2, 3>(shape, ra, s3), 0), "b[...] = a (3-D from 2-D)");
  Array<double, 2> m(a.distribution());
  m(spmd::all) = spmd::mean(a, spmd::axis(0), spmd::keepdims);  // (m = mean(...) would rebind m)
  std::vector<double> mean(8, 0.0);
  for (index_t i = 0; i < 9; ++i)
    for (index_t j = 0; j < 8; ++j) mean[std::size_t(j)] += ra[std::size_t(i * 8 + j)] / 9.0;
  expect_all(all_close(spmd::allgather(m), expand<1, 2>({8}, mean, shape), 1e-14), "m[...] = mean(a, 0, keepdims)");
}

void DevicePaths() {
  spmd::testing::KnobsGuard guard;
  auto& k = spmd::testing::knobs();
  k.point_items = true;
  k.flat_copies = true;
  k.multi_points = 4;
  RowAgainstMatrix();        // rows (m,) on two distributions
  ThreeD();                  // (m, 1): step 0 along the last axis; (n, 1, k)
  StretchIntoDestination();  // dst[...] = e of another shape
}

void EmptyBlocks() {
  const int p = world().size();
  const Index<2> shape{2, 3};  // rows cut over p ranks: ranks without rows at p > 2
  const auto ra = host_array<2>(shape, [](const Index<2>& g) { return 1.0 + g[0] * 3 + g[1]; });
  const std::vector<double> rr{10.0, 20.0, 30.0};
  Distribution<2> d(world(), shape, spmd::grid({p, 1}));
  const auto a = from_host<2>(d, ra);
  const auto row = from_host<1>(Distribution<1>(world(), {3}), rr);
  Array<double, 2> c(d);
  c = a * row;
  expect_all(all_close(spmd::allgather(c), zip(ra, expand<1, 2>({3}, rr, shape), mul), 0), "empty blocks");
  EXPECT_EQ(spmd::sum(row * a), 1 * 10 + 2 * 20 + 3 * 30 + 4 * 10 + 5 * 20 + 6 * 30);
  // zero-size axes broadcast with 1
  auto z = spmd::zeros<double>(world(), {0, 3});
  auto zr = spmd::zeros<double>(world(), {1, 3});
  Array<double, 2> zc(z.distribution());
  zc = z + zr;
  EXPECT_EQ(spmd::sum(z + row), 0.0);
}

void BadShapes() {
  auto a = spmd::zeros<double>(world(), {4, 6}, spmd::label("a"));
  auto r5 = spmd::zeros<double>(world(), {5});
  auto r6 = spmd::zeros<double>(world(), {6});
  auto b = spmd::zeros<double>(world(), {3, 2, 6});
  SPMD_EXPECT_COLLECTIVE_ERROR(a - r5,
                               "spmd::operator-: operands could not be broadcast together with shapes (4, 6) (5,)");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::where(a > 0.0, r6, r5),
                               "spmd::where: operands could not be broadcast together with shapes (4, 6) (6,) (5,)");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sum(a * a(slice(0, 3))),
                               "operands could not be broadcast together with shapes (4, 6) (3, 6)");
  // the right side of an assignment must broadcast to the destination (which is never broadcast)
  SPMD_EXPECT_COLLECTIVE_ERROR(a = r5 * 2.0,
                               "spmd::assign: could not broadcast the expression of shape (5,) into destination");
  SPMD_EXPECT_COLLECTIVE_ERROR(a(slice(0, 1)) = a, "of shape (4, 6) into destination");
  SPMD_EXPECT_COLLECTIVE_ERROR(b + a, "shapes (3, 2, 6) (4, 6)");
  // dot does not broadcast
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::dot(a, r6), "spmd::dot: operand shapes {4, 6} and {6} differ");
}

}  // namespace bcast_tests

TEST(Broadcast, RowAgainstMatrix) {
  bcast_tests::RowAgainstMatrix();
}
TEST(Broadcast, MeanSubtraction) {
  bcast_tests::MeanSubtraction();
}
TEST(Broadcast, ColumnAndOuter) {
  bcast_tests::ColumnAndOuter();
}
TEST(Broadcast, ThreeD) {
  bcast_tests::ThreeD();
}
TEST(Broadcast, ViewsAndFusion) {
  bcast_tests::ViewsAndFusion();
}
TEST(Broadcast, PlanIsCachedAndMinimal) {
  bcast_tests::PlanIsCachedAndMinimal();
}
TEST(Broadcast, StretchIntoDestination) {
  bcast_tests::StretchIntoDestination();
}
TEST(Broadcast, DevicePaths) {
  bcast_tests::DevicePaths();
}
TEST(Broadcast, EmptyBlocks) {
  bcast_tests::EmptyBlocks();
}
TEST(Broadcast, BadShapes) {
  bcast_tests::BadShapes();
}
