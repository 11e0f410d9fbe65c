// Profiling: users' kernel names (for_each, transform, assign with spmd::label), the library's
// regions as Kokkos Tools sees them, the built-in recorder behind --spmd-log-view (counts, bytes,
// the summary over ranks) and Runtime's agreed parsing of --spmd-* options.
#include "spmd_test.hpp"

#include <spmd/impl/profiling.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

using spmd::Distribution;
using spmd::index_t;
using spmd::slice;
using spmd::testing::world;
namespace prof = spmd::impl::profiling;

namespace profiling_tests {

// What Kokkos Tools would see: the names of the kernels and regions started, through callbacks
// set in-process (a tool library does the same).
std::vector<std::string> kernels, regions;
void on_begin_kernel(const char* name, const std::uint32_t, std::uint64_t* id) {
  kernels.emplace_back(name);
  *id = 0;
}
void on_push_region(const char* name) {
  regions.emplace_back(name);
}

/// Installs the callbacks for its lifetime.
struct ToolCallbacks {
  ToolCallbacks() {
    kernels.clear();
    regions.clear();
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(on_begin_kernel);
    Kokkos::Tools::Experimental::set_push_region_callback(on_push_region);
  }
  ~ToolCallbacks() {
    Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
    Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  }
};

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

/// The values of a 1-D array on every rank (row-major), for comparisons with a reference.
std::vector<double> values(const spmd::Array<double, 1>& a) {
  return spmd::allgather(a);
}

void KernelNames() {
  ToolCallbacks tools;
  const index_t n = 5 * world().size() + 3;
  Distribution<1> d(world(), {n});
  Distribution<1> dh(world(), {n}, spmd::halo(1));
  auto a = spmd::zeros<double>(d);
  auto b = spmd::zeros<double>(d);
  auto c = spmd::zeros<double>(dh);
  auto acc = a.accessor();
  std::vector<double> ref(static_cast<std::size_t>(n));

  // for_each: the user's name, and the default without one.
  kernels.clear();
  spmd::for_each(
      a, KOKKOS_LAMBDA(index_t i) { acc(i) = double(i); }, spmd::label("test::init"));
  EXPECT_TRUE(has(kernels, "test::init"));
  EXPECT_FALSE(has(kernels, "spmd::algorithm::for_each"));
  kernels.clear();
  spmd::for_each(
      typename spmd::Array<double, 1>::execution_space(), a, spmd::Box<1>{{1}, {n}},
      KOKKOS_LAMBDA(index_t i) { acc(i) = double(i); }, spmd::label("test::init_region"));
  EXPECT_TRUE(has(kernels, "test::init_region"));
  kernels.clear();
  spmd::for_each(
      a, KOKKOS_LAMBDA(index_t i) { acc(i) = double(i); });
  EXPECT_TRUE(has(kernels, "spmd::algorithm::for_each"));
  for (index_t i = 0; i < n; ++i) ref[static_cast<std::size_t>(i)] = double(i);
  EXPECT_EQ(values(a), ref);

  // transform: flat (no halo) and point (halo) forms, the label after the inputs.
  kernels.clear();
  spmd::transform(
      b, KOKKOS_LAMBDA(double x) { return 3.0 * x; }, a, spmd::label("test::triple"));
  EXPECT_TRUE(has(kernels, "test::triple"));
  EXPECT_FALSE(has(kernels, "spmd::algorithm::transform"));
  for (index_t i = 0; i < n; ++i) ref[static_cast<std::size_t>(i)] = 3.0 * double(i);
  EXPECT_EQ(values(b), ref);
  kernels.clear();
  spmd::transform(
      c, KOKKOS_LAMBDA(double x, double y) { return x + y; }, c, c, spmd::label("test::twice"));
  EXPECT_TRUE(has(kernels, "test::twice"));
  kernels.clear();
  spmd::transform(
      b, KOKKOS_LAMBDA(double x) { return x + 1.0; }, b);
  EXPECT_TRUE(has(kernels, "spmd::algorithm::transform"));
  for (auto& r : ref) r += 1.0;
  EXPECT_EQ(values(b), ref);

  // Assignments: spmd::assign with a label (also the named form of a compound assignment), and
  // the default names of the operators.
  kernels.clear();
  spmd::assign(b, 2.0 * a, spmd::label("test::double"));
  EXPECT_TRUE(has(kernels, "test::double"));
  EXPECT_FALSE(has(kernels, "spmd::expr::assign"));
  kernels.clear();
  spmd::assign(typename spmd::Array<double, 1>::execution_space(), b, b + 1.0, spmd::label("test::plus_one"));
  EXPECT_TRUE(has(kernels, "test::plus_one"));
  for (index_t i = 0; i < n; ++i) ref[static_cast<std::size_t>(i)] = 2.0 * double(i) + 1.0;
  EXPECT_EQ(values(b), ref);
  kernels.clear();
  b += a;
  EXPECT_TRUE(has(kernels, "spmd::expr::assign"));

  // In place with a shifted read of the destination (the lagged or buffered path): every kernel
  // that evaluates the expression carries the name.
  spmd::copyto(c, a);
  spmd::exchange_halo(c);
  kernels.clear();
  spmd::assign(c(slice(1, -1)), c(slice(0, -2)) + c(slice(2, spmd::none)), spmd::label("test::smooth"));
  EXPECT_TRUE(has(kernels, "test::smooth"));
  for (const auto& k : kernels) EXPECT_EQ(k.rfind("spmd::expr::assign", 0), std::string::npos) << k;
  for (index_t i = 0; i < n; ++i)
    ref[static_cast<std::size_t>(i)] = (i == 0 || i == n - 1) ? double(i) : double(i - 1) + double(i + 1);
  EXPECT_EQ(values(c), ref);
}
}  // namespace profiling_tests
TEST(Profiling, KernelNames) {
  profiling_tests::KernelNames();
}

TEST(Profiling, RegionsReachKokkosTools) {
  using namespace profiling_tests;
  Distribution<2> d(world(), {6, 5}, spmd::halo(1));
  auto a = spmd::ones<double>(d);
  {
    ToolCallbacks tools;
    spmd::exchange_halo(a);
    const double s = spmd::sum(a);
    EXPECT_EQ(s, 30.0);
    EXPECT_TRUE(has(regions, "spmd::halo::begin"));
    EXPECT_TRUE(has(regions, "spmd::halo::end"));
    // a reduction is timed by the recorder under its kernel's name; Kokkos Tools sees the kernel
    EXPECT_FALSE(has(regions, "spmd::reduce::sum"));
    EXPECT_TRUE(has(regions, "spmd::comm::allreduce"));
  }
  EXPECT_FALSE(prof::tools_loaded());  // the callbacks are gone again
}

// The recorder: per region count and bytes sent, inclusive of nested regions.
//
//   1-D, n = 4 p points, halo 1, not periodic: each rank sends one double to each neighbour
//   (rank 0 and rank p-1 have one neighbour, the others two; one rank has none).
namespace profiling_tests {
/// 1-D ones of 4 p points with halo 1 and a face exchange plan; the recorder emptied and on.
struct Line {
  int p = world().size(), r = world().rank();
  Distribution<1> d{world(), {4 * p}, spmd::halo(1)};
  spmd::Array<double, 1> a = spmd::ones<double>(d);
  spmd::HaloExchange<double, 1> plan{d, spmd::Pattern::face};
  Line() {
    prof::reset();
    prof::set_recording(true);
  }
};
}  // namespace profiling_tests

TEST(Profiling, RecorderCountsCallsAndBytes) {
  profiling_tests::Line line;
  const int p = line.p, r = line.r;
  auto& a = line.a;
  auto& plan = line.plan;
  {
    const spmd::impl::Region outer("test::outer");
    plan.exchange(a);
    plan.exchange(a);
  }
  const double s = spmd::sum(a);
  prof::set_recording(false);
  EXPECT_EQ(s, 4.0 * p);
  const int neighbours = (r > 0 ? 1 : 0) + (r < p - 1 ? 1 : 0);
  auto stats = prof::local_stats();
  auto find = [&](const std::string& name) {
    for (const auto& x : stats)
      if (x.name == name) return x;
    ADD_FAILURE() << "no region " << name;
    return prof::RegionStats{};
  };
  const auto begin = find("spmd::halo::begin"), end = find("spmd::halo::end"), outer = find("test::outer");
  EXPECT_EQ(begin.count, 2);
  EXPECT_EQ(end.count, 2);
  EXPECT_EQ(outer.count, 1);
  EXPECT_EQ(begin.messages, 2 * neighbours);
  EXPECT_EQ(begin.bytes, 2.0 * neighbours * sizeof(double));
  EXPECT_EQ(end.bytes, 0.0);
  EXPECT_EQ(outer.bytes, begin.bytes);  // inclusive
  EXPECT_GE(outer.seconds, begin.seconds);
  const auto sum = find("spmd::reduce::sum");
  EXPECT_EQ(sum.count, 1);
  EXPECT_GE(sum.collectives, 1);
  EXPECT_EQ(outer.collectives, 0);
  // Named kernels are timed under their names (by text: each call makes a new label string).
  prof::set_recording(true);
  for (int k = 0; k < 2; ++k) spmd::assign(a, a * 1.0, spmd::label(std::string("test::") + "named"));
  spmd::assign(a, a * 1.0);
  prof::set_recording(false);
  stats = prof::local_stats();
  EXPECT_EQ(find("test::named").count, 2);
  EXPECT_EQ(find("spmd::expr::assign").count, 1);
  // Nothing is recorded while the recorder is off.
  plan.exchange(a);
  EXPECT_EQ(find("spmd::halo::begin").count, 2);
  prof::reset();
}

// The summary over ranks: counts that differ between ranks, a region only one rank opened, the
// bytes summed over ranks, and the table.
TEST(Profiling, SummaryOverRanks) {
  profiling_tests::Line line;
  const int p = line.p, r = line.r;
  for (int k = 0; k <= r; ++k) {
    const spmd::impl::Region uneven("test::uneven");
  }
  if (r == 0) {
    const spmd::impl::Region root("test::only_root");
  }
  line.plan.exchange(line.a);
  prof::set_recording(false);
  const auto rows = prof::gather(world().raw());
  auto find = [&](const std::string& name) {
    for (const auto& x : rows)
      if (x.name == name) return x;
    ADD_FAILURE() << "no region " << name;
    return prof::SummaryRow{};
  };
  const auto uneven = find("test::uneven");
  EXPECT_EQ(uneven.count_min, 1);
  EXPECT_EQ(uneven.count_max, p);
  EXPECT_EQ(uneven.count_sum, static_cast<long long>(p) * (p + 1) / 2);
  const auto root = find("test::only_root");
  EXPECT_EQ(root.count_max, 1);
  EXPECT_EQ(root.count_min, p > 1 ? 0 : 1);
  const auto begin = find("spmd::halo::begin");
  EXPECT_EQ(begin.count_sum, p);
  EXPECT_EQ(begin.messages_sum, 2 * (p - 1));
  EXPECT_EQ(begin.bytes_sum, 2.0 * (p - 1) * sizeof(double));
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].seconds_max, rows[i].seconds_max);
  const std::string table = prof::format(rows, p, 1.0, 2.0);
  EXPECT_NE(table.find("spmd log view"), std::string::npos);
  EXPECT_NE(table.find("test::uneven"), std::string::npos);
  EXPECT_NE(table.find("spmd::halo::begin"), std::string::npos);
  if (p > 1) {
    EXPECT_NE(table.find("*"), std::string::npos) << table;  // counts differ between ranks
  }
  prof::reset();
}

// One rank given a bad --spmd-* option: every rank throws the same collective error (no hang),
// before Kokkos is touched (the test's Kokkos is already initialized).
TEST(Profiling, RuntimeAgreesOnBadOption) {
  const int p = world().size(), r = world().rank();
  const int bad_rank = p > 1 ? 1 : 0;
  std::string a0 = "test", a1 = r == bad_rank ? "--spmd-bogus" : "--spmd-log-view", a2 = "--keep";
  char* args[] = {a0.data(), a1.data(), a2.data(), nullptr};
  int argc = 3;
  char** argv = args;
  const std::terminate_handler before = std::get_terminate();
  std::string message;
  bool collective = false;
  try {
    spmd::Runtime rt(argc, argv);
    ADD_FAILURE() << "spmd::Runtime accepted --spmd-bogus";
  } catch (const spmd::Error& e) {
    message = e.what();
    collective = e.collective();
  }
  std::set_terminate(before);
  EXPECT_TRUE(collective);
  EXPECT_NE(message.find("unknown option '--spmd-bogus'"), std::string::npos) << message;
  if (p > 1) {
    EXPECT_NE(message.find("[detected on rank 1 of "), std::string::npos) << message;
  }
  // The same text everywhere: compare lengths and a hash over the ranks.
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : message) h = (h ^ ch) * 1099511628211ull;
  const auto hashes = world().allgather(static_cast<long long>(h >> 1));
  for (long long x : hashes) EXPECT_EQ(x, hashes[0]);
  EXPECT_FALSE(prof::recording);
}
