// STREAM triad a = b + s * c over n doubles in total (split over the ranks), two ways in one
// binary so their ratio is read from one run:
//   BM_triad_array: spmd::transform on spmd::Array<double, 1> (no halo)
//   BM_assign_expr: the same as an expression assignment, a(all) = b + s * c (at 1000 elements:
//                   the latency of one fused assignment, everything on the host path included)
//   BM_triad_view:  a plain Kokkos::parallel_for over Kokkos::View<double*> of the same
//                   per-rank length
//   BM_copy_view:   Kokkos::deep_copy of one such View into another (16 bytes per element):
//                   the device-to-device copy bandwidth, the roofline the triads are read against
// Byte model: 24 bytes per element (read b, read c, write a; write-allocate traffic not counted,
// as in STREAM). GB/s = 24 n / time, time = slowest rank.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "bench_main.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/expr.hpp"
#include "spmd/reduce.hpp"

namespace {

constexpr double kScalar = 3.0;
constexpr double kB = 1.0, kC = 2.0;  // a = 1 + 3 * 2 = 7 everywhere afterwards
constexpr double kBytesPerElement = 3 * sizeof(double);

void set_counters(benchmark::State& state, const spmd::perf::ManualTimer& timer, spmd::index_t n,
                  spmd::index_t per_rank_max) {
  state.counters["GB/s"] = timer.rate(kBytesPerElement * static_cast<double>(n));
  state.counters["elements"] = static_cast<double>(n);
  state.counters["elements_per_rank"] = static_cast<double>(per_rank_max);
}

void BM_triad_array(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<1> dist(comm, spmd::Index<1>{n});
  auto a = spmd::zeros<double>(dist, spmd::label("spmd::perf::triad::array_a"));
  auto b = spmd::full<double>(dist, kB, spmd::label("spmd::perf::triad::array_b"));
  auto c = spmd::full<double>(dist, kC, spmd::label("spmd::perf::triad::array_c"));
  const double s = kScalar;
  // Defined outside the timed host lambda (CUDA does not allow extended lambdas inside lambdas).
  const auto triad = KOKKOS_LAMBDA(const double x, const double y) {
    return x + s * y;
  };

  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { spmd::transform(a, triad, b, c); });

  spmd::perf::check_all(state, spmd::sum(a) == 7.0 * static_cast<double>(n), "BM_triad_array: wrong result");
  set_counters(state, timer, n, comm.allreduce(dist.owned().size(), spmd::Op::max));
}

void BM_assign_expr(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<1> dist(comm, spmd::Index<1>{n});
  auto a = spmd::zeros<double>(dist, spmd::label("spmd::perf::triad::expr_a"));
  const auto b = spmd::full<double>(dist, kB, spmd::label("spmd::perf::triad::expr_b"));
  const auto c = spmd::full<double>(dist, kC, spmd::label("spmd::perf::triad::expr_c"));
  const double s = kScalar;
  auto dst = a(spmd::all);
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { dst = b + s * c; });
  spmd::perf::check_all(state, spmd::sum(a) == 7.0 * static_cast<double>(n), "BM_assign_expr: wrong result");
  set_counters(state, timer, n, comm.allreduce(dist.owned().size(), spmd::Op::max));
}

void BM_triad_view(benchmark::State& state) {
  using View = Kokkos::View<double*>;
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  // The length of the balanced block spmd::Distribution<1> gives this rank.
  const spmd::index_t len = spmd::impl::block_extent(n, comm.size(), comm.rank());
  const auto m = static_cast<std::size_t>(len);
  View a(Kokkos::view_alloc("spmd::perf::triad::view_a"), m);
  View b(Kokkos::view_alloc("spmd::perf::triad::view_b"), m);
  View c(Kokkos::view_alloc("spmd::perf::triad::view_c"), m);
  Kokkos::deep_copy(b, kB);
  Kokkos::deep_copy(c, kC);
  const double s = kScalar;
  const auto policy = Kokkos::RangePolicy<>(0, static_cast<std::int64_t>(len));
  const auto triad = KOKKOS_LAMBDA(const std::int64_t i) {
    a(i) = b(i) + s * c(i);
  };

  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { Kokkos::parallel_for("spmd::perf::triad::view", policy, triad); });

  double local = 0;
  Kokkos::parallel_reduce(
      "spmd::perf::triad::view_check", policy, KOKKOS_LAMBDA(const std::int64_t i, double& acc) { acc += a(i); },
      local);
  const double total = comm.allreduce(local, spmd::Op::sum);
  spmd::perf::check_all(state, total == 7.0 * static_cast<double>(n), "BM_triad_view: wrong result");
  set_counters(state, timer, n, comm.allreduce(len, spmd::Op::max));
}

void BM_copy_view(benchmark::State& state) {
  using View = Kokkos::View<double*>;
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::index_t len = spmd::impl::block_extent(n, comm.size(), comm.rank());
  const auto m = static_cast<std::size_t>(len);
  View a(Kokkos::view_alloc("spmd::perf::copy::view_a"), m);
  View b(Kokkos::view_alloc("spmd::perf::copy::view_b"), m);
  Kokkos::deep_copy(b, kB);
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { Kokkos::deep_copy(a, b); });
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), Kokkos::subview(a, std::make_pair(0, 1)));
  spmd::perf::check_all(state, m == 0 || host(0) == kB, "BM_copy_view: wrong result");
  state.counters["GB/s"] = timer.rate(2.0 * sizeof(double) * static_cast<double>(n));
  state.counters["elements"] = static_cast<double>(n);
  state.counters["elements_per_rank"] = static_cast<double>(comm.allreduce(len, spmd::Op::max));
}

// 1000 elements (latency), 2^20 (three arrays of 8 MiB: they fit a 32 MiB L3 at one rank), 2^22, 2^24, 2^25 elements.
// Registered size by size, array then view, so the two variants of one size run back to back
// and drift of the machine between them stays small.
const bool registered = [] {
  // On a GPU also 2^27 (3 GiB in three arrays, far beyond any L2).
  const bool device = !spmd::impl::host_accessible<Kokkos::DefaultExecutionSpace::memory_space>();
  // 1000 elements first: the latency of one fused assignment (launch + kernel + fence).
  for (int e : {0, 20, 22, 24, 25, 27}) {
    if (e == 27 && !device) continue;
    const std::int64_t n = e == 0 ? 1000 : std::int64_t(1) << e;
    benchmark::RegisterBenchmark("BM_triad_array", BM_triad_array)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_assign_expr", BM_assign_expr)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_triad_view", BM_triad_view)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_copy_view", BM_copy_view)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
