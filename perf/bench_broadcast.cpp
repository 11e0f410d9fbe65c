// A broadcast expression against the triad roofline, in one binary so their ratio is read from
// one run (acceptance: BM_broadcast_row >= 80% of BM_triad_view's GB/s at n = 2^24 on the CPU):
//   BM_triad_view:      a = b + s * c, a plain Kokkos::parallel_for over Kokkos::View<double*>
//                       of n / p elements per rank (bench_triad's roofline)
//   BM_triad_expr:      c = a * 3.0 + b on the 2-D arrays below (the expression engine without
//                       broadcasting: what the broadcast forms cost beyond it)
//   BM_broadcast_row:   c = a * row + b, a, b, c spmd::Array<double, 2> of shape (n / m, m) with
//                       m = 4096 on the automatic grid, row an spmd::Array<double, 1> of shape (m,)
//                       on its own distribution (NumPy broadcasting: the row's part each rank
//                       reads is brought by a cached plan, then read with step 0 along axis 0)
//   BM_broadcast_column: c = a * col + b with col of shape (n / m, 1) (the step-0 axis is the
//                       contiguous one)
// Byte model: 24 bytes per element for all three (read two arrays, write one; the row or column
// is n / m or m elements, counted too; write-allocate traffic not counted, as in STREAM).

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "bench_main.hpp"
#include "spmd/array.hpp"
#include "spmd/expr.hpp"
#include "spmd/reduce.hpp"

namespace {

constexpr spmd::index_t kCols = 4096;

void BM_triad_view(benchmark::State& state) {
  using View = Kokkos::View<double*>;
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::index_t len = spmd::impl::block_extent(n, comm.size(), comm.rank());
  const auto m = static_cast<std::size_t>(len);
  View a(Kokkos::view_alloc("spmd::perf::broadcast::view_a"), m);
  View b(Kokkos::view_alloc("spmd::perf::broadcast::view_b"), m);
  View c(Kokkos::view_alloc("spmd::perf::broadcast::view_c"), m);
  Kokkos::deep_copy(b, 1.0);
  Kokkos::deep_copy(c, 2.0);
  const double s = 3.0;
  const auto policy = Kokkos::RangePolicy<>(0, static_cast<std::int64_t>(len));
  const auto triad = KOKKOS_LAMBDA(const std::int64_t i) {
    a(i) = b(i) + s * c(i);
  };
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { Kokkos::parallel_for("spmd::perf::broadcast::triad_view", policy, triad); });
  double local = 0;
  Kokkos::parallel_reduce(
      "spmd::perf::broadcast::view_check", policy, KOKKOS_LAMBDA(const std::int64_t i, double& acc) { acc += a(i); },
      local);
  spmd::perf::check_all(state, comm.allreduce(local, spmd::Op::sum) == 7.0 * static_cast<double>(n),
                        "BM_triad_view: wrong result");
  state.counters["GB/s"] = timer.rate(24.0 * static_cast<double>(n));
  state.counters["elements"] = static_cast<double>(n);
}

/// c = a * x + b with x a row (Kind 1), a column (Kind 2) of a's shape (n / kCols, kCols), or the
/// scalar 3 (Kind 0).
template <int Kind>
void BM_broadcast(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::index_t rows = n / kCols;
  const spmd::Distribution<2> dist(comm, spmd::Index<2>{rows, kCols});
  auto a = spmd::full<double>(dist, 2.0, spmd::label("spmd::perf::broadcast::a"));
  auto b = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::broadcast::b"));
  auto c = spmd::zeros<double>(dist, spmd::label("spmd::perf::broadcast::c"));
  auto row = spmd::full<double>(comm, {kCols}, 3.0, spmd::label("spmd::perf::broadcast::row"));
  auto col = spmd::full<double>(comm, {rows, 1}, 3.0, spmd::label("spmd::perf::broadcast::col"));
  spmd::perf::ManualTimer timer(state);
  if constexpr (Kind == 2)
    for (auto _ : state) timer([&] { c = a * col + b; });
  else if constexpr (Kind == 1)
    for (auto _ : state) timer([&] { c = a * row + b; });
  else
    for (auto _ : state) timer([&] { c = a * 3.0 + b; });
  spmd::perf::check_all(state, spmd::sum(c) == 7.0 * static_cast<double>(n), "BM_broadcast: wrong result");
  state.counters["GB/s"] = timer.rate(24.0 * static_cast<double>(n) + 8.0 * static_cast<double>(Kind == 2   ? rows
                                                                                                : Kind == 1 ? kCols
                                                                                                            : 0));
  state.counters["elements"] = static_cast<double>(n);
}

// 2^20 (in cache at one rank) and 2^24 elements (from memory), the triad first at each size.
const bool registered = [] {
  for (int e : {20, 24}) {
    const std::int64_t n = std::int64_t(1) << e;
    benchmark::RegisterBenchmark("BM_triad_view", BM_triad_view)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_triad_expr", BM_broadcast<0>)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_broadcast_row", BM_broadcast<1>)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_broadcast_column", BM_broadcast<2>)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
