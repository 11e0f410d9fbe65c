// spmd::Comm: owned duplicate, typed collectives, agreement on errors, tags.
#include "spmd_test.hpp"

using spmd::testing::world;

TEST(Comm, DuplicateIsOwnedAndShared) {
  const auto& w = world();
  int cmp = MPI_UNEQUAL;
  ASSERT_EQ(MPI_Comm_compare(w.raw(), MPI_COMM_WORLD, &cmp), MPI_SUCCESS);
  EXPECT_EQ(cmp, MPI_CONGRUENT);  // same group, different context: our messages never mix
  spmd::Comm copy = w;
  EXPECT_EQ(copy.raw(), w.raw());
  EXPECT_TRUE(copy == w);
  spmd::Comm other(w.raw());
  EXPECT_FALSE(other == w);
  EXPECT_EQ(other.size(), w.size());
  EXPECT_EQ(other.rank(), w.rank());
}

template <class T>
void check_allreduce() {
  const auto& w = world();
  const int p = w.size(), r = w.rank();
  EXPECT_EQ(w.allreduce(static_cast<T>(r + 1), spmd::Op::sum), static_cast<T>(p * (p + 1) / 2));
  EXPECT_EQ(w.allreduce(static_cast<T>(r + 1), spmd::Op::max), static_cast<T>(p));
  EXPECT_EQ(w.allreduce(static_cast<T>(r + 1), spmd::Op::min), static_cast<T>(1));
  EXPECT_EQ(w.bcast(static_cast<T>(r + 7), p - 1), static_cast<T>(p - 1 + 7));
  auto all = w.allgather(static_cast<T>(r));
  ASSERT_EQ(static_cast<int>(all.size()), p);
  for (int q = 0; q < p; ++q) EXPECT_EQ(all[q], static_cast<T>(q));
}

TEST(Comm, TypedCollectives) {
  check_allreduce<int>();
  check_allreduce<long long>();
  check_allreduce<unsigned>();
  check_allreduce<float>();
  check_allreduce<double>();
  check_allreduce<short>();
}

TEST(Comm, ArrayAllreduceAndProduct) {
  const auto& w = world();
  double v[3] = {1.0, 2.0 * w.rank(), -1.0 * w.rank()};
  w.allreduce(v, 3, spmd::Op::sum);
  const double p = w.size();
  EXPECT_DOUBLE_EQ(v[0], p);
  EXPECT_DOUBLE_EQ(v[1], p * (p - 1));
  EXPECT_DOUBLE_EQ(v[2], -p * (p - 1) / 2);
  EXPECT_EQ(w.allreduce(2, spmd::Op::prod), 1 << w.size());
  EXPECT_EQ(w.allreduce(w.rank() == 0, spmd::Op::lor), true);
  EXPECT_EQ(w.allreduce(w.rank() == 0, spmd::Op::land), w.size() == 1);
}

TEST(Comm, NonblockingAllreduce) {
  const auto& w = world();
  const double p = w.size();
  double v[2] = {1.0, static_cast<double>(w.rank())};
  spmd::Request r = w.iallreduce(v, 2, spmd::Op::sum);
  EXPECT_TRUE(r.active());
  double other = w.allreduce(1.0, spmd::Op::max);  // another collective while the first is in flight
  r.wait();
  EXPECT_FALSE(r.active());
  EXPECT_DOUBLE_EQ(other, 1.0);
  EXPECT_DOUBLE_EQ(v[0], p);
  EXPECT_DOUBLE_EQ(v[1], p * (p - 1) / 2);
  // test() until complete; a moved-from request is inactive.
  int m = w.rank();
  spmd::Request a = w.iallreduce(&m, 1, spmd::Op::max);
  spmd::Request b = std::move(a);
  EXPECT_FALSE(a.active());
  while (!b.test()) {
  }
  EXPECT_EQ(m, w.size() - 1);
  b.wait();  // no-op on a completed request
}

TEST(Comm, AbandonedRequestIsReportedNotCompleted) {
  // A request destroyed while active does not communicate: it says so on stderr, and its
  // collective finishes on the request's own copy of the data (parked), never writing `k`.
  const auto& w = world();
  int k = 1;
  ::testing::internal::CaptureStderr();
  { spmd::Request c = w.iallreduce(&k, 1, spmd::Op::sum); }
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(k, 1);
  EXPECT_NE(said.find("spmd: rank " + std::to_string(w.rank()) +
                      ": spmd::Comm::iallreduce: request destroyed before completion"),
            std::string::npos)
      << said;
  // Move-assigning over an active request abandons it the same way.
  int m = 2;
  spmd::Request r = w.iallreduce(&m, 1, spmd::Op::sum);
  ::testing::internal::CaptureStderr();
  r = spmd::Request();
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("request destroyed before completion"), std::string::npos);
  EXPECT_EQ(m, 2);
  // The communicator goes on: later collectives (blocking and not) are unaffected.
  EXPECT_EQ(w.allreduce(1, spmd::Op::sum), w.size());
  int n = 3;
  spmd::Request q = w.iallreduce(&n, 1, spmd::Op::sum);
  q.wait();
  EXPECT_EQ(n, 3 * w.size());
}

TEST(Comm, CheckAgreesOnTheLowestFailingRank) {
  const auto& w = world();
  EXPECT_NO_THROW(w.check(true, "never"));
  const int bad = w.size() - 1;  // only the last rank sees the problem
  SPMD_EXPECT_COLLECTIVE_ERROR(w.check(w.rank() != bad, "spmd::test: rank-local problem"),
                               "spmd::test: rank-local problem");
}

TEST(Comm, SplitAndNodeLocal) {
  const auto& w = world();
  spmd::Comm half = w.split(w.rank() % 2, w.rank());
  EXPECT_EQ(half.size(), (w.size() + 1 - w.rank() % 2) / 2);
  EXPECT_EQ(half.allreduce(1, spmd::Op::sum), half.size());
  spmd::Comm node = w.node_local();
  EXPECT_EQ(node.size(), w.size());  // tests run on one machine
}

TEST(Comm, TagsAreReservedInOrder) {
  spmd::Comm c(world().raw());
  const int a = c.reserve_tags(27);
  const int b = c.reserve_tags(27);
  EXPECT_EQ(b, a + 27);
  EXPECT_THROW(c.reserve_tags(0), spmd::Error);
}

TEST(Comm, MpiTypeMatchesSize) {
  int size = 0;
  MPI_Type_size(spmd::mpi_type<double>(), &size);
  EXPECT_EQ(size, 8);
  MPI_Type_size(spmd::mpi_type<std::int64_t>(), &size);
  EXPECT_EQ(size, 8);
  MPI_Type_size(spmd::mpi_type<bool>(), &size);
  EXPECT_EQ(size, static_cast<int>(sizeof(bool)));
}
