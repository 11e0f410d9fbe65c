// GoogleTest main for MPI: spmd::Runtime (MPI, then Kokkos), every rank runs every test, only
// rank 0 prints the usual report, other ranks print one line per failed test, and the exit code is
// combined over ranks (MPI_MAX) so ctest sees a failure on any rank.
#include <gtest/gtest.h>

#include <cstdio>

#include "spmd_test.hpp"

namespace {
spmd::Comm* g_world = nullptr;

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};
}  // namespace

namespace spmd::testing {
const Comm& world() {
  return *g_world;
}
}  // namespace spmd::testing

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm world = rt.world();
  g_world = &world;
  ::testing::InitGoogleTest(&argc, argv);
  if (world.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(world.rank()));
  }
  int rc = RUN_ALL_TESTS();
  rc = world.allreduce(rc, spmd::Op::max);
  g_world = nullptr;
  return rc;
}
