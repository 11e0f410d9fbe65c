// Bad input gets the same spmd::Error on every rank and nothing hangs (run at 2+ ranks).
#include "spmd_test.hpp"

using spmd::Distribution;
using spmd::Index;
using spmd::testing::world;

TEST(Errors, GlobalShapesDifferAcrossRanks) {
  const spmd::index_t extra = world().rank() == world().size() - 1 ? 1 : 0;
  SPMD_EXPECT_COLLECTIVE_ERROR((Distribution<2>(world(), {8, 8 + extra})), "global shapes differ across ranks");
}

TEST(Errors, HaloOrPeriodicDifferAcrossRanks) {
  const int h = world().rank() == 1 ? 2 : 1;
  SPMD_EXPECT_COLLECTIVE_ERROR((Distribution<1>(world(), {40}, spmd::halo(h))), "halo widths differ across ranks");
}

TEST(Errors, ProcessGridProductIsNotTheRankCount) {
  const int p = world().size();
  SPMD_EXPECT_COLLECTIVE_ERROR((Distribution<2>(world(), {8, 8}, spmd::grid({p + 1, 1}))),
                               "ranks but the communicator has");
  SPMD_EXPECT_COLLECTIVE_ERROR((Distribution<2>(world(), {8, 8}, spmd::grid({p, 1, 1}))), "entries for a 2-d shape");
}

TEST(Errors, HaloWiderThanANeighboursBlock) {
  const int p = world().size();
  // p + 1 rows over p ranks: the smallest block has 1 row, narrower than a halo of 2.
  SPMD_EXPECT_COLLECTIVE_ERROR((spmd::zeros<double>(world(), {p + 1, 8}, spmd::halo(2), spmd::grid({p, 1}))),
                               "wider than the smallest block");
}

namespace error_tests {
// In a free function: CUDA does not allow KOKKOS_LAMBDA inside gtest's (private) TestBody.
void OperationsOnDifferentDistributions() {
  auto a = spmd::zeros<double>(world(), {12});
  auto b = spmd::zeros<double>(world(), {13});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::dot(a, b), "operand shapes {12} and {13} differ");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::transform(
                                   a, KOKKOS_LAMBDA(double x) { return x; }, b),
                               "not distributed alike");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::copyto(a, b), "not distributed alike");
  // Same shape, other process grid.
  const int p = world().size();
  auto c = spmd::zeros<double>(world(), {4 * p, 4 * p}, spmd::grid({p, 1}));
  auto e = spmd::zeros<double>(world(), {4 * p, 4 * p}, spmd::grid({1, p}));
  // Reductions read operands of one shape on any distribution (e is moved to c's layout, as in
  // an expression): no error, the same value as on one grid.
  c.fill(1.5);
  e.fill(2.0);
  EXPECT_EQ(spmd::dot(c, e), 3.0 * 16 * p * p);
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::copyto(c, e), "not distributed alike");
  // A halo plan used with an array of another distribution.
  spmd::HaloExchange<double, 2> plan(c.distribution());
  auto f = spmd::zeros<double>(world(), {4 * p, 4 * p}, spmd::grid({p, 1}), spmd::halo(1));
  SPMD_EXPECT_COLLECTIVE_ERROR(plan.exchange(f), "but the plan was built for");
}
}  // namespace error_tests
TEST(Errors, OperationsOnDifferentDistributions) {
  error_tests::OperationsOnDifferentDistributions();
}

TEST(Errors, OutOfRangeGlobalIndices) {
  auto a = spmd::zeros<double>(world(), {5, 4});
  SPMD_EXPECT_COLLECTIVE_ERROR(a.get(5, 0), "out of range for shape {5, 4}");
  SPMD_EXPECT_COLLECTIVE_ERROR(a.get(0, -1), "out of range");
  EXPECT_THROW(a.distribution().owner({7, 0}), spmd::Error);  // a local query: a local error
  SPMD_EXPECT_COLLECTIVE_ERROR(a.set({0, 4}, 1.0), "spmd::Array::set: global index {0, 4} is out of range");
}

TEST(Errors, BadHostArrayOnlyTheRootCanSee) {
  auto a = spmd::zeros<double>(world(), {6});
  const int root = world().size() - 1;
  std::vector<double> wrong(world().rank() == root ? 5 : 0);
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::scatter(a, wrong, root), "has 5 elements");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::gather(a, world().size()), "is not a rank");
}

TEST(Errors, HaloWidthBeyondTheHalo) {
  Distribution<2> d(world(), {8, 8}, spmd::halo(1));
  SPMD_EXPECT_COLLECTIVE_ERROR((spmd::HaloExchange<double, 2>(d, spmd::Pattern::box, {2, 1})), "must lie between 0");
}

// The collective claim is made by type: a local Error can never say it was agreed.
static_assert(!std::is_constructible_v<spmd::Error, std::string, bool>,
              "spmd::Error(what, true) must not compile: a collective error comes from Comm::check, impl::agree "
              "or Error::replicated");
static_assert(std::is_constructible_v<spmd::Error, std::string>, "spmd::Error(what) is the local error");

TEST(Errors, CollectiveOnlyByAgreementOrReplicatedData) {
  EXPECT_FALSE(spmd::Error("spmd::test: local").collective());
  const spmd::Error r = spmd::Error::replicated("spmd::test: replicated");
  EXPECT_TRUE(r.collective());
  EXPECT_STREQ(r.what(), "spmd::test: replicated");
  // One rank's local error, agreed: every rank throws it, collective, with the rank named.
  const int bad = world().size() - 1;
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::impl::agree(world(),
                                                 [&] {
                                                   if (world().rank() == bad) throw spmd::Error("spmd::test: one rank");
                                                 }),
                               "spmd::test: one rank [detected on rank " + std::to_string(bad));
}

TEST(Errors, SetIsLocalAndItsRangeErrorIsLocal) {
  // Array::set_local is Local: a rank that passes an index it does not own throws alone, a local
  // error; the other ranks go on (nothing waits for it). (Array::set is Collective.)
  auto a = spmd::zeros<double>(world(), {5, 4});
  const int bad = world().size() - 1;
  bool threw = false, collective = true;
  try {
    if (world().rank() == bad)
      a.set_local({5, 0}, 1.0);
    else if (world().rank() == 0)
      a.set_local({0, 0}, 1.0);
  } catch (const spmd::Error& e) {
    threw = true;
    collective = e.collective();
    EXPECT_NE(std::string(e.what()).find("spmd::Array::set_local: global index {5, 0} is not owned by rank"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(threw, world().rank() == bad);
  if (threw) {
    EXPECT_FALSE(collective);
  }
  // Element {0, 0} was written by its owner (rank 0) unless rank 0 is the one that threw.
  EXPECT_EQ(a.get(0, 0), world().size() > 1 ? 1.0 : 0.0);
}
