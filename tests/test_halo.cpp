// spmd::HaloExchange: every storage point is checked against a serial rule of which global
// index (if any) its halo value must come from.
#include "spmd_test.hpp"

#include <algorithm>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::Pattern;
using spmd::testing::pattern_value;
using spmd::testing::world;

namespace {
using spmd::testing::sentinel;
template <int N>
void prepare(const Array<double, N>& a, double shift = 0.0) {
  spmd::testing::fill_pattern(a, shift);
}

/// Serial reference: the value storage point `g` (a global index, possibly outside the
/// shape) must hold after an exchange with `pattern` and `width`.
template <int N>
double expected(const Distribution<N>& d, const Index<N>& g, Pattern pattern, const std::array<int, N>& width,
                double shift) {
  const auto& own = d.owned();
  int outside = 0;
  Index<N> src = g;
  for (int ax = 0; ax < N; ++ax) {
    const bool out = g[ax] < own.lo[ax] || g[ax] >= own.hi[ax];
    if (!out) continue;
    ++outside;
    const index_t dist = g[ax] < own.lo[ax] ? own.lo[ax] - g[ax] : g[ax] - own.hi[ax] + 1;
    if (dist > width[ax]) return sentinel;
    const index_t n = d.extent(ax);
    if (g[ax] < 0 || g[ax] >= n) {
      if (!d.periodic()[ax]) return sentinel;
      src[ax] = ((g[ax] % n) + n) % n;
    }
    // Along an axis with a single rank and no periodicity there is no neighbour.
    if (d.dims()[ax] == 1 && !d.periodic()[ax]) return sentinel;
  }
  if (outside == 0) return pattern_value<N>(g) + shift;
  if (pattern == Pattern::face && outside > 1) return sentinel;
  return pattern_value<N>(src) + shift;
}

template <class X>
struct same {
  using type = X;
};
template <int N>
bool check(const Array<double, N>& a, Pattern pattern, const typename same<std::array<int, N>>::type& width,
           double shift = 0.0) {
  const auto& d = a.distribution();
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.local_with_halo());
  const spmd::Box<N> storage = spmd::testing::storage_box(d);
  bool ok = true;
  if (d.owned().empty()) return ok;
  spmd::for_each_index(storage, [&](const Index<N>& g) {
    std::array<std::size_t, 4> l{};
    for (int ax = 0; ax < N; ++ax) l[ax] = static_cast<std::size_t>(g[ax] - storage.lo[ax]);
    double v;
    if constexpr (N == 1) v = host(l[0]);
    if constexpr (N == 2) v = host(l[0], l[1]);
    if constexpr (N == 3) v = host(l[0], l[1], l[2]);
    if constexpr (N == 4) v = host(l[0], l[1], l[2], l[3]);
    const double e = expected<N>(d, g, pattern, width, shift);
    if (v != e && ok) {
      ADD_FAILURE() << "rank " << world().rank() << " " << d.describe() << " pattern "
                    << (pattern == Pattern::face ? "face" : "box") << ": storage point " << spmd::impl::shape_str(g)
                    << " holds " << v << ", expected " << e;
      ok = false;
    }
  });
  return ok;
}

template <int N>
void run_case(const Index<N>& shape, int halo, bool periodic, Pattern pattern) {
  Distribution<N> d = periodic ? Distribution<N>(world(), shape, spmd::halo(halo), spmd::periodic())
                               : Distribution<N>(world(), shape, spmd::halo(halo));
  auto a = spmd::zeros<double>(d, spmd::label("spmd::test::halo"));
  prepare(a);
  spmd::exchange_halo(a, pattern);  // the array's own plan, automatic backend
  spmd::testing::expect_all(check(a, pattern, d.halo()), d.describe().c_str());
  for (spmd::Backend b : spmd::testing::backends()) {  // and each backend the build has
    spmd::HaloExchange<double, N> plan(d, pattern, d.halo(), b);
    EXPECT_EQ(plan.backend(), b);
    prepare(a, 1.0);
    plan.exchange(a);
    spmd::testing::expect_all(check(a, pattern, d.halo(), 1.0),
                              (d.describe() + " backend " + spmd::to_string(b)).c_str());
  }
}
}  // namespace

TEST(Halo, OneToFourDimensionsFaceAndBox) {
  for (Pattern pt : {Pattern::face, Pattern::box}) {
    run_case<1>({13}, 1, false, pt);
    run_case<2>({7, 5}, 1, false, pt);
    run_case<3>({6, 5, 4}, 1, false, pt);
    run_case<4>({4, 4, 5, 4}, 1, false, pt);
  }
}

TEST(Halo, PeriodicAxes) {
  for (Pattern pt : {Pattern::face, Pattern::box}) {
    run_case<1>({9}, 1, true, pt);
    run_case<2>({8, 6}, 1, true, pt);
    run_case<3>({4, 4, 4}, 1, true, pt);
  }
  // Mixed: periodic along x only.
  Distribution<2> d(world(), {8, 9}, spmd::halo(1), spmd::periodic({true, false}));
  auto a = spmd::zeros<double>(d);
  prepare(a);
  spmd::exchange_halo(a, Pattern::box);
  spmd::testing::expect_all(check(a, Pattern::box, d.halo()), "periodic x only");
}

TEST(Halo, WidthTwo) {
  run_case<2>({12, 10}, 2, false, Pattern::box);
  run_case<2>({12, 10}, 2, true, Pattern::face);
  run_case<3>({8, 8, 8}, 2, false, Pattern::box);
}

TEST(Halo, PartialWidthPlan) {
  Distribution<2> d(world(), {12, 10}, spmd::halo(2));
  auto a = spmd::zeros<double>(d);
  prepare(a);
  spmd::HaloExchange<double, 2> plan(d, Pattern::box, {1, 1});
  plan.exchange(a);
  spmd::testing::expect_all(check<2>(a, Pattern::box, {1, 1}), "width 1 of halo 2");
}

TEST(Halo, SplitPhaseAndPlanReuse) {
  Distribution<2> d(world(), {16, 12}, spmd::halo(1), spmd::periodic({false, true}));
  auto a = spmd::zeros<double>(d);
  spmd::HaloExchange<double, 2> plan(d, Pattern::box);
  for (int it = 0; it < 3; ++it) {
    prepare(a, 1000.0 * it);
    plan.begin(a);
    EXPECT_TRUE(plan.in_progress());
    // Interior work may run between begin and end; here: a reduction over the owned block.
    const double s = spmd::sum(a);
    EXPECT_GT(s, 0.0);
    plan.end();
    EXPECT_FALSE(plan.in_progress());
    spmd::testing::expect_all(check(a, Pattern::box, d.halo(), 1000.0 * it), "split phase");
  }
  // The Array's own request form.
  prepare(a, 5.0);
  {
    auto req = spmd::halo_begin(a, Pattern::face);
    req.end();
  }
  spmd::testing::expect_all(check(a, Pattern::face, d.halo(), 5.0), "halo_begin/end");
}

TEST(Halo, SeveralArraysInOneExchange) {
  Distribution<3> d(world(), {6, 7, 5}, spmd::halo(1), spmd::periodic({true, false, false}));
  auto a = spmd::zeros<double>(d), b = spmd::zeros<double>(d), c = spmd::zeros<double>(d);
  prepare(a, 0.0);
  prepare(b, 10000.0);
  prepare(c, 20000.0);
  spmd::HaloExchange<double, 3> plan(d, Pattern::box);
  plan.exchange(a, b, c);
  spmd::testing::expect_all(check(a, Pattern::box, d.halo(), 0.0) && check(b, Pattern::box, d.halo(), 10000.0) &&
                                check(c, Pattern::box, d.halo(), 20000.0),
                            "three arrays");
  // then a single array through the same (grown) plan
  prepare(b, 7.0);
  plan.exchange(b);
  spmd::testing::expect_all(check(b, Pattern::box, d.halo(), 7.0), "plan reused for one array");
}

TEST(Halo, BackendChoice) {
  Distribution<1> d(world(), {32}, spmd::halo(1));
  const spmd::Backend env = spmd::impl::env_backend();  // SPMD_BACKEND (the suite runs under each)
  spmd::HaloExchange<double, 1, Kokkos::HostSpace> host_plan(d, Pattern::face, {1}, spmd::Backend::automatic);
  // host memory: MPI reads it directly, unless SPMD_BACKEND=ipc forces the shared-memory channel
  EXPECT_EQ(host_plan.backend(), env == spmd::Backend::ipc ? spmd::Backend::ipc : spmd::Backend::mpi);
  EXPECT_FALSE(host_plan.staged());
  // device memory, automatic: one rank never needs NCCL; several use NCCL when it can run (one GPU
  // each), else ipc on one node with peer access, else MPI (impl::resolve_plan_backend's order,
  // docs/architecture.md); a host build uses MPI
  spmd::HaloExchange<double, 1> auto_plan(d, Pattern::face, {1}, spmd::Backend::automatic);
  if (env == spmd::Backend::automatic) {
    if (spmd::impl::host_accessible<spmd::DefaultMemorySpace>() || world().size() == 1) {
      EXPECT_EQ(auto_plan.backend(), spmd::Backend::mpi);
    } else {
      const auto b = spmd::testing::backends();
      const bool ipc = std::find(b.begin(), b.end(), spmd::Backend::ipc) != b.end();
      const bool nccl = std::find(b.begin(), b.end(), spmd::Backend::nccl) != b.end();
      EXPECT_EQ(auto_plan.backend(), nccl ? spmd::Backend::nccl : (ipc ? spmd::Backend::ipc : spmd::Backend::mpi));
    }
  } else {
    EXPECT_EQ(auto_plan.backend(), env);
  }
  // ipc on host memory: POSIX shared memory between the ranks of one node
  spmd::HaloExchange<double, 1, Kokkos::HostSpace> shm_plan(d, Pattern::face, {1}, spmd::Backend::ipc);
  EXPECT_EQ(shm_plan.backend(), spmd::Backend::ipc);
  spmd::HaloExchange<double, 1> dev_plan(d, Pattern::face, {1}, spmd::Backend::mpi);
  EXPECT_EQ(dev_plan.staged(),
            !spmd::impl::host_accessible<spmd::DefaultMemorySpace>() && !spmd::impl::mpi_cuda_aware());
  if (!SPMD_HAVE_NCCL || spmd::impl::host_accessible<spmd::DefaultMemorySpace>()) {
    SPMD_EXPECT_COLLECTIVE_ERROR((spmd::HaloExchange<double, 1>(d, Pattern::face, {1}, spmd::Backend::nccl)), "NCCL");
  }
}

TEST(Halo, OneMessagePerNeighbourRank) {
  // A periodic ring: 2 neighbour ranks (one when p = 2: both directions reach the same rank and
  // travel as one message; none when p = 1: the wrap is a local copy).
  const int p = world().size();
  Distribution<1> ring(world(), {8 * p}, spmd::halo(1), spmd::periodic());
  spmd::HaloExchange<double, 1> plan(ring, Pattern::face);
  EXPECT_EQ(plan.num_neighbors(), p == 1 ? 0 : (p == 2 ? 1 : 2));
  EXPECT_EQ(plan.fill_points(), 2);  // one halo point on each side, from wherever it comes
  EXPECT_EQ(plan.send_points(), p == 1 ? 0 : 2);
  // 3-D box, periodic everywhere: at most p - 1 other ranks, however many of the 26 directions.
  Distribution<3> cube(world(), {6, 6, 6}, spmd::halo(1), spmd::periodic());
  spmd::HaloExchange<double, 3> box(cube, Pattern::box);
  EXPECT_LE(box.num_neighbors(), p - 1);
}

TEST(Halo, ZeroWidthIsANoOp) {
  auto a = spmd::zeros<double>(world(), {5, 5});
  prepare(a);
  spmd::exchange_halo(a);
  spmd::testing::expect_all(check<2>(a, Pattern::box, {0, 0}), "no halo");
}

// ---- an exchange left open: reported, never completed by a destructor, never stale ----------

namespace {
/// Runs f() with stderr captured; returns what it printed.
template <class F>
std::string stderr_of(const F& f) {
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}
bool says_abandoned(const std::string& text, const char* who) {
  return text.find(spmd::impl::str("spmd: rank ", world().rank(), ": ", who)) != std::string::npos &&
         text.find("abandoned") != std::string::npos && text.find("spmd::HaloExchange (") != std::string::npos;
}
}  // namespace

TEST(Halo, RequestLeftOpenIsReportedAndTheNextExchangeIsFresh) {
  Distribution<2> d(world(), {16, 12}, spmd::halo(1), spmd::periodic({false, true}));
  auto a = spmd::zeros<double>(d, spmd::label("spmd::test::left_open"));
  prepare(a, 1.0);
  const std::string said = stderr_of([&] { auto req = spmd::halo_begin(a, Pattern::box); });  // no end()
  EXPECT_TRUE(says_abandoned(said, "spmd::HaloRequest")) << said;
  // The next exchange on the same plan finishes the abandoned one's messages first and discards
  // them: the halo holds the new values, never the abandoned exchange's.
  prepare(a, 2.0);
  spmd::exchange_halo(a, Pattern::box);
  spmd::testing::expect_all(check(a, Pattern::box, d.halo(), 2.0), "exchange after an abandoned one");
  // Move-assigning over an open request abandons it the same way.
  prepare(a, 3.0);
  auto req = spmd::halo_begin(a, Pattern::face);
  EXPECT_TRUE(says_abandoned(stderr_of([&] { req = decltype(req)(nullptr); }), "spmd::HaloRequest"));
  prepare(a, 4.0);
  req = spmd::halo_begin(a, Pattern::face);
  req.end();
  spmd::testing::expect_all(check(a, Pattern::face, d.halo(), 4.0), "request after an abandoned one");
}

TEST(Halo, ExceptionBetweenBeginAndEndDoesNotHang) {
  Distribution<2> d(world(), {10, 9}, spmd::halo(1));
  auto a = spmd::zeros<double>(d);
  // On every rank, with the Array's plan (HaloRequest) and with a plan of its own (HaloExchange).
  std::string said = stderr_of([&] {
    try {
      prepare(a, 1.0);
      auto req = spmd::halo_begin(a);
      throw std::runtime_error("interior work failed");
    } catch (const std::runtime_error&) {
    }
  });
  EXPECT_TRUE(says_abandoned(said, "spmd::HaloRequest")) << said;
  said = stderr_of([&] {
    try {
      spmd::HaloExchange<double, 2> plan(d);
      plan.begin(a);
      throw std::runtime_error("interior work failed");
    } catch (const std::runtime_error&) {
    }
  });
  EXPECT_TRUE(says_abandoned(said, "spmd::HaloExchange")) << said;
  // On one rank only: the others end() the exchange; the next exchange is right everywhere.
  const int bad = world().size() - 1;
  said = stderr_of([&] {
    try {
      prepare(a, 5.0);
      auto req = spmd::halo_begin(a);
      if (world().rank() == bad) throw std::runtime_error("one rank failed");
      req.end();
    } catch (const std::runtime_error&) {
    }
  });
  EXPECT_EQ(says_abandoned(said, "spmd::HaloRequest"), world().rank() == bad) << said;
  prepare(a, 6.0);
  spmd::exchange_halo(a);
  spmd::testing::expect_all(check(a, Pattern::box, d.halo(), 6.0), "exchange after one rank abandoned");
  spmd::HaloExchange<double, 2> fresh(d);
  prepare(a, 7.0);
  fresh.exchange(a);
  spmd::testing::expect_all(check(a, Pattern::box, d.halo(), 7.0), "a new plan afterwards");
}

TEST(Halo, EndOnAnAbandonedPlanIsALocalError) {
  Distribution<1> d(world(), {20}, spmd::halo(1));
  auto a = spmd::zeros<double>(d);
  spmd::HaloExchange<double, 1> plan(d);
  plan.begin(a);
  stderr_of([&] { plan.abandon("spmd::test"); });
  EXPECT_FALSE(plan.in_progress());
  try {
    plan.end();
    ADD_FAILURE() << "end() after abandon() did not throw";
  } catch (const spmd::Error& e) {
    EXPECT_FALSE(e.collective());
    EXPECT_NE(std::string(e.what()).find("was abandoned"), std::string::npos) << e.what();
  }
  prepare(a, 8.0);
  plan.exchange(a);
  spmd::testing::expect_all(check(a, Pattern::box, d.halo(), 8.0), "plan reused after abandon()");
}
