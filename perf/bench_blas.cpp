// spmd::blas against single-rank Kokkos Kernels:
//   BM_axpby  y = 2 x + 0.5 y on 1-D arrays of n doubles (split over the ranks), n = 2^20..2^24.
//             Byte model 24 B per element (read x, read y, write y).
//   BM_dot    spmd::blas::dot, n = 2^20..2^24. Byte model 16 B per element.
//   BM_gemm   spmd::blas::GemmPlan::apply, C = A B + 0 C, n x n doubles on the automatic process
//             grid, n = 512, 1024, 2048; GFLOP/s = 2 n^3 / time.
//   BM_gemm_kokkos  KokkosBlas::gemm of one n x n product on each rank alone (no MPI): the
//             single-rank baseline (at 2 ranks every rank does the whole product; the figure is
//             the slowest rank's rate).
// Times are the slowest rank's (bench_main.hpp).
#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>

#include <cmath>
#include <cstdint>

#include "bench_main.hpp"
#include "spmd/blas.hpp"

namespace {

void BM_axpby(benchmark::State& state) {
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<1> dist(spmd::perf::world(), spmd::Index<1>{n});
  auto x = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::blas::x"));
  auto y = spmd::full<double>(dist, 0.0, spmd::label("spmd::perf::blas::y"));
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { spmd::blas::axpby(2.0, x, 0.5, y); });
  // y converges to 4 (y = 2 + y / 2); after k steps y = 4 (1 - 2^-k).
  const double v = spmd::max(y);
  spmd::perf::check_all(state, v > 1.9 && v <= 4.0, "BM_axpby: wrong result");
  state.counters["GB/s"] = timer.rate(24.0 * static_cast<double>(n));
  state.counters["elements"] = static_cast<double>(n);
}

void BM_dot(benchmark::State& state) {
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<1> dist(spmd::perf::world(), spmd::Index<1>{n});
  auto x = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::blas::x"));
  auto y = spmd::full<double>(dist, 2.0, spmd::label("spmd::perf::blas::y"));
  double r = 0;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    timer([&] { r = spmd::blas::dot(x, y); });
    benchmark::DoNotOptimize(r);
  }
  spmd::perf::check_all(state, r == 2.0 * static_cast<double>(n), "BM_dot: wrong result");
  state.counters["GB/s"] = timer.rate(16.0 * static_cast<double>(n));
  state.counters["latency_us"] = timer.mean_us();
  state.counters["elements"] = static_cast<double>(n);
}

void BM_gemm(benchmark::State& state) {
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<2> dist(spmd::perf::world(), spmd::Index<2>{n, n});
  auto A = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::blas::A"));
  auto B = spmd::full<double>(dist, 0.5, spmd::label("spmd::perf::blas::B"));
  auto C = spmd::zeros<double>(dist, spmd::label("spmd::perf::blas::C"));
  const spmd::blas::GemmPlan<double> plan(A, B, C);
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { plan.apply(1.0, A, B, 0.0, C); });
  const double v = spmd::max(C), w = spmd::min(C);
  spmd::perf::check_all(state, v == 0.5 * static_cast<double>(n) && w == v, "BM_gemm: wrong result");
  state.counters["GFLOP/s"] = timer.rate(2.0 * std::pow(static_cast<double>(n), 3));
  state.counters["panels"] = plan.num_panels();
}

void BM_gemm_kokkos(benchmark::State& state) {
  using View = Kokkos::View<double**, Kokkos::LayoutLeft>;
  const auto n = static_cast<std::size_t>(state.range(0));
  View A("spmd::perf::blas::kA", n, n), B("spmd::perf::blas::kB", n, n), C("spmd::perf::blas::kC", n, n);
  Kokkos::deep_copy(A, 1.0);
  Kokkos::deep_copy(B, 0.5);
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { KokkosBlas::gemm("N", "N", 1.0, A, B, 0.0, C); });
  auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), C);
  spmd::perf::check_all(state, c(n - 1, n - 1) == 0.5 * static_cast<double>(n), "BM_gemm_kokkos: wrong result");
  state.counters["GFLOP/s"] = timer.rate(2.0 * std::pow(static_cast<double>(n), 3));
}

const bool registered = [] {
  for (int e : {20, 22, 24}) {
    const std::int64_t n = std::int64_t(1) << e;
    benchmark::RegisterBenchmark("BM_axpby", BM_axpby)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_dot", BM_dot)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (std::int64_t n : {512, 1024, 2048}) {
    benchmark::RegisterBenchmark("BM_gemm", BM_gemm)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_gemm_kokkos", BM_gemm_kokkos)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
