#pragma once
// Shared helpers of the spmdarray tests.
#include <gtest/gtest.h>

#include <spmd.hpp>
#include <spmd/impl/testing.hpp>

#include <functional>
#include <vector>

namespace spmd::testing {

/// The test job's communicator (a duplicate of MPI_COMM_WORLD).
const Comm& world();

/// Serial reference: the value every test array is filled with at a global index.
template <int N>
double pattern_value(const Index<N>& g) {
  double v = 0;
  for (int d = 0; d < N; ++d) v = v * 100.0 + static_cast<double>(g[d]) + 1.0;
  return v;
}

/// A value no test computes: halo points that must stay untouched hold it.
constexpr double sentinel = -12345.0;

/// Writes pattern_value(g) + shift at every owned global index g (a functor: device lambdas
/// cannot be generic).
template <int N>
struct PatternFill {
  GlobalAccess<typename Array<double, N>::view_type, N> acc;
  double shift;
  template <class... I>
  KOKKOS_INLINE_FUNCTION void operator()(I... g) const {
    const index_t idx[N] = {g...};
    double v = 0;
    for (int d = 0; d < N; ++d) v = v * 100.0 + static_cast<double>(idx[d]) + 1.0;
    acc(g...) = v + shift;
  }
};

/// Owned points = pattern_value(g) + shift, halo = sentinel.
template <int N>
void fill_pattern(const Array<double, N>& a, double shift = 0.0) {
  a.fill_with_halo(sentinel);
  for_each(a, PatternFill<N>{a.accessor(), shift});
  Kokkos::fence();
}

/// The global indices of a rank's storage: its owned box widened by the halo.
template <int N>
Box<N> storage_box(const Distribution<N>& d) {
  Box<N> b;
  for (int ax = 0; ax < N; ++ax) {
    b.lo[ax] = d.owned().lo[ax] - d.halo()[ax];
    b.hi[ax] = d.owned().hi[ax] + d.halo()[ax];
  }
  return b;
}

/// Row-major host array of `shape`, element = f(index).
template <int N, class T = double, class F>
std::vector<T> host_array(const Index<N>& shape, F&& f) {
  Box<N> whole{Index<N>{}, shape};
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(whole.size()));
  for_each_index(whole, [&](const Index<N>& g) { out.push_back(static_cast<T>(f(g))); });
  return out;
}

/// The communication backends this build can use for data in MemorySpace on the test job.
template <class MemorySpace = DefaultMemorySpace>
std::vector<Backend> backends() {
  std::vector<Backend> b{Backend::mpi};
  if (!impl::host_accessible<MemorySpace>() && impl::nccl_usable(world())) b.push_back(Backend::nccl);
  if constexpr (impl::ipc_space_supported<MemorySpace>()) {  // every rank on one node (with peer access)
    std::vector<int> everyone;
    for (int r = 0; r < world().size(); ++r) everyone.push_back(r);
    const bool here = impl::ipc_reachable(world(), everyone, impl::ipc_space_of<MemorySpace>());
    if (world().allreduce(here ? 1 : 0, Op::min) == 1) b.push_back(Backend::ipc);
  }
  return b;
}

/// Expect that every rank passed `ok` (so a failure seen by one rank fails the test everywhere
/// and no rank runs ahead into the next collective).
inline void expect_all(bool ok, const char* what) {
  const int bad = world().allreduce(ok ? 0 : 1, Op::sum);
  EXPECT_EQ(bad, 0) << what << ": failed on " << bad << " rank(s)";
}

}  // namespace spmd::testing

/// Runs `stmt`, which must throw spmd::Error on every rank; checks that the message contains
/// `needle` and that the error is marked collective.
#define SPMD_EXPECT_COLLECTIVE_ERROR(stmt, needle)                       \
  do {                                                                   \
    bool threw_ = false, coll_ = false, found_ = false;                  \
    std::string msg_;                                                    \
    try {                                                                \
      stmt;                                                              \
    } catch (const ::spmd::Error& e) {                                   \
      threw_ = true;                                                     \
      coll_ = e.collective();                                            \
      msg_ = e.what();                                                   \
      found_ = msg_.find(needle) != std::string::npos;                   \
    }                                                                    \
    EXPECT_TRUE(threw_) << #stmt " did not throw spmd::Error";           \
    EXPECT_TRUE(coll_) << "error not marked collective: " << msg_;       \
    EXPECT_TRUE(found_) << "message lacks '" << needle << "': " << msg_; \
    ::spmd::testing::expect_all(threw_&& found_, #stmt);                 \
  } while (0)
