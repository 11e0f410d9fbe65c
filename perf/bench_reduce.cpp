// Collective reductions on 1-D arrays of n doubles in total (split over the ranks):
//   BM_dot (spmd::dot), BM_norm2 (spmd::norm2), BM_sum (spmd::sum), n = 2^10, 2^12, ..., 2^26,
//   and BM_sum_view, the same sum written directly in Kokkos + MPI, as a baseline;
//   BM_norm2_expr, norm2(a - b): an expression (16 B per element), the CG residual's form;
//   BM_max, BM_argmax: spmd::max / spmd::argmax of a(i) = (i * 7919) mod 1000003 (values that
//   change the running maximum at unpredictable places), the selecting reductions' NaN-aware
//   comparison on the hot path.
// On side x side arrays with a halo of 1 (rows not contiguous in memory: the stencil and CG
// vectors' layout), side 1024 and 2048 (a GPU: 8192, 2^26 points):
//   BM_sum_2d (the whole array), BM_sum_2d_view (its interior view [1:-1, 1:-1]), BM_dot_2d.
// Each is one local Kokkos parallel_reduce plus one MPI_Allreduce of a double, so small n
// measures latency (kernel launch + allreduce) and large n measures bandwidth.
// Byte model: 8 bytes per element per input array read (dot 16 B, norm2 8 B, sum 8 B per element).
// Counters: GB/s (bytes / time), latency_us (time per call, slowest rank; the same as the time
// column, in microseconds, kept as a counter so the JSON carries it by name).
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "bench_main.hpp"
#include "spmd/array.hpp"
#include "spmd/creation.hpp"
#include "spmd/expr.hpp"
#include "spmd/reduce.hpp"

namespace {

constexpr double kA = 1.0, kB = 2.0;

template <class Call>
void run_reduce(benchmark::State& state, int inputs, Call&& call, double expect) {
  const spmd::index_t n = state.range(0);
  double result = 0;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    timer([&] { result = call(); });
    benchmark::DoNotOptimize(result);
  }
  // Every rank gets the same result from a collective reduction: the check agrees by itself.
  const bool ok = std::abs(result - expect) <= 1e-12 * std::abs(expect);
  spmd::perf::check_all(state, ok, "wrong reduction result");
  state.counters["GB/s"] = timer.rate(8.0 * inputs * static_cast<double>(n));
  state.counters["latency_us"] = timer.mean_us();
  state.counters["elements"] = static_cast<double>(n);
}

spmd::Distribution<1> make_dist(benchmark::State& state) {
  return spmd::Distribution<1>(spmd::perf::world(), spmd::Index<1>{state.range(0)});
}

void BM_dot(benchmark::State& state) {
  const auto dist = make_dist(state);
  const auto a = spmd::full<double>(dist, kA, spmd::label("spmd::perf::reduce::a"));
  const auto b = spmd::full<double>(dist, kB, spmd::label("spmd::perf::reduce::b"));
  run_reduce(
      state, 2, [&] { return spmd::dot(a, b); }, kA * kB * static_cast<double>(dist.size()));
}

void BM_norm2(benchmark::State& state) {
  const auto dist = make_dist(state);
  const auto a = spmd::full<double>(dist, kB, spmd::label("spmd::perf::reduce::a"));
  run_reduce(
      state, 1, [&] { return spmd::norm2(a); }, kB * std::sqrt(static_cast<double>(dist.size())));
}

void BM_sum(benchmark::State& state) {
  const auto dist = make_dist(state);
  const auto a = spmd::full<double>(dist, kB, spmd::label("spmd::perf::reduce::a"));
  run_reduce(
      state, 1, [&] { return spmd::sum(a); }, kB * static_cast<double>(dist.size()));
}

// Baseline for BM_sum: a plain Kokkos::parallel_reduce over a Kokkos::View of the same per-rank
// length, then the same MPI_Allreduce, so the cost of the library's layers shows as a ratio.
void BM_sum_view(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const spmd::index_t len = spmd::impl::block_extent(n, comm.size(), comm.rank());
  Kokkos::View<double*> a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::perf::reduce::view_a"),
                          static_cast<std::size_t>(len));
  Kokkos::deep_copy(a, kB);
  const auto policy = Kokkos::RangePolicy<>(0, static_cast<std::int64_t>(len));
  const auto body = KOKKOS_LAMBDA(const std::int64_t i, double& acc) {
    acc += a(i);
  };
  run_reduce(
      state, 1,
      [&] {
        double local = 0;
        Kokkos::parallel_reduce("spmd::perf::reduce::sum_view", policy, body, local);
        return comm.allreduce(local, spmd::Op::sum);
      },
      kB * static_cast<double>(n));
}

void BM_norm2_expr(benchmark::State& state) {
  const auto dist = make_dist(state);
  const auto a = spmd::full<double>(dist, kB, spmd::label("spmd::perf::reduce::a"));
  const auto b = spmd::full<double>(dist, kA, spmd::label("spmd::perf::reduce::b"));
  run_reduce(
      state, 2, [&] { return spmd::norm2(a - b); }, (kB - kA) * std::sqrt(static_cast<double>(dist.size())));
}

/// a(i) = (i * 7919) mod 1000003 over n doubles: largest 1000002 once n > 1000003 / gcd.
spmd::Array<double, 1> scattered(benchmark::State& state) {
  const auto f = KOKKOS_LAMBDA(const spmd::index_t i) {
    return static_cast<double>((i * 7919) % 1000003);
  };
  return spmd::fromfunction<double>(spmd::perf::world(), {state.range(0)}, f, spmd::label("spmd::perf::reduce::a"));
}

/// The largest of scattered(state), computed on the host (the reference).
double scattered_max(spmd::index_t n) {
  double m = 0;
  for (spmd::index_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>((i * 7919) % 1000003));
  return m;
}

void BM_max(benchmark::State& state) {
  const auto a = scattered(state);
  run_reduce(
      state, 1, [&] { return spmd::max(a); }, scattered_max(state.range(0)));
}

void BM_argmax(benchmark::State& state) {
  const auto a = scattered(state);
  const spmd::index_t n = state.range(0);
  spmd::index_t want = 0;
  for (spmd::index_t i = 0; i < n; ++i)
    if ((i * 7919) % 1000003 > (want * 7919) % 1000003) want = i;
  run_reduce(
      state, 1, [&] { return static_cast<double>(spmd::argmax(a)[0]); }, static_cast<double>(want));
}

/// A side x side array with a halo of 1, filled with `v` (halo included).
spmd::Array<double, 2> grid(benchmark::State& state, double v) {
  const spmd::index_t side = state.range(0);
  return spmd::full<double>(spmd::Distribution<2>(spmd::perf::world(), spmd::Index<2>{side, side}, spmd::halo(1)), v,
                            spmd::label("spmd::perf::reduce::grid"));
}

/// run_reduce over side^2 (or (side - 2)^2 for the interior) points: its GB/s and elements
/// counters are per point.
template <class Call>
void run_reduce_2d(benchmark::State& state, int inputs, bool interior, Call&& call, double per_point) {
  const spmd::index_t side = state.range(0) - (interior ? 2 : 0);
  const double points = static_cast<double>(side) * static_cast<double>(side);
  run_reduce(state, inputs, call, per_point * points);
  const double scale = points / static_cast<double>(state.range(0));  // run_reduce counted range(0)
  state.counters["GB/s"] = state.counters["GB/s"] * scale;
  state.counters["elements"] = points;
}

void BM_sum_2d(benchmark::State& state) {
  const auto u = grid(state, kB);
  run_reduce_2d(
      state, 1, false, [&] { return spmd::sum(u); }, kB);
}

void BM_sum_2d_view(benchmark::State& state) {
  const auto u = grid(state, kB);
  using spmd::slice;
  const auto inner = u(slice(1, -1), slice(1, -1));
  run_reduce_2d(
      state, 1, true, [&] { return spmd::sum(inner); }, kB);
}

void BM_dot_2d(benchmark::State& state) {
  const auto u = grid(state, kA), v = grid(state, kB);
  run_reduce_2d(
      state, 2, false, [&] { return spmd::dot(u, v); }, kA * kB);
}

void grid_sizes(benchmark::internal::Benchmark* b) {
  const bool device = !spmd::impl::host_accessible<Kokkos::DefaultExecutionSpace::memory_space>();
  for (std::int64_t side : {1024, 2048, 8192})
    if (device ? side != 2048 : side != 8192) b->Arg(side);
  b->ArgName("side")->UseManualTime()->Unit(benchmark::kMicrosecond);
}

void reduce_sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(4)->Range(std::int64_t(1) << 10, std::int64_t(1) << 26)->ArgName("n");
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_dot)->Apply(reduce_sizes);
BENCHMARK(BM_norm2)->Apply(reduce_sizes);
BENCHMARK(BM_sum)->Apply(reduce_sizes);
BENCHMARK(BM_sum_view)->Apply(reduce_sizes);
BENCHMARK(BM_norm2_expr)->Apply(reduce_sizes);
BENCHMARK(BM_max)->Apply(reduce_sizes);
BENCHMARK(BM_argmax)->Apply(reduce_sizes);
BENCHMARK(BM_sum_2d)->Apply(grid_sizes);
BENCHMARK(BM_sum_2d_view)->Apply(grid_sizes);
BENCHMARK(BM_dot_2d)->Apply(grid_sizes);
