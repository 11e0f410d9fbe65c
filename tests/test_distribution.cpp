// spmd::Box and spmd::Distribution: balanced blocks, process grids, owners, neighbours.
#include "spmd_test.hpp"

using spmd::Box;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::world;

TEST(Box, Basics) {
  Box<2> a{{0, 0}, {4, 6}}, b{{2, 3}, {7, 5}};
  EXPECT_EQ(a.size(), 24);
  auto c = a.intersect(b);
  EXPECT_EQ(c, (Box<2>{{2, 3}, {4, 5}}));
  EXPECT_TRUE(a.contains({3, 5}));
  EXPECT_FALSE(a.contains({4, 0}));
  EXPECT_TRUE((Box<2>{{0, 0}, {4, 6}}.intersect(Box<2>{{5, 0}, {6, 6}}).empty()));
  EXPECT_EQ(a.shift({1, -1}), (Box<2>{{1, -1}, {5, 5}}));
  EXPECT_EQ(b.offset_of({3, 4}), 1 * 2 + 1);
  int n = 0;
  spmd::for_each_index(Box<3>{{0, 1, 2}, {2, 3, 4}}, [&](const Index<3>& i) {
    EXPECT_EQ(i[2], 2 + n % 2);
    ++n;
  });
  EXPECT_EQ(n, 8);
}

TEST(Distribution, BalancedBlocksCoverTheShapeExactlyOnce) {
  // Serial reference: count owners of every index; also check the first (n mod p) blocks are
  // one larger.
  const auto& w = world();
  for (Index<2> shape : {Index<2>{7, 5}, Index<2>{1, 9}, Index<2>{2, 2}, Index<2>{13, 1}, Index<2>{0, 4}}) {
    Distribution<2> d(w, shape);
    std::vector<int> owners(static_cast<std::size_t>(shape[0] * shape[1]), 0);
    Box<2> whole{{0, 0}, shape};
    index_t total = 0;
    for (int r = 0; r < w.size(); ++r) {
      auto b = d.owned_by(r);
      total += b.size();
      spmd::for_each_index(b, [&](const Index<2>& g) {
        owners[static_cast<std::size_t>(whole.offset_of(g))]++;
        EXPECT_EQ(d.owner(g), r);
      });
    }
    EXPECT_EQ(total, whole.size());
    for (int o : owners) EXPECT_EQ(o, 1);
    for (int ax = 0; ax < 2; ++ax) {
      const int p = d.dims()[ax];
      for (int c = 0; c < p; ++c) {
        const index_t expect = shape[ax] / p + (c < shape[ax] % p ? 1 : 0);
        EXPECT_EQ(spmd::impl::block_extent(shape[ax], p, c), expect);
      }
    }
    EXPECT_EQ(d.owned(), d.owned_by(w.rank()));
  }
}

TEST(Distribution, UnevenSevenByFiveOnThreeRanks) {
  // 7 x 5 over 3 ranks picks grid 3 x 1 (least halo surface):
  //   rank 0: rows 0..2, rank 1: rows 3..4, rank 2: rows 5..6
  if (world().size() != 3) GTEST_SKIP() << "needs 3 ranks";
  Distribution<2> d(world(), {7, 5}, spmd::halo(1));
  EXPECT_EQ(d.dims(), (std::array<int, 2>{3, 1}));
  EXPECT_EQ(d.owned_by(0), (Box<2>{{0, 0}, {3, 5}}));
  EXPECT_EQ(d.owned_by(1), (Box<2>{{3, 0}, {5, 5}}));
  EXPECT_EQ(d.owned_by(2), (Box<2>{{5, 0}, {7, 5}}));
}

TEST(Distribution, AutomaticGridPrefersSmallSurface) {
  const int p = world().size();
  Distribution<2> square(world(), {64, 64});
  if (p == 4) {
    EXPECT_EQ(square.dims(), (std::array<int, 2>{2, 2}));
  }
  Distribution<2> tall(world(), {1000, 4});
  EXPECT_EQ(tall.dims()[0], p);  // cut the long axis
  Distribution<3> cube(world(), {8, 8, 8});
  EXPECT_EQ(cube.dims()[0] * cube.dims()[1] * cube.dims()[2], p);
  // Partly given grid: the 0 is completed.
  Distribution<2> partly(world(), {16, 16}, spmd::grid({1, 0}));
  EXPECT_EQ(partly.dims(), (std::array<int, 2>{1, p}));
}

TEST(Distribution, GivenGridAndCoordinatesRoundTrip) {
  const int p = world().size();
  Distribution<3> d(world(), {5, 6, 7}, spmd::grid({1, p, 1}));
  EXPECT_EQ(d.dims(), (std::array<int, 3>{1, p, 1}));
  for (int r = 0; r < p; ++r) EXPECT_EQ(d.rank_of(d.coords_of(r)), r);
  EXPECT_EQ(d.coords()[1], world().rank());
}

TEST(Distribution, MoreRanksThanIndices) {
  // An axis of 2 over p ranks: ranks >= 2 own nothing, and everything still agrees.
  const int p = world().size();
  Distribution<1> d(world(), {2});
  EXPECT_EQ(d.owned().size(), p == 1 ? 2 : (world().rank() < 2 ? 1 : 0));
  EXPECT_EQ(d.owner({1}), p >= 2 ? 1 : 0);
}

TEST(Distribution, NeighboursWrapOnPeriodicAxes) {
  const int p = world().size();
  const int r = world().rank();
  Distribution<1> open(world(), {4 * p}, spmd::halo(1));
  EXPECT_EQ(open.neighbor({-1}), r > 0 ? r - 1 : -1);
  EXPECT_EQ(open.neighbor({1}), r < p - 1 ? r + 1 : -1);
  Distribution<1> ring(world(), {4 * p}, spmd::halo(1), spmd::periodic());
  EXPECT_EQ(ring.neighbor({-1}), (r + p - 1) % p);
  EXPECT_EQ(ring.neighbor({1}), (r + 1) % p);
  EXPECT_EQ(ring.local_extents_with_halo()[0], 4 + 2);
  EXPECT_FALSE(ring == open);
  EXPECT_TRUE(ring.same_layout(open));
}

TEST(Distribution, AutomaticGridRespectsTheHalo) {
  // 3 x 8 on 4 ranks with halo 2: a 2 x 2 grid would give blocks of 1 row (narrower than the
  // halo); the automatic grid must pick 1 x 4 instead of failing.
  if (world().size() != 4) GTEST_SKIP() << "needs 4 ranks";
  Distribution<2> d(world(), {3, 8}, spmd::halo(2));
  EXPECT_EQ(d.dims(), (std::array<int, 2>{1, 4}));
}

TEST(Distribution, OptionListOfTheWrongLengthOnOneRank) {
  // Only the last rank passes a 3-entry halo list for a 2-d shape: every rank throws the same
  // error and nobody waits in the constructor's collective.
  const bool odd = world().rank() == world().size() - 1;
  SPMD_EXPECT_COLLECTIVE_ERROR((Distribution<2>(world(), {8, 8}, odd ? spmd::halo({1, 1, 1}) : spmd::halo(1))),
                               "halo(...) has 3 entries for a 2-d shape");
}
