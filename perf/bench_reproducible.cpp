// The overhead of spmd::reproducible (reproducible.hpp): dot and sum of 1-D arrays of n doubles
// in total, fast (spmd::dot, spmd::sum: floating-point partial sums) against reproducible (exact
// products or values added into a superaccumulator per thread, one exact MPI combine, one
// rounding), on the same data: random mantissas times 2^-40..2^40 with mixed signs (the exponent
// decides which chunks of the accumulator an element touches; constant data would hit one chunk
// and flatter it).
//   BM_dot_fast, BM_dot_reproducible, BM_sum_fast, BM_sum_reproducible   n = 2^16, 2^20, 2^24
// The target: BM_dot_reproducible at most 2x BM_dot_fast at n = 2^24 on a CPU. On a
// loaded machine compare within one run with interleaved repetitions:
//   --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
// Counters: GB/s (16 B per element for dot, 8 for sum), latency_us (slowest rank).
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

#include "bench_main.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/reproducible.hpp"

namespace {

// x(g) = +-(1 + frac) 2^e from a hash of the global index and a seed (device-callable).
struct RandomFill {
  spmd::GlobalAccess<typename spmd::Array<double, 1>::view_type, 1> acc;
  std::uint64_t seed;
  KOKKOS_INLINE_FUNCTION void operator()(const spmd::index_t g) const {
    std::uint64_t h = static_cast<std::uint64_t>(g) * 0x9E3779B97F4A7C15ull + seed;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    const double frac = static_cast<double>(h >> 12) * (1.0 / 4503599627370496.0);  // [0, 1)
    const int e = static_cast<int>((h >> 3) % 81) - 40;
    double v = 1.0 + frac;
    for (int k = 0; k < (e < 0 ? -e : e); ++k) v = e < 0 ? v * 0.5 : v * 2.0;
    acc(g) = (h & 1) ? -v : v;
  }
};

spmd::Array<double, 1> random_array(benchmark::State& state, std::uint64_t seed) {
  auto a = spmd::zeros<double>(spmd::Distribution<1>(spmd::perf::world(), spmd::Index<1>{state.range(0)}),
                               spmd::label("spmd::perf::reproducible::x"));
  spmd::for_each(a, RandomFill{a.accessor(), seed});
  Kokkos::fence();
  return a;
}

template <class Call>
void run(benchmark::State& state, int inputs, Call&& call) {
  double result = 0;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    timer([&] { result = call(); });
    benchmark::DoNotOptimize(result);
  }
  spmd::perf::check_all(state, std::isfinite(result), "non-finite reduction result");
  state.counters["GB/s"] = timer.rate(8.0 * inputs * static_cast<double>(state.range(0)));
  state.counters["latency_us"] = timer.mean_us();
}

void BM_dot_fast(benchmark::State& state) {
  const auto a = random_array(state, 1), b = random_array(state, 2);
  run(state, 2, [&] { return spmd::dot(a, b); });
}
void BM_dot_reproducible(benchmark::State& state) {
  const auto a = random_array(state, 1), b = random_array(state, 2);
  run(state, 2, [&] { return spmd::dot(spmd::reproducible, a, b); });
}
void BM_sum_fast(benchmark::State& state) {
  const auto a = random_array(state, 1);
  run(state, 1, [&] { return spmd::sum(a); });
}
void BM_sum_reproducible(benchmark::State& state) {
  const auto a = random_array(state, 1);
  run(state, 1, [&] { return spmd::sum(spmd::reproducible, a); });
}

void sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(16)->Range(std::int64_t(1) << 16, std::int64_t(1) << 24)->ArgName("n");
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_dot_fast)->Apply(sizes);
BENCHMARK(BM_dot_reproducible)->Apply(sizes);
BENCHMARK(BM_sum_fast)->Apply(sizes);
BENCHMARK(BM_sum_reproducible)->Apply(sizes);
