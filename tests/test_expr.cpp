// Fused expressions (expr.hpp) against a serial NumPy-semantics reference (numpy_ref.hpp):
// operators and functions, scalars on either side, comparisons and where, element types,
// reductions of expressions, halo reads (after an exchange), operands that must be moved
// (no halo along a shifted axis, other process grids, other shapes, other steps, other planes of
// a dropped axis), aliasing (NumPy's as-if-through-a-temporary result), the stencil in place and
// double-buffered, 1-D to 4-D, and bad input as collective errors.
//
// Every result is the whole array gathered and compared with the reference array after the same
// NumPy statement; halos must keep the sentinel wherever the test did not exchange them.
//
//   the 2-D arrays are 9 x 8 (rows cut 3 | 3 | 3 at 3 ranks; a 2 x 2 grid at 4 ranks), so halo
//   reads cross block edges along both axes.
#include "numpy_ref.hpp"
#include "spmd_test.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using ref::Arg;
using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::none;
using spmd::slice;
using spmd::testing::pattern_value;
using spmd::testing::sentinel;
using spmd::testing::world;

namespace {

using Vec = std::vector<double>;
const std::optional<index_t> None = std::nullopt;

/// An array on `d` whose owned element at g is f(g) and whose halo holds the sentinel, and the
/// reference array holding the same values.
template <class T, int N, class F>
std::pair<Array<T, N>, ref::Array> make(const Distribution<N>& d, F f, const std::string& label = "a") {
  Array<T, N> a(d, spmd::label(label));
  a.fill_with_halo(static_cast<T>(sentinel));
  ref::Array r(std::vector<index_t>(d.shape().begin(), d.shape().end()));
  std::vector<T> host;
  std::size_t p = 0;
  spmd::for_each_index(spmd::Box<N>{Index<N>{}, d.shape()}, [&](const Index<N>& g) {
    host.push_back(static_cast<T>(f(g)));
    r.v[p++] = static_cast<double>(host.back());
  });
  spmd::scatter(a, host, 0);
  return {std::move(a), std::move(r)};
}
template <int N>
std::pair<Array<double, N>, ref::Array> pattern(const Distribution<N>& d, double shift = 0.0,
                                                const std::string& label = "a") {
  return make<double, N>(
      d, [&](const Index<N>& g) { return pattern_value<N>(g) + shift; }, label);
}

bool close(double got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= rel * std::max(1.0, std::abs(want));
}

/// The whole array equals the reference (to `rel`, 0: exactly) on every rank.
template <class T, int N>
void expect_array(const Array<T, N>& a, const ref::Array& r, const char* what, double rel = 1e-14) {
  const std::vector<T> got = spmd::allgather(a);
  bool ok = got.size() == r.v.size();
  for (std::size_t i = 0; ok && i < got.size(); ++i)
    if (!close(static_cast<double>(got[i]), r.v[i], rel)) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", reference " << r.v[i];
      ok = false;
    }
  spmd::testing::expect_all(ok, what);
}

/// Every halo point of `a` on this rank still holds the sentinel.
template <class T, int N>
void expect_halo_untouched(const Array<T, N>& a, const char* what) {
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
  index_t p = 0;
  bool ok = true;
  spmd::for_each_index(spmd::testing::storage_box(a.distribution()), [&](const Index<N>& g) {
    if (!a.owned().contains(g) && static_cast<double>(host.data()[p]) != sentinel) ok = false;
    ++p;
  });
  spmd::testing::expect_all(ok, what);
}

/// The entries of a's expression cache that move whole operands (temporaries).
template <class T, int N>
std::size_t whole_moves(const Array<T, N>& a) {
  std::size_t n = 0;
  for (const auto& m : spmd::impl::expr_state(a).moves) n += m->whole ? 1 : 0;
  return n;
}

Distribution<2> dist2(int h, std::vector<int> dims = {}) {
  spmd::DistributionOptions o;
  o.halo = {h};
  o.dims = std::move(dims);
  return Distribution<2>(world(), {9, 8}, o);
}

}  // namespace

TEST(Expr, OperatorsAndScalars) {
  const auto d = dist2(1);
  auto [a, ra] = pattern<2>(d, 0.0, "a");
  auto [b, rb] = pattern<2>(d, 0.5, "b");
  auto [c, rc] = pattern<2>(d, 0.0, "c");
  const Vec A = ra.v, B = rb.v;
  c = a + b * 2.0 - a / (b + 1.0);
  rc.v = ref::zip(A, B, [](double x, double y) { return x + y * 2.0 - x / (y + 1.0); });
  expect_array(c, rc, "a + b * 2 - a / (b + 1)");
  c = 3.0 - a * -b;
  rc.v = ref::zip(A, B, [](double x, double y) { return 3.0 - x * -y; });
  expect_array(c, rc, "3 - a * -b");
  c = 2 / b + (1 - a) * 4;  // integer scalars take the array's type
  rc.v = ref::zip(A, B, [](double x, double y) { return 2.0 / y + (1.0 - x) * 4.0; });
  expect_array(c, rc, "2 / b + (1 - a) * 4");
  c(spmd::all) += a;  // compound assignment of a view
  rc.v = ref::zip(rc.v, A, [](double x, double y) { return x + y; });
  expect_array(c, rc, "c[:] += a");
  c(spmd::all) = a;  // deep copy (Array = Array stays a handle copy)
  expect_array(c, ra, "c[:] = a");
  expect_halo_untouched(c, "no halo written by assignments");
  auto handle = c(spmd::all);  // a slice shares storage
  handle(slice(0, 1), slice(0, 1)) = 7.5;
  EXPECT_EQ(c.get(0, 0), 7.5);
  auto copied = c;  // an Array copy does not
  copied(slice(0, 1), slice(0, 1)) = -1.0;
  EXPECT_EQ(c.get(0, 0), 7.5);
  EXPECT_EQ(copied.get(0, 0), -1.0);
}

TEST(Expr, FunctionsComparisonsAndWhere) {
  const auto d = dist2(0);
  auto [a, ra] = pattern<2>(d, 0.0, "a");
  auto [b, rb] = pattern<2>(d, 0.5, "b");
  auto c = spmd::zeros<double>(d, spmd::label("c"));
  ref::Array rc = ra;
  const Vec A = ra.v, B = rb.v;
  auto check = [&](auto expr, std::function<double(double, double)> f, const char* what) {
    c = expr;
    rc.v = ref::zip(A, B, f);
    expect_array(c, rc, what);
  };
  check(
      spmd::abs(a - 250.0), [](double x, double) { return std::abs(x - 250.0); }, "abs");
  check(
      spmd::sqrt(a) + spmd::log(b), [](double x, double y) { return std::sqrt(x) + std::log(y); }, "sqrt, log");
  check(
      spmd::exp(a / 1000.0) * spmd::sin(b) - spmd::cos(a),
      [](double x, double y) { return std::exp(x / 1000.0) * std::sin(y) - std::cos(x); }, "exp, sin, cos");
  check(
      spmd::pow(a, 0.5) + spmd::pow(2.0, b / 500.0) + spmd::pow(a / 800.0, b / 900.0),
      [](double x, double y) { return std::pow(x, 0.5) + std::pow(2.0, y / 500.0) + std::pow(x / 800.0, y / 900.0); },
      "pow");
  check(
      spmd::minimum(a, b - 50.0) + spmd::maximum(a, 300.0),
      [](double x, double y) { return std::min(x, y - 50.0) + std::max(x, 300.0); }, "minimum, maximum");
  check(
      spmd::where(a > 300.0, a, -b), [](double x, double y) { return x > 300.0 ? x : -y; }, "where(a > 300, a, -b)");
  check(
      spmd::where((a >= b - 1.0) && !(a == 305.0), 1.0, 0.0),
      [](double x, double y) { return (x >= y - 1.0) && !(x == 305.0) ? 1.0 : 0.0; }, "&&, !, ==, >=");
  check(
      spmd::where(a < 205.0 || a != b - 0.5, b, 2),
      [](double x, double y) { return x < 205.0 || x != y - 0.5 ? y : 2.0; }, "||, <, !=");
  check(
      spmd::where(a <= 404.0, 1, a), [](double x, double) { return x <= 404.0 ? 1.0 : x; }, "<=, scalar first");
  check(
      spmd::astype<int>(a / 7.0) * 1.0, [](double x, double) { return static_cast<int>(x / 7.0) * 1.0; }, "astype");
}

TEST(Expr, MinimumMaximumPropagateNaN) {
  // np.minimum / np.maximum: a NaN on either side gives NaN; otherwise the smaller / larger value.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Vec xs{1.0, nan, 2.0, nan, -inf, 3.0, -0.5, inf, 7.0};
  const Vec ys{nan, 1.0, 5.0, nan, 4.0, -inf, -0.5, 2.0, nan};
  const index_t n = static_cast<index_t>(xs.size());
  auto x = spmd::zeros<double>(world(), {n}, spmd::label("x")), y = spmd::zeros<double>(world(), {n});
  for (index_t i = 0; i < n; ++i) {
    x.set({i}, xs[std::size_t(i)]);
    y.set({i}, ys[std::size_t(i)]);
  }
  Array<double, 1> lo(spmd::minimum(x, y)), hi(spmd::maximum(x, y)), lo0(spmd::minimum(x, 0.0));
  const Vec l = spmd::allgather(lo), h = spmd::allgather(hi), l0 = spmd::allgather(lo0);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const bool any_nan = std::isnan(xs[i]) || std::isnan(ys[i]);
    if (any_nan) {
      EXPECT_TRUE(std::isnan(l[i]) && std::isnan(h[i])) << "at " << i << ": " << l[i] << " " << h[i];
    } else {
      EXPECT_EQ(l[i], std::min(xs[i], ys[i])) << "at " << i;
      EXPECT_EQ(h[i], std::max(xs[i], ys[i])) << "at " << i;
    }
    if (std::isnan(xs[i]))
      EXPECT_TRUE(std::isnan(l0[i])) << "at " << i;
    else
      EXPECT_EQ(l0[i], std::min(xs[i], 0.0)) << "at " << i;
  }
}

TEST(Expr, ElementTypes) {
  const auto d = dist2(0);
  auto [ia, ria] = make<int, 2>(
      d, [](const Index<2>& g) { return static_cast<int>(g[0] * 8 + g[1]) - 20; }, "ia");
  auto [f, rf] = make<float, 2>(
      d, [](const Index<2>& g) { return 0.25f * static_cast<float>(g[0] + g[1]); }, "f");
  auto ic = spmd::zeros<int>(d, spmd::label("ic"));
  auto c = spmd::zeros<double>(d, spmd::label("c"));
  static_assert(std::is_same_v<decltype(ia * 3 + 1)::value_type, int>, "int array and int scalar stay int");
  static_assert(std::is_same_v<decltype(ia * 0.5)::value_type, double>, "int array times a double: double");
  static_assert(std::is_same_v<decltype(ia / 2)::value_type, double>, "/ is true division");
  static_assert(std::is_same_v<decltype(f * 0.5)::value_type, float>, "a float array keeps float with a double");
  static_assert(std::is_same_v<decltype(f + ia)::value_type, float>, "float + int arrays: float (C++ promotion)");
  static_assert(std::is_same_v<decltype(ia > 0)::value_type, bool>, "comparisons are bool");
  static_assert(std::is_same_v<decltype(spmd::sqrt(ia))::value_type, double>, "sqrt of int is double");
  ic = ia * 3 + 1;
  ref::Array r = ria;
  r.v = ref::map(ria.v, [](double x) { return x * 3 + 1; });
  expect_array(ic, r, "int expression", 0.0);
  c = ia / 2;
  r.v = ref::map(ria.v, [](double x) { return x / 2.0; });
  expect_array(c, r, "true division of ints", 0.0);
  ic = spmd::where(ia > 5, ia, -spmd::abs(ia));
  r.v = ref::map(ria.v, [](double x) { return x > 5 ? x : -std::abs(x); });
  expect_array(ic, r, "where on ints", 0.0);
  f = f * 0.5 + ia;
  r.v = ref::zip(rf.v, ria.v, [](double x, double y) {
    return static_cast<double>(0.5f * static_cast<float>(x) + static_cast<float>(y));
  });
  expect_array(f, r, "float expression", 0.0);
  EXPECT_EQ(spmd::sum(ia > 0), 72 - 21);  // values -20 .. 51: 51 positive
  EXPECT_EQ(spmd::count_nonzero(ia), 71);
}

namespace {
void halo_reads_after_exchange() {
  // c[1:-1, 1:-1] = n + s * w - e + nw (a 9-point corner too): shifted reads within the halo
  // read neighbours' data from the halo once it is exchanged (box pattern: corners included).
  for (auto dims : {std::vector<int>{}, std::vector<int>{1, world().size()}}) {
    const auto d = dist2(1, dims);
    auto [u, ru] = pattern<2>(d, 0.0, "u");
    auto [c, rc] = pattern<2>(d, 1.0, "c");
    spmd::exchange_halo(u);
    const auto in = slice(1, -1);
    c(in, in) = u(slice(0, -2), in) + u(slice(2, none), in) * u(in, slice(0, -2)) - u(in, slice(2, none)) +
                u(slice(0, -2), slice(0, -2));
    const auto w = ref::View::whole(ru);
    const auto I = Arg::sl(1, -1);
    const Vec n = w({Arg::sl(0, -2), I}).get(), s = w({Arg::sl(2, None), I}).get(), we = w({I, Arg::sl(0, -2)}).get(),
              e = w({I, Arg::sl(2, None)}).get(), nw = w({Arg::sl(0, -2), Arg::sl(0, -2)}).get();
    Vec want(n.size());
    for (std::size_t i = 0; i < n.size(); ++i) want[i] = n[i] + s[i] * we[i] - e[i] + nw[i];
    ref::View::whole(rc)({I, I}).set(want);
    expect_array(c, rc, "halo reads");
    expect_halo_untouched(c, "destination halo untouched");
  }
}

/// cuNumeric's stencil: an (n+2)^2 grid, boundaries -273.15 and 40.0,
/// center[:] = 0.2 * (center + north + east + west + south), NumPy semantics, K iterations, in
/// place and double-buffered.
void stencil_in_place_and_double_buffered() {
  const index_t n = 10;
  const int iters = 3;
  Distribution<2> d(world(), {n + 2, n + 2}, spmd::halo(1));
  auto u = spmd::zeros<double>(d, spmd::label("u"));
  auto next = spmd::zeros<double>(d, spmd::label("next"));
  ref::Array r({n + 2, n + 2});
  const auto w = ref::View::whole(r);
  for (auto* g : {&u, &next}) {
    (*g)(spmd::all, 0) = -273.15;
    (*g)(spmd::all, -1) = -273.15;
    (*g)(-1, spmd::all) = -273.15;
    (*g)(0, spmd::all) = 40.0;
  }
  w({Arg::all(), Arg::at(0)}).set(Vec(n + 2, -273.15));
  w({Arg::all(), Arg::at(-1)}).set(Vec(n + 2, -273.15));
  w({Arg::at(-1), Arg::all()}).set(Vec(n + 2, -273.15));
  w({Arg::at(0), Arg::all()}).set(Vec(n + 2, 40.0));
  auto fast = spmd::copy(u(spmd::all), spmd::halo(1));  // the same grid for the double-buffer form
  auto c = u(slice(1, -1), slice(1, -1));
  auto north = u(slice(0, -2), slice(1, -1));
  auto east = u(slice(1, -1), slice(2, none));
  auto west = u(slice(1, -1), slice(0, -2));
  auto south = u(slice(2, none), slice(1, -1));
  const auto I = Arg::sl(1, -1);
  for (int it = 0; it < iters; ++it) {
    spmd::exchange_halo(u);
    c = 0.2 * (c + north + east + west + south);
    const Vec C = w({I, I}).get(), N = w({Arg::sl(0, -2), I}).get(), E = w({I, Arg::sl(2, None)}).get(),
              W = w({I, Arg::sl(0, -2)}).get(), S = w({Arg::sl(2, None), I}).get();
    Vec avg(C.size());
    for (std::size_t i = 0; i < C.size(); ++i) avg[i] = 0.2 * (C[i] + N[i] + E[i] + W[i] + S[i]);
    w({I, I}).set(avg);
    // double buffer: next[1:-1, 1:-1] = f(fast); swap
    spmd::exchange_halo(fast);
    const auto in = slice(1, -1);
    next(in, in) = 0.2 * (fast(in, in) + fast(slice(0, -2), in) + fast(in, slice(2, none)) + fast(in, slice(0, -2)) +
                          fast(slice(2, none), in));
    spmd::swap(fast, next);
  }
  expect_array(u, r, "stencil in place (NumPy semantics)", 0.0);
  expect_array(fast, r, "stencil double-buffered", 0.0);
  // the in-place form buffers (cached: one buffer however many iterations), the fast path not
  // (the lagged and the tiled forms keep a few rows per band or tile, the buffered form a
  // temporary of the whole update)
  const auto& su = spmd::impl::expr_state(u);
  const spmd::impl::Forms forms = spmd::impl::forms<typename decltype(u)::memory_space>();
  if (!forms.device_alias || forms.tiled_alias) {  // the lagged or the tiled form
    EXPECT_GE(su.lagged.extent(0), c.owned().size() > 0 ? 1u : 0u);
    EXPECT_EQ(su.scratch.extent(0), 0u);
  } else {
    EXPECT_GE(su.scratch.extent(0), static_cast<std::size_t>(c.owned().size()));
  }
  EXPECT_EQ(spmd::impl::expr_state(next).scratch.extent(0), 0u);
  EXPECT_EQ(spmd::impl::expr_state(fast).scratch.extent(0), 0u);
  EXPECT_NEAR(spmd::sum(u), std::accumulate(r.v.begin(), r.v.end(), 0.0), 1e-10);
}

/// Runs `f` with each way an update in place is evaluated: on the host lagged with one band per
/// thread, lagged with 4 bands (band edges covered even with one thread); the device forms with
/// one work item per point: 2-D boxes by tiles (Forms::tiled_alias: 3 bands, then 5, and the
/// column form of the other kernels), and through a whole buffer (the devices' default).
template <class F>
void each_in_place_path(F f) {
  spmd::testing::KnobsGuard guard;
  auto& cfg = spmd::testing::knobs();
  for (int mode = 0; mode < 5; ++mode) {
    cfg.buffered_alias = mode >= 2;
    cfg.bands = mode == 1 ? 4 : (mode == 3 ? 5 : 0);
    cfg.point_items = mode >= 2;
    cfg.multi_points = mode == 3 ? 1 : 0;
    cfg.column_min = mode == 3 ? 1 : 0;
    cfg.tiled_alias = mode == 2 || mode == 3;
    f();
  }
}
}  // namespace

TEST(Expr, HaloReadsAfterExchange) {
  halo_reads_after_exchange();
}

TEST(Expr, StencilInPlaceAndDoubleBuffered) {
  each_in_place_path(stencil_in_place_and_double_buffered);
}

TEST(Expr, OperandsThatMove) {
  const int p = world().size();
  // 1-D, no halo: a[0:10] + a[10:20] reads beyond any block when the grid splits the axis: moved
  // into a temporary (at one rank the block spans the axis: read in place, nothing moved)
  auto [a, ra] = make<double, 1>(Distribution<1>(world(), {20}), [](const Index<1>& g) { return 1.0 + g[0] * g[0]; });
  auto [c, rc] = make<double, 1>(
      Distribution<1>(world(), {20}), [](const Index<1>&) { return 0.0; }, "c");
  for (int rep = 0; rep < 3; ++rep) c(slice(0, 10)) = a(slice(0, 10)) + a(slice(10, 20)) * (rep + 1.0);
  auto wc = ref::View::whole(rc);
  const auto wa = ref::View::whole(ra);
  wc({Arg::sl(0, 10)}).set(ref::zip(wa({Arg::sl(0, 10)}).get(), wa({Arg::sl(10, 20)}).get(), [](double x, double y) {
    return x + y * 3.0;
  }));
  expect_array(c, rc, "a[0:10] + a[10:20]");
  // the shifted operand is brought part by part (assign_split: one plan per slab of the frame,
  // made once and reused), never moved whole; nothing at one rank (the block spans the axis)
  EXPECT_EQ(whole_moves(c), 0u);
  EXPECT_EQ(spmd::impl::expr_state(c).moves.size(), p > 1 ? 2u : 0u);
  // at most 16 whole moves cached per array: 17 operands of other steps evict the least
  // recently used ones
  for (index_t k = 1; k <= 17; ++k) c(slice(0, 2)) = a(slice(k, k + 3, 2)) - a(slice(0, 2));
  EXPECT_EQ(whole_moves(c), 16u);
  wc({Arg::sl(0, 2)}).set(ref::zip(wa({Arg::sl(17, 20, 2)}).get(), wa({Arg::sl(0, 2)}).get(), [](double x, double y) {
    return x - y;
  }));
  expect_array(c, rc, "after evictions");
  // other strides: c[0:5] = a[0:10:2] - a[19::-4]
  c(slice(0, 5)) = a(slice(0, 10, 2)) - a(slice(19, none, -4));
  wc({Arg::sl(0, 5)})
      .set(ref::zip(wa({Arg::sl(0, 10, 2)}).get(), wa({Arg::sl(19, None, -4)}).get(),
                    [](double x, double y) { return x - y; }));
  expect_array(c, rc, "other steps");

  // other process grids and halos: c = a + b with b on the transposed grid
  const auto da = dist2(1, {p, 1});
  const auto db = dist2(2, {1, p});
  auto [x, rx] = pattern<2>(da, 0.0, "x");
  auto [y, ry] = pattern<2>(db, 0.5, "y");
  auto z = spmd::zeros<double>(Distribution<2>(world(), {9, 8}), spmd::label("z"));  // automatic grid, no halo
  ref::Array rz = rx;
  z = x * 2.0 + y;
  rz.v = ref::zip(rx.v, ry.v, [](double s, double t) { return s * 2.0 + t; });
  expect_array(z, rz, "operands on other grids");
  // another parent shape: z[1:4, :] = big[2:8:2, 1:9]
  auto [big, rbig] = pattern<2>(Distribution<2>(world(), {11, 12}, spmd::halo(1)), 0.0, "big");
  z(slice(1, 4), spmd::all) = big(slice(2, 8, 2), slice(1, 9));
  ref::View::whole(rz)({Arg::sl(1, 4), Arg::all()})
      .set(ref::View::whole(rbig)({Arg::sl(2, 8, 2), Arg::sl(1, 9)}).get());
  expect_array(z, rz, "another parent shape");
  // three arrays on one distribution moved with one selection in one assignment (CFD's
  // b[1:-1, -1] reading u[1:-1, 0] and v[1:-1, 0]): each array gets its own cached entry and
  // temporary (a repeated operand shares its array's), reused by the next pass; none when the
  // grid does not split the columns (every block spans them: column 0 is read in place)
  const auto dc = dist2(1);
  auto [cu, rcu] = pattern<2>(dc, 0.0, "cu");
  auto [cv, rcv] = pattern<2>(dc, 0.25, "cv");
  auto [cw, rcw] = pattern<2>(dc, 0.5, "cw");
  for (int rep = 0; rep < 2; ++rep)
    cw(slice(1, -1), -1) = cu(slice(1, -1), 0) + 2.0 * cv(slice(1, -1), 0) + cw(slice(1, -1), 0) * cu(slice(1, -1), 0);
  EXPECT_EQ(spmd::impl::expr_state(cw).moves.size(), dc.dims()[1] > 1 ? 3u : 0u);
  const auto wcu = ref::View::whole(rcu), wcv = ref::View::whole(rcv);
  auto wcw = ref::View::whole(rcw);
  const auto col0 = [](ref::View w) { return w({Arg::sl(1, -1), Arg::at(0)}).get(); };
  const auto cw0u = ref::zip(col0(wcw), col0(wcu), [](double s, double t) { return s * t; });
  wcw({Arg::sl(1, -1), Arg::at(-1)})
      .set(ref::zip(ref::zip(col0(wcu), col0(wcv), [](double s, double t) { return s + 2.0 * t; }), cw0u,
                    [](double s, double t) { return s + t; }));
  expect_array(cw, rcw, "two arrays moved with one selection");
}

namespace {
/// The 5-point average of w's interior, 0.2 * (c + north + east + west + south) in that order.
Vec average5(const ref::View& w) {
  const auto I = Arg::sl(1, -1);
  const Vec C = w({I, I}).get(), N = w({Arg::sl(0, -2), I}).get(), E = w({I, Arg::sl(2, None)}).get(),
            W = w({I, Arg::sl(0, -2)}).get(), S = w({Arg::sl(2, None), I}).get();
  Vec avg(C.size());
  for (std::size_t i = 0; i < C.size(); ++i) avg[i] = 0.2 * (C[i] + N[i] + E[i] + W[i] + S[i]);
  return avg;
}

/// Arrays without a halo on grids that split the shifted axes (assign_split): each rank's box is
/// the interior, read in place, and slabs whose shifted operands come from buffers of exactly
/// their part. The stencil double-buffered and in place (NumPy semantics), diagonal shifts with
/// a reversed axis (both ways), 3-D, a reduction (moved), on row, column and automatic grids;
/// nothing moved whole, and the plans bring edges, not blocks.
void shifts_along_split_axes() {
  const int p = world().size();
  for (const std::vector<int>& dims : {std::vector<int>{}, std::vector<int>{p, 1}, std::vector<int>{1, p}}) {
    const auto d = dist2(0, dims);
    auto [a, ra] = pattern<2>(d, 0.0, "a");
    auto [b, rb] = pattern<2>(d, 0.5, "b");
    auto wa = ref::View::whole(ra), wb = ref::View::whole(rb);
    const auto in = slice(1, -1);
    const auto I = Arg::sl(1, -1);
    const long points_before = spmd::impl::plan_counts().broadcast_points;
    for (int rep = 0; rep < 2; ++rep) {
      b(in, in) =
          0.2 * (a(in, in) + a(slice(0, -2), in) + a(in, slice(2, none)) + a(in, slice(0, -2)) + a(slice(2, none), in));
      wb({I, I}).set(average5(wa));
      expect_array(b, rb, "stencil double-buffered, no halo", 0.0);
      a(in, in) =
          0.2 * (a(in, in) + a(slice(0, -2), in) + a(in, slice(2, none)) + a(in, slice(0, -2)) + a(slice(2, none), in));
      wa({I, I}).set(average5(wa));
      expect_array(a, ra, "stencil in place, no halo (NumPy semantics)", 0.0);
    }
    EXPECT_EQ(whole_moves(a), 0u);
    EXPECT_EQ(whole_moves(b), 0u);
    // edges only: at most 4 operands x 2 slabs of a row or a column each (a whole move: 4 blocks)
    const spmd::Box<2> J = b(in, in).owned();
    const long brought = spmd::impl::plan_counts().broadcast_points - points_before;
    EXPECT_LE(brought, 2 * 8 * (J.extent(0) + J.extent(1)));
    if (d.dims()[0] == 1 && d.dims()[1] == 1) {
      EXPECT_EQ(brought, 0);
    }
    // one destination and a shared operand under statements whose shifts differ, so that their
    // slabs differ (a cached part must not serve another statement's frame)
    auto [f, rf] = pattern<2>(d, 0.75, "f");  // an empty cache
    auto wf = ref::View::whole(rf);
    f(in, in) = a(slice(0, -2), in) + a(in, in);
    wf({I, I}).set(ref::zip(wa({Arg::sl(0, -2), I}).get(), wa({I, I}).get(), [](double x, double y) { return x + y; }));
    expect_array(f, rf, "shifts one way", 0.0);
    f(in, in) = a(slice(2, none), in) - a(slice(0, -2), in);
    wf({I, I}).set(ref::zip(wa({Arg::sl(2, None), I}).get(), wa({Arg::sl(0, -2), I}).get(),
                            [](double x, double y) { return x - y; }));
    expect_array(f, rf, "shifts both ways, one operand shared with the statement before", 0.0);
    // diagonal shifts with a reversed axis: b[7:0:-1, 1:7] = a[8:1:-1, 2:8] - 2 a[6::-1, 0:6]
    const auto D = [](auto& x, int k) {
      return k == 0 ? x(slice(8, 1, -1), slice(2, 8)) : x(slice(6, none, -1), slice(0, 6));
    };
    b(slice(7, 0, -1), slice(1, 7)) = D(a, 0) - 2.0 * D(a, 1);
    const auto Dr = [](ref::View& w, int k) {
      return k == 0 ? w({Arg::sl(8, 1, -1), Arg::sl(2, 8)}).get() : w({Arg::sl(6, None, -1), Arg::sl(0, 6)}).get();
    };
    const auto diag = [&] { return ref::zip(Dr(wa, 0), Dr(wa, 1), [](double x, double y) { return x - 2.0 * y; }); };
    wb({Arg::sl(7, 0, -1), Arg::sl(1, 7)}).set(diag());
    expect_array(b, rb, "diagonal shifts, reversed rows", 0.0);
    a(slice(7, 0, -1), slice(1, 7)) = D(a, 0) - 2.0 * D(a, 1);
    wa({Arg::sl(7, 0, -1), Arg::sl(1, 7)}).set(diag());
    expect_array(a, ra, "diagonal shifts in place, reversed rows (NumPy semantics)", 0.0);
    // a reduction of shifted operands (moved)
    const Vec n = wa({Arg::sl(0, -2), I}).get(), s = wa({Arg::sl(2, None), I}).get();
    double want = 0.0;
    for (std::size_t i = 0; i < n.size(); ++i) want += n[i] * s[i];
    EXPECT_NEAR(spmd::sum(a(slice(0, -2), in) * a(slice(2, none), in)), want, 1e-12 * std::abs(want));
  }
  // 3-D: the 7-point update in place on an automatic grid without a halo
  const Distribution<3> d3(world(), {6, 5, 7});
  auto [u, ru] = pattern<3>(d3, 0.0, "u");
  const auto in = slice(1, -1);
  for (int rep = 0; rep < 2; ++rep)
    u(in, in, in) = u(in, in, in) - (u(slice(0, -2), in, in) + u(slice(2, none), in, in) + u(in, slice(0, -2), in) +
                                     u(in, slice(2, none), in) + u(in, in, slice(0, -2)) + u(in, in, slice(2, none))) /
                                        6.0;
  // the reference, twice (NumPy semantics: every read before any write)
  ref::Array r3 = ru;
  for (int rep = 0; rep < 2; ++rep) {
    const auto w = ref::View::whole(r3);
    const auto J = Arg::sl(1, -1), lo = Arg::sl(0, -2), hi = Arg::sl(2, None);
    const Vec C = w({J, J, J}).get(), A = w({lo, J, J}).get(), B = w({hi, J, J}).get(), E = w({J, lo, J}).get(),
              F = w({J, hi, J}).get(), G = w({J, J, lo}).get(), H = w({J, J, hi}).get();
    Vec out(C.size());
    for (std::size_t i = 0; i < C.size(); ++i) out[i] = C[i] - (A[i] + B[i] + E[i] + F[i] + G[i] + H[i]) / 6.0;
    w({J, J, J}).set(out);
  }
  expect_array(u, r3, "3-d 7-point in place, no halo", 0.0);
  EXPECT_EQ(whole_moves(u), 0u);
}
}  // namespace

TEST(Expr, ShiftsAlongSplitAxes) {
  each_in_place_path(shifts_along_split_axes);
}

TEST(Expr, PeriodicColumnsAndOtherPlanes) {
  // CFD-style periodic boundary columns with halo 1 along both axes:
  //   u[1:-1, -1] = u[1:-1, -2] + u[1:-1, 0]
  // Column -2 is a halo read. Column 0 is moved, unless the axis is periodic in u: then the shift
  // by -(n - 1) is one by +1 modulo n, a read of the periodic halo; or unless the grid does not
  // split the columns (one rank: the block spans them, column 0 is read in place).
  for (bool periodic : {false, true}) {
    spmd::DistributionOptions o;
    o.halo = {1};
    o.periodic = {false, periodic};
    o.dims = {0, world().size() > 1 ? 2 : 1};
    if (world().size() == 3) o.dims = {1, 3};
    const Distribution<2> d(world(), {6, 9}, o);
    auto [u, ru] = pattern<2>(d, 0.0, "u");
    spmd::exchange_halo(u);
    u(slice(1, -1), -1) = u(slice(1, -1), -2) + u(slice(1, -1), 0);
    const auto w = ref::View::whole(ru);
    const std::vector<double> old0 = w({Arg::sl(1, -1), Arg::at(0)}).get();
    w({Arg::sl(1, -1), Arg::at(-1)}).set(ref::zip(w({Arg::sl(1, -1), Arg::at(-2)}).get(), old0, [](double s, double t) {
      return s + t;
    }));
    expect_array(u, ru, periodic ? "boundary columns (periodic axis)" : "boundary columns");
    EXPECT_EQ(spmd::impl::expr_state(u).moves.size(), periodic || d.dims()[1] == 1 ? 0u : 1u);
    // A periodic read sees what the halo holds: column 0 changed without an exchange is read as
    // it was at the exchange; a moved column is read as it is.
    u(spmd::all, 0) = -1.0;
    u(slice(1, -1), -1) = 2.0 * u(slice(1, -1), 0);
    w({Arg::all(), Arg::at(0)}).set(Vec(6, -1.0));
    Vec twice = periodic ? old0 : Vec(4, -1.0);
    for (double& x : twice) x *= 2.0;
    w({Arg::sl(1, -1), Arg::at(-1)}).set(twice);
    expect_array(u, ru, periodic ? "periodic halo read before an exchange" : "moved column after a change");
  }
  // along a kept periodic axis: c[9:12] = a[0:3] * 2 with halo 3 reads a's periodic halo (a shift
  // by -9, modulo 12 one by +3)
  const Distribution<1> d1(world(), {12}, spmd::halo(3), spmd::periodic());
  auto [a, ra] = pattern<1>(d1, 0.0, "a");
  auto [c, rc] = pattern<1>(d1, 0.5, "c");
  spmd::exchange_halo(a);
  c(slice(9, 12)) = a(slice(0, 3)) * 2.0;
  EXPECT_EQ(spmd::impl::expr_state(c).moves.size(), 0u);
  auto wc = ref::View::whole(rc);
  Vec head = ref::View::whole(ra)({Arg::sl(0, 3)}).get();
  for (double& x : head) x *= 2.0;
  wc({Arg::sl(9, 12)}).set(head);
  expect_array(c, rc, "kept periodic axis");
}

namespace {
void aliasing_has_numpy_semantics() {
  // a[1:] = a[:-1] * 2: reads what it overwrites. Halo 0: moved (the plan buffers its own
  // part) when the grid splits the axis, else (one rank) read in place as with halo 1: a halo
  // read, evaluated in place a unit behind (host) or into a buffer.
  for (int h : {0, 1}) {
    auto [a, ra] = make<double, 1>(Distribution<1>(world(), {11}, spmd::halo(h)),
                                   [](const Index<1>& g) { return 3.0 * g[0] + 1.0; });
    if (h) spmd::exchange_halo(a);
    a(slice(1, none)) = a(slice(none, -1)) * 2.0;
    auto w = ref::View::whole(ra);
    w({Arg::sl(1, None)}).set(ref::map(w({Arg::sl(None, -1)}).get(), [](double x) { return x * 2.0; }));
    expect_array(a, ra, h ? "a[1:] = a[:-1] * 2 (halo read)" : "a[1:] = a[:-1] * 2 (moved)", 0.0);
    // a[:] = a[::-1] + a: reversal in place
    a(spmd::all) = a(slice(none, none, -1)) + a;
    w({Arg::all()}).set(ref::zip(w({Arg::sl(None, None, -1)}).get(), w({Arg::all()}).get(), [](double x, double y) {
      return x + y;
    }));
    expect_array(a, ra, "a[:] = a[::-1] + a", 0.0);
  }
  // the same positions are no alias: c = c * 2 + 1 writes in place without a buffer
  auto [c, rc] = pattern<2>(dist2(1), 0.0, "c");
  c = c * 2.0 + 1.0;
  rc.v = ref::map(rc.v, [](double x) { return x * 2.0 + 1.0; });
  expect_array(c, rc, "c = c * 2 + 1", 0.0);
  EXPECT_EQ(spmd::impl::expr_state(c).scratch.extent(0), 0u);
  // disjoint parts of one parent are no alias either: e[0:2] = e[2:4] + 1 (a halo read, halo 2)
  auto [e, re] =
      make<double, 1>(Distribution<1>(world(), {9}, spmd::halo(2)), [](const Index<1>& g) { return 1.0 * g[0]; });
  spmd::exchange_halo(e);
  e(slice(0, 2)) = e(slice(2, 4)) + 1.0;
  re.v[0] = 3.0;
  re.v[1] = 4.0;
  expect_array(e, re, "disjoint parts of one array", 0.0);
  EXPECT_EQ(spmd::impl::expr_state(e).scratch.extent(0), 0u);
  EXPECT_EQ(spmd::impl::expr_state(e).lagged.extent(0), 0u);
  // a 3-d update in place along every axis (reach 2 along axis 0: a lag of 2 planes)
  auto [g, rg] = make<double, 3>(Distribution<3>(world(), {7, 5, 6}, spmd::halo(2)),
                                 [](const Index<3>& i) { return 1.0 + i[0] + 0.1 * i[1] + 0.01 * i[2]; });
  spmd::exchange_halo(g);
  const auto in = slice(2, -2);
  g(in, slice(1, -1), slice(1, -1)) = g(slice(0, -4), slice(1, -1), slice(2, none)) * 0.5 +
                                      g(slice(4, none), slice(0, -2), slice(0, -2)) -
                                      g(in, slice(2, none), slice(1, -1));
  const auto wg = ref::View::whole(rg);
  const auto I = Arg::sl(1, -1);
  const Vec x = wg({Arg::sl(0, -4), I, Arg::sl(2, None)}).get(),
            y = wg({Arg::sl(4, None), Arg::sl(0, -2), Arg::sl(0, -2)}).get(),
            z = wg({Arg::sl(2, -2), Arg::sl(2, None), I}).get();
  Vec want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) want[i] = x[i] * 0.5 + y[i] - z[i];
  wg({Arg::sl(2, -2), I, I}).set(want);
  expect_array(g, rg, "3-d in place", 0.0);
  // a 2-d update in place reading 3 rows and 3 columns away, diagonals included (the device's
  // tiled form: tile and band edges on every side)
  auto [h, rh] = make<double, 2>(Distribution<2>(world(), {23, 37}, spmd::halo(3)),
                                 [](const Index<2>& i) { return 1.0 + i[0] + 0.01 * i[1]; });
  spmd::exchange_halo(h);
  h(slice(2, -3), slice(3, -3)) = h(slice(0, -5), slice(6, none)) * 0.5 + h(slice(5, none), slice(0, -6)) -
                                  h(slice(3, -2), slice(2, -4)) * h(slice(2, -3), slice(3, -3));
  const auto wh = ref::View::whole(rh);
  const Vec h1 = wh({Arg::sl(0, -5), Arg::sl(6, None)}).get(), h2 = wh({Arg::sl(5, None), Arg::sl(0, -6)}).get(),
            h3 = wh({Arg::sl(3, -2), Arg::sl(2, -4)}).get(), h4 = wh({Arg::sl(2, -3), Arg::sl(3, -3)}).get();
  Vec hw(h1.size());
  for (std::size_t i = 0; i < h1.size(); ++i) hw[i] = h1[i] * 0.5 + h2[i] - h3[i] * h4[i];
  wh({Arg::sl(2, -3), Arg::sl(3, -3)}).set(hw);
  // Exact on host spaces; on a device nvcc contracts h3 * h4 subtracted from a sum into one fused
  // multiply-add (its default), which may round the last bit differently from the reference
  // (seen on an H200: -5.8179999999999996 against -5.8179999999999987).
  const bool host =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  expect_array(h, rh, "2-d in place, reach 3 x 3", host ? 0.0 : 4e-16);
}
}  // namespace

TEST(Expr, AliasingHasNumPySemantics) {
  each_in_place_path(aliasing_has_numpy_semantics);
}

namespace {
void reductions() {
  const auto d = dist2(1);
  auto [a, ra] = pattern<2>(d, 0.0, "a");
  auto [b, rb] = pattern<2>(d, 0.5, "b");
  spmd::exchange_halo(a);
  const Vec A = ra.v, B = rb.v;
  auto fold = [](const Vec& v, double init, std::function<double(double, double)> f) {
    double acc = init;
    for (double x : v) acc = f(acc, x);
    return acc;
  };
  const Vec diff = ref::zip(A, B, [](double x, double y) { return x - 2.0 * y; });
  const double rel = 1e-12;
  EXPECT_TRUE(close(spmd::sum(a - 2.0 * b), fold(diff, 0.0, std::plus<double>()), rel));
  EXPECT_TRUE(close(spmd::mean(a - 2.0 * b), fold(diff, 0.0, std::plus<double>()) / 72.0, rel));
  EXPECT_TRUE(
      close(spmd::norm2(a - 2.0 * b), std::sqrt(fold(diff, 0.0, [](double s, double x) { return s + x * x; })), rel));
  EXPECT_EQ(spmd::norm_inf(a - 2.0 * b), fold(diff, 0.0, [](double s, double x) { return std::max(s, std::abs(x)); }));
  EXPECT_EQ(spmd::min(a - 2.0 * b), fold(diff, 1e300, [](double s, double x) { return std::min(s, x); }));
  EXPECT_EQ(spmd::max(a - 2.0 * b), fold(diff, -1e300, [](double s, double x) { return std::max(s, x); }));
  EXPECT_TRUE(close(
      spmd::prod(a(slice(0, 2), slice(0, 3)) / 100.0),
      fold(ref::map(ref::View::whole(ra)({Arg::sl(0, 2), Arg::sl(0, 3)}).get(), [](double x) { return x / 100.0; }),
           1.0, std::multiplies<double>()),
      rel));
  EXPECT_TRUE(close(spmd::dot(a, b + 1.0),
                    fold(ref::zip(A, B, [](double x, double y) { return x * (y + 1.0); }), 0.0, std::plus<double>()),
                    rel));
  EXPECT_EQ(spmd::count_nonzero(a > 500.0),
            static_cast<index_t>(std::count_if(A.begin(), A.end(), [](double x) { return x > 500.0; })));
  EXPECT_TRUE(spmd::any_of(a > 907.5));
  EXPECT_FALSE(spmd::any_of(a > 908.0));
  EXPECT_TRUE(spmd::all_of(b > a));
  // a view with a halo read as the reduction's operand; a moved operand
  const auto w = ref::View::whole(ra);
  const Vec n = w({Arg::sl(0, -1), Arg::all()}).get(), s = w({Arg::sl(1, None), Arg::all()}).get();
  EXPECT_TRUE(close(spmd::sum(a(slice(1, none)) - a(slice(0, -1))),
                    fold(ref::zip(s, n, [](double x, double y) { return x - y; }), 0.0, std::plus<double>()), rel));
  auto [v, rv] = make<double, 1>(Distribution<1>(world(), {20}), [](const Index<1>& g) { return 0.5 * g[0]; });
  double products = 0;
  for (int i = 0; i < 10; ++i) products += rv.v[i] * rv.v[i + 10];
  EXPECT_EQ(spmd::sum(v(slice(0, 10)) * v(slice(10, 20))), products);
  // empty operands: sums are 0, min and max are errors
  EXPECT_EQ(spmd::sum(a(slice(3, 3))), 0.0);
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::min(a(slice(3, 3)) + 1.0), "spmd::min: zero-size operand (shape {0, 8})");
}

void three_and_four_dimensions() {
  const Distribution<3> d3(world(), {5, 6, 7}, spmd::halo({1, 0, 2}));
  auto [u, ru] = pattern<3>(d3, 0.0, "u");
  auto [v, rv] = pattern<3>(d3, 0.25, "v");
  spmd::exchange_halo(u);
  // v[1:-1, ::2, 2:-2] = u[:-2, ::2, 4:] - u[2:, ::2, :-4] * 0.5 (halo reads along axes 0 and 2)
  v(slice(1, -1), slice(none, none, 2), slice(2, -2)) = u(slice(none, -2), slice(none, none, 2), slice(4, none)) -
                                                        u(slice(2, none), slice(none, none, 2), slice(none, -4)) * 0.5;
  const auto wu = ref::View::whole(ru);
  ref::View::whole(rv)({Arg::sl(1, -1), Arg::sl(None, None, 2), Arg::sl(2, -2)})
      .set(ref::zip(wu({Arg::sl(None, -2), Arg::sl(None, None, 2), Arg::sl(4, None)}).get(),
                    wu({Arg::sl(2, None), Arg::sl(None, None, 2), Arg::sl(None, -4)}).get(),
                    [](double x, double y) { return x - y * 0.5; }));
  expect_array(v, rv, "3-d halo reads");
  // a shift of 1 along axis 1 (no halo there): moved, not an error
  v(spmd::all, slice(1, none), 3) = u(spmd::all, slice(none, -1), 3) + 1.0;
  ref::View::whole(rv)({Arg::all(), Arg::sl(1, None), Arg::at(3)})
      .set(ref::map(wu({Arg::all(), Arg::sl(None, -1), Arg::at(3)}).get(), [](double x) { return x + 1.0; }));
  expect_array(v, rv, "3-d moved along an axis without halo");

  const Distribution<4> d4(world(), {3, 4, 2, 5}, spmd::halo(1));
  auto [x, rx] = pattern<4>(d4, 0.0, "x");
  auto [y, ry] = pattern<4>(d4, 0.5, "y");
  y = spmd::sqrt(x) * y - x;
  ry.v = ref::zip(rx.v, ry.v, [](double s, double t) { return std::sqrt(s) * t - s; });
  expect_array(y, ry, "4-d");
  y(slice(none, none, -1), 1, spmd::all, slice(1, -1)) = x(spmd::all, 2, spmd::all, slice(1, -1)) * 3.0;
  const auto wx = ref::View::whole(rx);
  ref::View::whole(ry)({Arg::sl(None, None, -1), Arg::at(1), Arg::all(), Arg::sl(1, -1)})
      .set(ref::map(wx({Arg::all(), Arg::at(2), Arg::all(), Arg::sl(1, -1)}).get(), [](double s) { return s * 3.0; }));
  expect_array(y, ry, "4-d: reversed, other plane (moved)");
}

}  // namespace

TEST(Expr, Reductions) {
  reductions();
}

TEST(Expr, ThreeAndFourDimensions) {
  three_and_four_dimensions();
}

TEST(Expr, DeviceFormOfTheKernels) {
  // one work item per point, as on a GPU (the in-place tests cover it through each_in_place_path)
  spmd::testing::KnobsGuard guard;
  spmd::testing::knobs().point_items = true;
  spmd::testing::knobs().flat_copies = true;
  halo_reads_after_exchange();
  reductions();
  three_and_four_dimensions();
  // several points per work item (a GPU's form for large boxes), on every box however small
  spmd::testing::knobs().multi_points = 1;
  halo_reads_after_exchange();
  reductions();
  three_and_four_dimensions();
  // the column form (a GPU's form for large boxes of rows at least a warp wide), on every box
  spmd::testing::knobs().column_min = 1;
  halo_reads_after_exchange();
  reductions();
  three_and_four_dimensions();
}

TEST(Expr, DefaultInPlaceFormOfTheSpace) {
  // With the library's own forms (no test switch), an update that reads its destination at
  // other positions takes its space's default form: on a host space the lagged form (in place,
  // a few rows behind: no buffer of the whole update), on a device a buffer and a copy back.
  spmd::testing::KnobsGuard guard;
  spmd::testing::knobs() = spmd::testing::Knobs{};
  auto [a, r] = pattern<2>(dist2(1), 0.0, "a");
  spmd::exchange_halo(a);
  const auto in = slice(1, -1);
  auto center = a(in, in);
  center = 0.5 * (a(slice(0, -2), in) + a(in, slice(2, none)));
  const auto w = ref::View::whole(r);
  const auto I = Arg::sl(1, -1);
  const Vec N = w({Arg::sl(0, -2), I}).get(), E = w({I, Arg::sl(2, None)}).get();
  Vec want(N.size());
  for (std::size_t i = 0; i < N.size(); ++i) want[i] = 0.5 * (N[i] + E[i]);
  w({I, I}).set(want);
  expect_array(a, r, "a[1:-1, 1:-1] = 0.5 * (a[:-2, 1:-1] + a[1:-1, 2:])", 0.0);
  const auto& st = spmd::impl::expr_state(a);
  const auto owned = static_cast<std::size_t>(center.owned().size());
  if (spmd::impl::host_accessible<typename decltype(a)::memory_space>()) {
    EXPECT_EQ(st.scratch.extent(0), 0u) << "a host space buffered the update instead of the lagged form";
    if (owned > 0) {
      EXPECT_GT(st.lagged.extent(0), 0u);
    }
  } else {
    EXPECT_GE(st.scratch.extent(0), owned) << "a device space did not take the buffered form";
    EXPECT_EQ(st.lagged.extent(0), 0u);
  }
}

TEST(Expr, RanksOwningNothing) {
  // 3 elements (or 2 rows) at up to 4 ranks: some ranks own nothing; every operation still runs
  // there (empty boxes: no kernel; moves and reductions still take part)
  auto [a, ra] = make<double, 1>(Distribution<1>(world(), {3}), [](const Index<1>& g) { return 2.0 + g[0]; });
  auto [b, rb] = make<double, 1>(
      Distribution<1>(world(), {3}), [](const Index<1>& g) { return 10.0 * g[0]; }, "b");
  b(slice(none, none, -1)) = a * 2.0 + b(slice(none, none, -1));  // reversed: moved
  ref::View::whole(rb)({Arg::sl(None, None, -1)})
      .set(ref::zip(ra.v, ref::View::whole(rb)({Arg::sl(None, None, -1)}).get(),
                    [](double x, double y) { return x * 2.0 + y; }));
  expect_array(b, rb, "n < p, reversed", 0.0);
  EXPECT_EQ(spmd::sum(a(slice(1, none)) * b(slice(none, -1))), ra.v[1] * rb.v[0] + ra.v[2] * rb.v[1]);
  auto [g, rg] = make<double, 2>(
      Distribution<2>(world(), {2, 5}, spmd::grid({0, 1})), [](const Index<2>& i) { return 1.0 + i[0] * 5 + i[1]; },
      "g");
  g(1, slice(1, none)) = g(0, slice(none, -1)) + g(1, slice(1, none));  // other plane: moved
  ref::View::whole(rg)({Arg::at(1), Arg::sl(1, None)})
      .set(ref::zip(ref::View::whole(rg)({Arg::at(0), Arg::sl(None, -1)}).get(),
                    ref::View::whole(rg)({Arg::at(1), Arg::sl(1, None)}).get(),
                    [](double x, double y) { return x + y; }));
  expect_array(g, rg, "n < p, 2-d", 0.0);
  EXPECT_EQ(spmd::max(g(slice(1, none)) - 1.0), *std::max_element(rg.v.begin() + 5, rg.v.end()) - 1.0);
}

TEST(Expr, BadInputIsACollectiveError) {
  auto a = spmd::zeros<double>(world(), {9, 8}, spmd::halo(1), spmd::label("a"));
  auto b = spmd::zeros<double>(world(), {8, 9});
  SPMD_EXPECT_COLLECTIVE_ERROR(a + b,
                               "spmd::operator+: operands could not be broadcast together with shapes (9, 8) (8, 9)");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::where(a > 0.0, a(slice(1, none)), 0.0),
                               "spmd::where: operands could not be broadcast together with shapes (9, 8) (8, 8)");
  SPMD_EXPECT_COLLECTIVE_ERROR(
      a(slice(1, none)) = a * 2.0,
      "spmd::assign: could not broadcast the expression of shape (9, 8) into destination a[1:9, 0:8] of shape (8, 8)");
  // shifted by 2 along axis 0 with a halo of 1: the halo is too narrow (at every rank count)
  SPMD_EXPECT_COLLECTIVE_ERROR(
      a(slice(2, none)) = a(slice(none, -2)) + 1.0,
      "reads 'a' shifted by -2 along axis 0 relative to destination a[2:9, 0:8], but the halo of "
      "'a' is 1 wide there");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sum(a(slice(1, 5)) * a(slice(5, 9))), "shifted by 4 along axis 0");
  Array<double, 2> null;
  SPMD_EXPECT_COLLECTIVE_ERROR(null = 2.0, "spmd::view_of: a null array");  // a scalar has no shape
  SPMD_EXPECT_COLLECTIVE_ERROR(a(spmd::all) = null, "spmd::view_of: a null array");
  null = a * 2.0;  // an expression gives a null array its values (Array.NullAndMovedFromArrays)
  EXPECT_EQ(null.shape(), a.shape());
}
