// Per-axis reductions (axis_reduce.hpp) read against the triad roofline measured in the same run
// (spmd::perf::triad_gbs: a = b + s c over 2^25 doubles, all ranks at once, 24 B per element):
//   BM_sum_axis   spmd::sum(a, spmd::axis(k)) of a 2-D array of doubles, k = 0 (down the
//                 columns) and k = 1 (along the rows), on the automatic process grid
//   BM_max_axis   spmd::max(a, spmd::axis(k)), the same shapes (the selecting reductions'
//                 NaN-aware comparison on the hot path)
//   BM_triad      spmd::transform a = b + s c over the same number of elements (1-D), for a
//                 second roofline figure taken next to the sums
// Byte model: 8 B per element read (the result, n / extent(k) elements, is not counted).
// GB/s = 8 n / time of the slowest rank; triad_fraction = GB/s / triad GB/s.
#include <Kokkos_Core.hpp>

#include <cstdint>

#include "bench_main.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/axis_reduce.hpp"
#include "spmd/gather.hpp"

namespace {

/// sum (Max false) or max of a 2-D array along range(2), rows x cols = range(0) x range(1).
template <bool Max>
void axis_reduction(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  spmd::perf::triad_gbs();  // measured first, outside the timed region
  const spmd::index_t rows = state.range(0), cols = state.range(1);
  const int axis = static_cast<int>(state.range(2));
  auto a = spmd::full<double>(comm, {rows, cols}, 0.5, spmd::label("spmd::perf::axis_reduce::a"));
  spmd::Array<double, 1> s;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { s = Max ? spmd::max(a, spmd::axis(axis)) : spmd::sum(a, spmd::axis(axis)); });
  const double want = Max ? 0.5 : 0.5 * static_cast<double>(axis == 0 ? rows : cols);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.local());
  bool ok = true;
  for (std::size_t k = 0; k < h.extent(0); ++k) ok = ok && h(k) == want;
  spmd::perf::check_all(state, ok, Max ? "BM_max_axis: wrong result" : "BM_sum_axis: wrong result");
  const double n = static_cast<double>(rows) * static_cast<double>(cols);
  const double gbs = timer.rate(8.0 * n);
  state.counters["GB/s"] = gbs;
  state.counters["triad_GB/s"] = spmd::perf::triad_gbs();
  state.counters["triad_fraction"] = gbs / spmd::perf::triad_gbs();
  state.counters["elements"] = n;
}

void BM_triad(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<1> dist(comm, spmd::Index<1>{n});
  auto a = spmd::zeros<double>(dist, spmd::label("spmd::perf::axis_reduce::triad_a"));
  auto b = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::axis_reduce::triad_b"));
  auto c = spmd::full<double>(dist, 2.0, spmd::label("spmd::perf::axis_reduce::triad_c"));
  const double sc = 3.0;
  const auto triad = KOKKOS_LAMBDA(const double x, const double y) {
    return x + sc * y;
  };
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { spmd::transform(a, triad, b, c); });
  state.counters["GB/s"] = timer.rate(24.0 * static_cast<double>(n));
  state.counters["elements"] = static_cast<double>(n);
}

const bool registered = [] {
  // 2^24 elements: 4096 x 4096, and the tall and wide shapes 2^20 x 16 and 16 x 2^20
  for (const auto& shape :
       {std::pair<std::int64_t, std::int64_t>{4096, 4096}, {std::int64_t(1) << 20, 16}, {16, std::int64_t(1) << 20}})
    for (int axis : {0, 1})
      for (const bool max : {false, true})
        benchmark::RegisterBenchmark(max ? "BM_max_axis" : "BM_sum_axis",
                                     max ? axis_reduction<true> : axis_reduction<false>)
            ->Args({shape.first, shape.second, axis})
            ->ArgNames({"rows", "cols", "axis"})
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_triad", BM_triad)
      ->Arg(std::int64_t(1) << 24)
      ->ArgName("n")
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  return true;
}();

}  // namespace
