// Shape functions (shape.hpp) against a serial reference computed here with NumPy's C-order
// semantics: flip (a view: reads and writes through it), roll (positive, negative, larger than
// the axis, zero shifts), reshape and ravel (-1 inferred; blocks that line up and blocks that do
// not; onto a given distribution), N-d transpose (every permutation of 3 axes; views read in
// place), concatenate, stack and expand_dims (Arrays, views, mixed operands on other grids), and
// squeeze (a view: reads and writes through it), on 1-D to 3-D arrays and views, several process
// grids and halos (halos hold garbage, -777, that must never be read), and bad input as one
// collective error on every rank.
//
//   2-D: 9 x 8 on the automatic grid, (1, p) and (p, 1) with halo 1; 3-D: 4 x 5 x 6 and 3 x 4 x 5
//   (uneven blocks at 3 and 4 ranks); reshape sources 6 x 10 and 7 x 5.
#include "breadth_test.hpp"

#include <cmath>
#include <string>
#include <tuple>
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

/// The C-order flat index of g in `shape`.
template <int N>
index_t flat(const Index<N>& shape, const Index<N>& g) {
  index_t f = 0;
  for (int d = 0; d < N; ++d) f = f * shape[d] + g[d];
  return f;
}

/// np.transpose(x, order) of the row-major x of `shape`, row-major.
template <int N>
std::vector<double> permuted(const Index<N>& shape, const std::vector<double>& x, const std::array<int, N>& order) {
  Index<N> out{};
  for (int k = 0; k < N; ++k) out[k] = shape[order[k]];
  return host_array<N>(out, [&](const Index<N>& j) {
    Index<N> i{};
    for (int k = 0; k < N; ++k) i[order[k]] = j[k];
    return x[std::size_t(flat<N>(shape, i))];
  });
}

std::string where(const char* what, const std::string& d) {
  return std::string(what) + " on " + d;
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
      const Array<double, 2> c(f);
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

// np.reshape / np.ravel in C order: the flattened values never change, so the reference of any
// reshape of x is x's own row-major vector.
void Reshape() {
  const int p = world().size();
  const Index<2> shape{6, 10};
  const auto ref = host_array<2>(shape, [](const Index<2>& g) { return 100.0 * g[0] + g[1]; });
  for (const auto& d : {Distribution<2>(world(), shape), Distribution<2>(world(), shape, spmd::grid({1, p})),
                        Distribution<2>(world(), shape, spmd::grid({p, 1}), spmd::halo(1))}) {
    const auto a = from_host<2>(d, ref);
    const auto r1 = spmd::reshape(a, {4, 15});
    EXPECT_EQ(r1.shape(), (Index<2>{4, 15}));
    expect_all(spmd::allgather(r1) == ref, where("reshape to (4, 15)", d.describe()).c_str());
    const auto r2 = spmd::reshape(a, {-1, 4});  // inferred: (15, 4)
    EXPECT_EQ(r2.shape(), (Index<2>{15, 4}));
    expect_all(spmd::allgather(r2) == ref, where("reshape to (-1, 4)", d.describe()).c_str());
    const auto r3 = spmd::reshape(a, {3, -1, 5}, spmd::halo(1), spmd::label("r3"));  // (3, 4, 5), with a halo
    EXPECT_EQ(r3.shape(), (Index<3>{3, 4, 5}));
    EXPECT_EQ(r3.label(), "r3");
    expect_all(spmd::allgather(r3) == ref, where("reshape to (3, -1, 5) with halo", d.describe()).c_str());
    const auto r4 = spmd::reshape(a, Index<2>{6, 10}, spmd::grid({1, p}));  // same shape, other grid
    expect_all(spmd::allgather(r4) == ref, where("reshape to its own shape", d.describe()).c_str());
    const auto f = spmd::ravel(a);
    EXPECT_EQ(f.shape(), (Index<1>{60}));
    expect_all(spmd::allgather(f) == ref, where("ravel", d.describe()).c_str());
    // and back: 1-D to 2-D, onto a given distribution with a halo
    const Distribution<2> to(world(), Index<2>{10, 6}, spmd::grid({p, 1}), spmd::halo(1));
    const auto b = spmd::reshape(f, to);
    EXPECT_EQ(b.distribution(), to);
    expect_all(spmd::allgather(b) == ref, where("reshape onto a distribution", d.describe()).c_str());
    // a view: a[1:, ::2] (5 x 5), raveled and reshaped
    const auto v = a(spmd::slice(1, spmd::none), spmd::slice(spmd::none, spmd::none, 2));
    const auto vref =
        host_array<2>(Index<2>{5, 5}, [&](const Index<2>& g) { return ref[std::size_t((g[0] + 1) * 10 + 2 * g[1])]; });
    expect_all(spmd::allgather(spmd::reshape(v, {25})) == vref, where("reshape of a view", d.describe()).c_str());
  }
  // blocks that line up move nothing: the rows of (4p, 6) on p ranks are the blocks of 24p
  const Distribution<2> rows(world(), Index<2>{4 * p, 6}, spmd::grid({p, 1}), spmd::halo(1));
  const spmd::impl::ReshapePlan<double, 2, 1, spmd::DefaultMemorySpace> aligned(
      rows, Distribution<1>(world(), Index<1>{24 * p}), "test");
  expect_all(aligned.num_sends() == 0 && aligned.num_recvs() == 0 && aligned.local_points() == 24,
             "a reshape of aligned blocks stays local");
  // blocks that do not: each rank sends only to the ranks owning its elements' new places
  const spmd::impl::ReshapePlan<double, 2, 1, spmd::DefaultMemorySpace> crossed(
      Distribution<2>(world(), Index<2>{4 * p, 6}, spmd::grid({1, p})), Distribution<1>(world(), Index<1>{24 * p}),
      "test");
  expect_all(crossed.num_sends() <= p - 1 && crossed.num_recvs() <= p - 1, "one message per peer at most");
  // uneven blocks, 3-D with a halo to 2-D and 1-D, and a 0-size array
  const Index<3> s3{3, 4, 5};
  const auto r3 = host_array<3>(s3, [](const Index<3>& g) { return 100.0 * g[0] + 10.0 * g[1] + g[2]; });
  const auto a3 = from_host<3>(Distribution<3>(world(), s3, spmd::halo(1)), r3);
  expect_all(spmd::allgather(spmd::reshape(a3, {5, 12})) == r3, "reshape 3-D to (5, 12)");
  expect_all(spmd::allgather(spmd::reshape(Kokkos::DefaultExecutionSpace(), a3, {-1}, spmd::grid({p}))) == r3,
             "reshape 3-D to 1-D");
  expect_all(spmd::allgather(spmd::reshape(a3, {7 - 2, 2, 6})) == r3, "reshape 3-D to (5, 2, 6)");
  // np.cumsum / np.cumprod of an N-d operand without an axis: of its C-order flattening
  std::vector<double> cs(r3.size()), cp(r3.size());
  double sum = 0, prod = 1;
  for (std::size_t i = 0; i < r3.size(); ++i) {
    cs[i] = sum += 2.0 * r3[i];
    cp[i] = prod *= (i % 7 == 0 ? 1.0 : 1.0 / 1024.0);  // exact in binary floating point
  }
  expect_all(spmd::allgather(spmd::cumsum(2.0 * a3)) == cs, "cumsum of a 3-D expression (flattened)");
  const auto b3 =
      from_host<3>(Distribution<3>(world(), s3, spmd::grid({1, 0, 1})),
                   host_array<3>(s3, [&](const Index<3>& g) { return flat<3>(s3, g) % 7 == 0 ? 1.0 : 1.0 / 1024.0; }));
  expect_all(spmd::allgather(spmd::cumprod(b3)) == cp, "cumprod of a 3-D array (flattened)");
  const auto z0 = spmd::zeros<double>(world(), {0, 4});
  EXPECT_EQ(spmd::reshape(z0, {2, 0, 3}).shape(), (Index<3>{2, 0, 3}));
  // NumPy: np.zeros((0, 4)).reshape(2, 0, -1) is an error (any extent fits the -1)
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::reshape(z0, {2, 0, -1}), "no extent for the -1 axis fits");
  // bad shapes: every rank throws, naming both shapes
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::reshape(a3, {7, 9}),
                               "spmd::reshape: cannot reshape an array of shape {3, 4, 5} (60 elements) into shape "
                               "{7, 9} (63 elements)");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::reshape(a3, {7, -1}), "shape {3, 4, 5} (60 elements) into shape {7, -1}");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::reshape(a3, {-1, -1}), "infers more than one axis");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::reshape(a3, {-2, -30}), "negative extent");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::reshape(a3, Distribution<1>(world(), Index<1>{61})), "(61 elements)");
}

// np.transpose(x, order) for every order of 3 axes, of arrays on several grids with halos and
// of views; the 2-D transpose and the reversed default.
void Transpose() {
  const int p = world().size();
  const Index<3> s3{3, 4, 5};
  const auto ref = host_array<3>(s3, [](const Index<3>& g) { return 100.0 * g[0] + 10.0 * g[1] + g[2]; });
  const std::array<std::array<int, 3>, 6> orders{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  for (const auto& d :
       {Distribution<3>(world(), s3), Distribution<3>(world(), s3, spmd::grid({1, p, 1}), spmd::halo({0, 1, 2})),
        Distribution<3>(world(), s3, spmd::grid({0, 0, 1}), spmd::halo(1))}) {
    const auto a = from_host<3>(d, ref);
    for (const auto& o : orders) {
      const auto t = spmd::transpose(a, spmd::axes(o[0], o[1], o[2]));
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(t.shape()[k], s3[o[k]]);
        EXPECT_EQ(t.halo()[k], d.halo()[o[k]]);  // halo widths follow their axes
      }
      expect_all(spmd::allgather(t) == permuted<3>(s3, ref, o),
                 where(("transpose " + spmd::impl::shape_str(o)).c_str(), d.describe()).c_str());
    }
    expect_all(spmd::allgather(spmd::transpose(a)) == permuted<3>(s3, ref, {2, 1, 0}),
               where("transpose (reversed)", d.describe()).c_str());
    expect_all(spmd::allgather(spmd::transpose(a, spmd::axes(-1, 0, 1))) == permuted<3>(s3, ref, {2, 0, 1}),
               where("transpose with a negative axis", d.describe()).c_str());
    // a view: a[1:, :, ::-2] (2 x 4 x 3), transposed (1, 2, 0), no temporary
    const auto v = a(spmd::slice(1, spmd::none), spmd::all, spmd::slice(spmd::none, spmd::none, -2));
    const Index<3> vs{2, 4, 3};
    const auto vref = host_array<3>(vs, [&](const Index<3>& g) {
      return ref[std::size_t(flat<3>(s3, {g[0] + 1, g[1], 4 - 2 * g[2]}))];
    });
    expect_all(spmd::allgather(spmd::transpose(Kokkos::DefaultExecutionSpace(), v, spmd::axes(1, 2, 0),
                                               spmd::halo(1))) == permuted<3>(vs, vref, {1, 2, 0}),
               where("transpose of a view", d.describe()).c_str());
    // a 2-D view of a 3-D array (integer index drops axis 1): the matrix transpose
    const auto w = a(spmd::all, 2, spmd::all);
    const auto wref = host_array<2>(Index<2>{3, 5}, [&](const Index<2>& g) { return 100.0 * g[0] + 20.0 + g[1]; });
    expect_all(spmd::allgather(spmd::transpose(w)) == permuted<2>({3, 5}, wref, {1, 0}),
               where("transpose of a 2-D view of a 3-D array", d.describe()).c_str());
  }
  // the 2-D form keeps its meaning: shape (n1, n0), halo widths swapped
  const Index<2> s2{9, 8};
  const auto r2 = host_array<2>(s2, [](const Index<2>& g) { return 100.0 * g[0] + g[1]; });
  const auto m = from_host<2>(Distribution<2>(world(), s2, spmd::grid({p, 1}), spmd::halo({1, 0})), r2);
  const auto mt = spmd::transpose(m);
  EXPECT_EQ(mt.shape(), (Index<2>{8, 9}));
  EXPECT_EQ(mt.halo(), (std::array<int, 2>{0, 1}));
  expect_all(spmd::allgather(mt) == permuted<2>(s2, r2, {1, 0}), "2-D transpose");
  const auto a = from_host<3>(Distribution<3>(world(), s3), ref);
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::transpose(a, spmd::axes(0, 0, 1)),
                               "spmd::transpose: axis 0 is named twice (shape {3, 4, 5})");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::transpose(a, spmd::axes(0, 1, 3)), "axis 3 is out of bounds");
}

// np.concatenate and np.stack of Arrays on different grids, views and mixed operands;
// np.expand_dims.
void ConcatenateStack() {
  const int p = world().size();
  const auto va = [](const Index<2>& g) { return 100.0 * g[0] + g[1]; };
  const auto vb = [](const Index<2>& g) { return -100.0 * g[0] - g[1] - 1.0; };
  const auto a = from_host<2>(Distribution<2>(world(), {4, 5}, spmd::halo(1)), host_array<2>(Index<2>{4, 5}, va));
  const auto b = from_host<2>(Distribution<2>(world(), {3, 5}, spmd::grid({1, p})), host_array<2>(Index<2>{3, 5}, vb));
  const auto c = from_host<2>(Distribution<2>(world(), {4, 2}, spmd::grid({p, 1})), host_array<2>(Index<2>{4, 2}, vb));
  // along axis 0: (7, 5)
  const auto ab = spmd::concatenate({a, b}, spmd::axis(0));
  EXPECT_EQ(ab.shape(), (Index<2>{7, 5}));
  expect_all(spmd::allgather(ab) == host_array<2>(Index<2>{7, 5},
                                                  [&](const Index<2>& g) {
                                                    return g[0] < 4 ? va(g) : vb({g[0] - 4, g[1]});
                                                  }),
             "concatenate axis 0");
  // along axis -1 (1), three operands, with a halo on the result
  const auto aca = spmd::concatenate(std::vector<Array<double, 2>>{a, c, a}, spmd::axis(-1), spmd::halo(1));
  EXPECT_EQ(aca.shape(), (Index<2>{4, 12}));
  expect_all(spmd::allgather(aca) == host_array<2>(Index<2>{4, 12},
                                                   [&](const Index<2>& g) {
                                                     if (g[1] < 5) return va(g);
                                                     if (g[1] < 7) return vb({g[0], g[1] - 5});
                                                     return va({g[0], g[1] - 7});
                                                   }),
             "concatenate axis -1");
  // views and arrays mixed: a[::-1, 1:4] and c, along axis 1 (4, 5)
  const auto v = a(spmd::slice(spmd::none, spmd::none, -1), spmd::slice(1, 4));
  const auto vc = spmd::concatenate(std::tie(v, c), spmd::axis(1));
  expect_all(spmd::allgather(vc) == host_array<2>(Index<2>{4, 5},
                                                  [&](const Index<2>& g) {
                                                    return g[1] < 3 ? va({3 - g[0], g[1] + 1}) : vb({g[0], g[1] - 3});
                                                  }),
             "concatenate a view and an array");
  // stack along every new axis: (2, 4, 5), (4, 2, 5), (4, 5, 2)
  const auto a2 = from_host<2>(Distribution<2>(world(), {4, 5}, spmd::grid({1, p})), host_array<2>(Index<2>{4, 5}, vb));
  for (int axis : {0, 1, 2, -1}) {
    const int ax = axis < 0 ? axis + 3 : axis;
    const auto s = spmd::stack({a, a2}, spmd::axis(axis));
    Index<3> want{4, 5, 5};
    want = ax == 0 ? Index<3>{2, 4, 5} : ax == 1 ? Index<3>{4, 2, 5} : Index<3>{4, 5, 2};
    EXPECT_EQ(s.shape(), want);
    expect_all(spmd::allgather(s) == host_array<3>(want,
                                                   [&](const Index<3>& g) {
                                                     Index<2> i{};
                                                     for (int k = 0, m = 0; k < 3; ++k)
                                                       if (k != ax) i[m++] = g[k];
                                                     return g[ax] == 0 ? va(i) : vb(i);
                                                   }),
               ("stack along axis " + std::to_string(axis)).c_str());
  }
  // stack of views (one type) with an execution space: (3, 4, 3)
  const auto w = a(spmd::all, spmd::slice(0, 3));
  const auto ww = spmd::stack(Kokkos::DefaultExecutionSpace(), {w, w, w}, spmd::axis(0));
  EXPECT_EQ(ww.shape(), (Index<3>{3, 4, 3}));
  expect_all(spmd::allgather(ww) == host_array<3>(Index<3>{3, 4, 3},
                                                  [&](const Index<3>& g) {
                                                    return va({g[1], g[2]});
                                                  }),
             "stack of views");
  // expand_dims: (1, 4, 5), (4, 1, 5), (4, 5, 1); the values are a's in C order
  const auto aref = host_array<2>(Index<2>{4, 5}, va);
  for (int axis : {0, 1, 2, -3}) {
    const auto e = spmd::expand_dims(a, spmd::axis(axis));
    const int ax = axis < 0 ? axis + 3 : axis;
    EXPECT_EQ(e.shape()[ax], 1);
    expect_all(spmd::allgather(e) == aref, ("expand_dims axis " + std::to_string(axis)).c_str());
  }
  expect_all(spmd::allgather(spmd::expand_dims(v, spmd::axis(1))) == host_array<2>(Index<2>{4, 3},
                                                                                   [&](const Index<2>& g) {
                                                                                     return va({3 - g[0], g[1] + 1});
                                                                                   }),
             "expand_dims of a view");
  // bad input: every rank throws, naming the shapes and the axis
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::concatenate({a, b}, spmd::axis(1)),
                               "spmd::concatenate: operand 1 has shape {3, 5} but operand 0 has shape {4, 5}: they "
                               "must agree on every axis but the concatenation axis 1");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::concatenate({a, b}, spmd::axis(2)),
                               "spmd::concatenate: axis 2 is out of bounds for 2 axes (operand shape {4, 5})");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::stack({a, b}, spmd::axis(0)),
                               "spmd::stack: operand 1 has shape {3, 5} but operand 0 has shape {4, 5}");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::stack(std::tie(a, c), spmd::axis(-4)), "axis -4 is out of bounds for 3 axes");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::expand_dims(a, spmd::axis(3)), "spmd::expand_dims: axis 3 is out of bounds");
}

// np.squeeze: a view; reads and writes through it, of arrays and of views.
void Squeeze() {
  const int p = world().size();
  const Index<3> s3{1, 6, 1};
  const auto ref = host_array<3>(s3, [](const Index<3>& g) { return 10.0 * g[1] + 1.0; });
  for (const auto& d :
       {Distribution<3>(world(), s3), Distribution<3>(world(), s3, spmd::grid({1, p, 1}), spmd::halo(1))}) {
    auto a = from_host<3>(d, ref);
    const auto q = spmd::squeeze(a, spmd::axes(0, 2));
    static_assert(decltype(q)::rank == 1, "squeeze of two axes of three leaves one");
    EXPECT_EQ(q.shape(), (Index<1>{6}));
    const Array<double, 1> qc(q);
    expect_all(spmd::allgather(qc) == ref, where("squeeze axes (0, 2)", d.describe()).c_str());
    const auto q2 = spmd::squeeze(a, spmd::axis(-1));
    EXPECT_EQ(q2.shape(), (Index<2>{1, 6}));
    const Array<double, 2> q2c(q2);
    expect_all(spmd::allgather(q2c) == ref, where("squeeze axis -1", d.describe()).c_str());
    const auto q3 = spmd::squeeze<1>(a);
    const Array<double, 1> q3c(q3);
    expect_all(spmd::allgather(q3c) == ref, where("squeeze<1>", d.describe()).c_str());
    // writing through the view writes a
    auto w = spmd::squeeze(a, spmd::axes(0, 2));
    w = 2.0 * w;
    std::vector<double> twice(ref);
    for (auto& x : twice) x *= 2.0;
    expect_all(spmd::allgather(a) == twice, where("write through squeeze", d.describe()).c_str());
    SPMD_EXPECT_COLLECTIVE_ERROR(spmd::squeeze(a, spmd::axis(1)),
                                 "spmd::squeeze: cannot squeeze axis 1 of shape {1, 6, 1}: its extent is 6, not 1");
    SPMD_EXPECT_COLLECTIVE_ERROR(spmd::squeeze<2>(a), "spmd::squeeze<2>: shape {1, 6, 1} has 1 axes");
  }
  // a view of a view: row 2 of a 2-D array as a (1, 5) slice, squeezed to (5,)
  const Index<2> s2{4, 5};
  const auto r2 = host_array<2>(s2, [](const Index<2>& g) { return 100.0 * g[0] + g[1]; });
  const auto b = from_host<2>(Distribution<2>(world(), s2, spmd::halo(1)), r2);
  const auto row = b(spmd::slice(2, 3), spmd::slice(spmd::none, spmd::none, -1));
  const Array<double, 1> rc(spmd::squeeze(row, spmd::axis(0)));
  expect_all(spmd::allgather(rc) == std::vector<double>{204, 203, 202, 201, 200}, "squeeze of a view");
}

}  // namespace shape_tests

TEST(Shape, Flip) {
  shape_tests::Flip();
}
TEST(Shape, Roll) {
  shape_tests::Roll();
}
TEST(Shape, Reshape) {
  shape_tests::Reshape();
}
TEST(Shape, Transpose) {
  shape_tests::Transpose();
}
TEST(Shape, ConcatenateStack) {
  shape_tests::ConcatenateStack();
}
TEST(Shape, Squeeze) {
  shape_tests::Squeeze();
}
