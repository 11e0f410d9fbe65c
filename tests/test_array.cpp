// spmd::Array: creation, scatter/gather, storage views, index maps, element access, copies.
#include "spmd_test.hpp"

using spmd::Array;
using spmd::Box;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::host_array;
using spmd::testing::pattern_value;
using spmd::testing::world;

namespace {
template <int N>
void check_roundtrip(const Index<N>& shape, int halo) {
  Distribution<N> d(world(), shape, spmd::halo(halo));
  auto a = spmd::zeros<double>(d, spmd::label("spmd::test::a"));
  const auto ref = host_array<N>(shape, [](const Index<N>& g) { return pattern_value<N>(g); });
  spmd::scatter(a, world().rank() == 0 ? ref : std::vector<double>{});
  // Storage: owned extents plus a halo on both sides; owned() a subview of it.
  for (int ax = 0; ax < N; ++ax) {
    EXPECT_EQ(a.local_with_halo().extent(ax), static_cast<std::size_t>(a.owned().extent(ax) + 2 * halo));
    EXPECT_EQ(a.local().extent(ax), static_cast<std::size_t>(a.owned().extent(ax)));
  }
  // The owned block holds the reference values at the right global indices.
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
  bool ok = true;
  spmd::for_each_index(a.owned(), [&](const Index<N>& g) {
    const auto l = a.local_index(g);
    std::array<std::size_t, 8> li{};
    for (int ax = 0; ax < N; ++ax) li[ax] = static_cast<std::size_t>(l[ax]);
    double v;
    if constexpr (N == 1) v = host(li[0]);
    if constexpr (N == 2) v = host(li[0], li[1]);
    if constexpr (N == 3) v = host(li[0], li[1], li[2]);
    if constexpr (N == 4) v = host(li[0], li[1], li[2], li[3]);
    ok = ok && v == pattern_value<N>(g);
  });
  spmd::testing::expect_all(ok, "scatter placed values at their global indices");
  // Gather on the last rank and on every rank gives the reference back.
  const int root = world().size() - 1;
  auto back = spmd::gather(a, root);
  if (world().rank() == root)
    EXPECT_EQ(back, ref);
  else
    EXPECT_TRUE(back.empty());
  EXPECT_EQ(spmd::allgather(a), ref);
}
}  // namespace

TEST(Array, ScatterGatherRoundTrip1Dto4D) {
  check_roundtrip<1>({17}, 0);
  check_roundtrip<1>({17}, 1);
  check_roundtrip<2>({7, 5}, 1);
  check_roundtrip<2>({9, 8}, 2);
  check_roundtrip<3>({5, 6, 4}, 1);
  check_roundtrip<4>({4, 3, 5, 2}, 0);
  check_roundtrip<4>({4, 4, 4, 4}, 1);
}

TEST(Array, MoreRanksThanIndicesAndEmptyArrays) {
  check_roundtrip<1>({2}, 0);  // ranks >= 2 own nothing
  check_roundtrip<2>({1, 3}, 0);
  check_roundtrip<2>({0, 5}, 0);  // nothing anywhere
  auto e = spmd::zeros<double>(world(), {0});
  EXPECT_EQ(e.size(), 0);
  EXPECT_TRUE(spmd::allgather(e).empty());
}

TEST(Array, CreationFunctions) {
  auto z = spmd::zeros<double>(world(), {6, 5}, spmd::halo(1), spmd::label("z"));
  EXPECT_EQ(z.label(), "z");
  EXPECT_EQ(z.shape(), (Index<2>{6, 5}));
  EXPECT_EQ(z.size(), 30);
  for (double v : spmd::allgather(z)) EXPECT_EQ(v, 0.0);
  auto o = spmd::ones<float>(world(), {11});
  for (float v : spmd::allgather(o)) EXPECT_EQ(v, 1.0f);
  auto f = spmd::full(world(), {3, 2, 2}, 2.5);
  for (double v : spmd::allgather(f)) EXPECT_EQ(v, 2.5);
  auto fl = spmd::full_like(z, -1.0);
  EXPECT_TRUE(fl.distribution() == z.distribution());
  for (double v : spmd::allgather(fl)) EXPECT_EQ(v, -1.0);
  auto ol = spmd::ones_like(fl);
  for (double v : spmd::allgather(ol)) EXPECT_EQ(v, 1.0);
  auto zl = spmd::zeros_like(ol);
  for (double v : spmd::allgather(zl)) EXPECT_EQ(v, 0.0);
  auto el = spmd::empty_like(zl);
  EXPECT_EQ(el.shape(), zl.shape());
  // fill_with_halo covers the halo too; fill (as `a = v`) the owned block only
  fl.fill_with_halo(3.0);
  fl.fill(4.0);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), fl.local_with_halo());
  const auto& box = fl.owned();
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j) {
      const Index<2> g{box.lo[0] - 1 + index_t(i), box.lo[1] - 1 + index_t(j)};
      EXPECT_EQ(h(i, j), box.contains(g) ? 4.0 : 3.0);
    }
}

TEST(Array, ArangeMatchesNumPy) {
  auto a = spmd::arange<int>(world(), 13);
  std::vector<int> ref(13);
  for (int i = 0; i < 13; ++i) ref[i] = i;
  EXPECT_EQ(spmd::allgather(a), ref);
  auto b = spmd::arange<double>(world(), 1.0, 2.0, 0.25);  // numpy: [1, 1.25, 1.5, 1.75]
  EXPECT_EQ(spmd::allgather(b), (std::vector<double>{1.0, 1.25, 1.5, 1.75}));
  auto c = spmd::arange<int>(world(), 10, 0, -3);  // numpy: [10, 7, 4, 1]
  EXPECT_EQ(spmd::allgather(c), (std::vector<int>{10, 7, 4, 1}));
  auto e = spmd::arange<int>(world(), 5, 5, 1);
  EXPECT_EQ(e.size(), 0);
}

TEST(Array, GetSetAndIndexMaps) {
  Distribution<2> d(world(), {7, 5}, spmd::halo(1));
  auto a = spmd::zeros<double>(d);
  const auto ref = host_array<2>(d.shape(), [](const Index<2>& g) { return pattern_value<2>(g); });
  spmd::scatter(a, world().rank() == 0 ? ref : std::vector<double>{});
  // get: collective, the same value everywhere, including indices owned by other ranks.
  for (Index<2> g : {Index<2>{0, 0}, Index<2>{6, 4}, Index<2>{3, 2}, Index<2>{5, 0}})
    EXPECT_EQ(a.get(g), pattern_value<2>(g));
  EXPECT_EQ(a.get(4, 1), pattern_value<2>({4, 1}));
  // set: the owner writes
  a.set({6, 4}, -7.0);
  EXPECT_EQ(a.get(6, 4), -7.0);
  // local_index of owned corners and of halo points
  const auto& o = a.owned();
  if (!o.empty()) {
    EXPECT_EQ(a.local_index(o.lo), (std::array<int, 2>{1, 1}));
    EXPECT_EQ(a.local_index({o.lo[0] - 1, o.lo[1] - 1}), (std::array<int, 2>{0, 0}));
    EXPECT_THROW(a.local_index({o.hi[0] + 1, o.lo[1]}), spmd::Error);
  }
}

TEST(Array, CopiesAreValuesSlicesShare) {
  auto a = spmd::arange<double>(world(), 10);
  auto copied = a;  // a value: its own storage
  auto deep = spmd::copy(a);
  auto view = a(spmd::all);  // a slice: shares a's storage
  copied.fill(4.0);
  std::vector<double> ref(10);
  for (int i = 0; i < 10; ++i) ref[i] = i;
  EXPECT_EQ(spmd::allgather(a), ref);
  EXPECT_EQ(spmd::allgather(deep), ref);
  EXPECT_EQ(spmd::allgather(copied), std::vector<double>(10, 4.0));
  a.fill(2.0);
  EXPECT_EQ(spmd::sum(view), 20.0);
  EXPECT_NE(copied.local_with_halo().data(), a.local_with_halo().data());
  // copy between halos of one layout
  Distribution<1> wide(world(), {10}, spmd::grid({world().size()}));
  auto b = spmd::zeros<double>(wide);
  spmd::copyto(b, deep);
  EXPECT_EQ(spmd::allgather(b), ref);
}

TEST(Array, HostMemorySpaceWorksBesideTheDefault) {
  auto h = spmd::zeros<double, Kokkos::HostSpace>(world(), {9});
  h.fill(2.0);
  EXPECT_EQ(spmd::allgather(h), std::vector<double>(9, 2.0));
}

// Null arrays (default-constructed or moved from): assignment between them is a no-op, a halo
// exchange is an spmd::Error (not a crash), and an expression assigned to one materialises.
TEST(Array, NullAndMovedFromArrays) {
  spmd::Array<double, 1> a, b;
  a = b;
  EXPECT_TRUE(a.is_null());
  auto c = spmd::arange<double>(world(), 0.0, 9.0, 1.0, spmd::halo(1));
  spmd::Array<double, 1> d = std::move(c);
  EXPECT_THROW(spmd::exchange_halo(c), spmd::Error);  // NOLINT(bugprone-use-after-move): on purpose
  spmd::Array<double, 1> r;
  r = d * 2.0 + 1.0;
  ASSERT_FALSE(r.is_null());
  std::vector<double> ref(9);
  for (int i = 0; i < 9; ++i) ref[i] = 2.0 * i + 1.0;
  EXPECT_EQ(spmd::allgather(r), ref);
  c = r;  // a moved-from array can be assigned again
  EXPECT_EQ(spmd::allgather(c), ref);
}
