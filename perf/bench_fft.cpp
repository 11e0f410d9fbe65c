// Distributed 3-D FFTs (spmd::fft) on side^3 arrays, against the local library called directly:
//   BM_fftn_plan      complex<double> fftn through a Plan into a kept output (restored layout)
//   BM_fftn_transposed  the same, output left transposed (one transpose fewer)
//   BM_fftn_weak      BM_fftn_plan on (ranks * side) x side x side: side^3 points per rank
//   BM_fftn_oneshot   spmd::fft::fftn(a): the cached plan plus a new output array per call
//   BM_rfftn_plan     double -> complex<double> rfftn through a Plan
//   BM_library_c2c    one rank only: FFTW (host) or cuFFT (CUDA) planned on the same arrays
//                     (FFTW_ESTIMATE and the same thread count as spmd::fft), out of place
// Counters: GFLOP/s by the usual 5 N log2 N model (2.5 N log2 N for rfftn), transposes per call,
// local_ms / transpose_ms (Plan::execute_timed: the local FFTs and the data movements, fenced),
// and the DC term checked against spmd::sum of the input. Sizes: 64, 128, 256 (CPU), 512 (GPU:
// pick with --benchmark_filter). The NumPy and CuPy peers: perf/peers/numpy_fft.py,
// perf/peers/cupy_peers.py --only fft.
#include <Kokkos_Core.hpp>

#include <spmd/config.hpp>

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdint>

#include "bench_main.hpp"
#include "spmd/creation.hpp"
#include "spmd/fft.hpp"
#include "spmd/reduce.hpp"

#if SPMD_HAVE_FFTW
#include <fftw3.h>
#endif
#if SPMD_HAVE_CUFFT
#include <cufft.h>
#endif

namespace {

using Z = Kokkos::complex<double>;

struct Field {
  KOKKOS_INLINE_FUNCTION double v(spmd::index_t i, spmd::index_t j, spmd::index_t k) const {
    return spmd::math::sin(0.1 * static_cast<double>(i) + 0.2 * static_cast<double>(j)) *
               spmd::math::cos(0.3 * static_cast<double>(k)) +
           1e-3 * static_cast<double>((i * 7 + j * 13 + k * 29) % 17);
  }
};
struct ComplexField : Field {
  KOKKOS_INLINE_FUNCTION Z operator()(spmd::index_t i, spmd::index_t j, spmd::index_t k) const {
    return Z(v(i, j, k), v(k, i, j));
  }
};
struct RealField : Field {
  KOKKOS_INLINE_FUNCTION double operator()(spmd::index_t i, spmd::index_t j, spmd::index_t k) const {
    return v(i, j, k);
  }
};

double flops(spmd::index_t side, double per) {
  const double n = static_cast<double>(side) * side * side;
  return per * n * std::log2(n);
}

/// The DC term of the output against the sum of the input (every rank agrees).
template <class T, class In>
void check_dc(benchmark::State& state, const spmd::Array<T, 3>& out, const In& in) {
  const Z dc = out.get(0, 0, 0);
  const auto s = spmd::sum(in);
  const double want_re = static_cast<double>(Kokkos::real(Z(s)));
  const double want_im = static_cast<double>(Kokkos::imag(Z(s)));
  const bool ok = std::abs(dc.real() - want_re) <= 1e-8 * (std::abs(want_re) + 1) &&
                  std::abs(dc.imag() - want_im) <= 1e-8 * (std::abs(want_im) + 1);
  spmd::perf::check_all(state, ok, "the DC term is not the sum of the input");
}

/// The split of one execute (median of 3 fenced, timed runs): local FFTs and data movements, ms.
template <class P, class O, class I>
void split_counters(benchmark::State& state, const P& plan, const O& out, const I& in) {
  std::vector<double> loc, mov;
  for (int r = 0; r < 3; ++r) {
    const auto t = plan.execute_timed(out, in);
    loc.push_back(t.local);
    mov.push_back(t.transpose);
  }
  std::sort(loc.begin(), loc.end());
  std::sort(mov.begin(), mov.end());
  state.counters["local_ms"] = 1e3 * loc[1];
  state.counters["transpose_ms"] = 1e3 * mov[1];
}

/// side^3 (strong), or (ranks * side) x side x side (weak: side^3 per rank).
void run_plan(benchmark::State& state, spmd::fft::Output output, bool weak = false) {
  const spmd::index_t side = state.range(0);
  const spmd::index_t n0 = weak ? side * spmd::perf::world().size() : side;
  const auto a = spmd::fromfunction<Z>(spmd::perf::world(), {n0, side, side}, ComplexField{});
  spmd::fft::Plan<Z, Z, 3> plan(a.distribution(), spmd::fft::Direction::forward, {}, {}, spmd::fft::Norm::backward,
                                output);
  auto out = plan.make_output();
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { plan.execute(out, a); });
  check_dc(state, out, a);
  const double n = static_cast<double>(n0) * static_cast<double>(side) * static_cast<double>(side);
  state.counters["GFLOP/s"] = timer.rate(5.0 * n * std::log2(n));
  state.counters["transposes"] = plan.num_transposes();
  state.counters["stages"] = plan.num_stages();
  split_counters(state, plan, out, a);
}

void BM_fftn_plan(benchmark::State& state) {
  run_plan(state, spmd::fft::Output::restored);
}
void BM_fftn_transposed(benchmark::State& state) {
  run_plan(state, spmd::fft::Output::transposed);
}
void BM_fftn_weak(benchmark::State& state) {
  run_plan(state, spmd::fft::Output::restored, true);
}

void BM_fftn_oneshot(benchmark::State& state) {
  const spmd::index_t side = state.range(0);
  const auto a = spmd::fromfunction<Z>(spmd::perf::world(), {side, side, side}, ComplexField{});
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state)
    timer([&] {
      auto f = spmd::fft::fftn(a);  // a new array each call (what a NumPy-style program does)
      benchmark::DoNotOptimize(f);
    });
  check_dc(state, spmd::fft::fftn(a), a);
  state.counters["GFLOP/s"] = timer.rate(flops(side, 5.0));
}

void BM_rfftn_plan(benchmark::State& state) {
  const spmd::index_t side = state.range(0);
  const auto r = spmd::fromfunction<double>(spmd::perf::world(), {side, side, side}, RealField{});
  spmd::fft::Plan<double, Z, 3> plan(r.distribution(), spmd::fft::Direction::forward);
  auto out = plan.make_output();
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { plan.execute(out, r); });
  check_dc(state, out, r);
  state.counters["GFLOP/s"] = timer.rate(flops(side, 2.5));
  state.counters["transposes"] = plan.num_transposes();
  split_counters(state, plan, out, r);
}

void BM_library_c2c(benchmark::State& state) {
  const spmd::index_t side = state.range(0);
  if (spmd::perf::world().size() != 1) {
    state.SkipWithError("one rank only (the library's own transform)");
    return;
  }
  const auto a = spmd::fromfunction<Z>(spmd::perf::world(), {side, side, side}, ComplexField{});
  spmd::Array<Z, 3> out(a.distribution());
  void* in = a.local_with_halo().data();
  void* o = out.local_with_halo().data();
  const int n = static_cast<int>(side);
  spmd::perf::ManualTimer timer(state);
#if defined(KOKKOS_ENABLE_CUDA) && SPMD_HAVE_CUFFT
  cufftHandle p;
  if (cufftPlan3d(&p, n, n, n, CUFFT_Z2Z) != CUFFT_SUCCESS) {
    state.SkipWithError("cufftPlan3d failed");
    return;
  }
  cufftSetStream(p, Kokkos::DefaultExecutionSpace().cuda_stream());
  for (auto _ : state)
    timer([&] {
      cufftExecZ2Z(p, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(o), CUFFT_FORWARD);
    });
  cufftDestroy(p);
#elif SPMD_HAVE_FFTW
  // (spmd::fft set FFTW's planner thread count when the library made its first plan; a
  // one-shot transform first makes this baseline run under the same setting)
  (void)spmd::fft::fftn(spmd::fromfunction<Z>(spmd::perf::world(), {2, 2, 2}, ComplexField{}));
  fftw_plan p = fftw_plan_dft_3d(n, n, n, static_cast<fftw_complex*>(in), static_cast<fftw_complex*>(o), FFTW_FORWARD,
                                 FFTW_ESTIMATE);
  for (auto _ : state) timer([&] { fftw_execute(p); });
  fftw_destroy_plan(p);
#else
  (void)in, (void)o, (void)n;
  state.SkipWithError("no local FFT library in this build");
  return;
#endif
  check_dc(state, out, a);
  state.counters["GFLOP/s"] = timer.rate(flops(side, 5.0));
}

void sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(2)->Range(64, 512)->ArgName("side");
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_fftn_plan)->Apply(sizes);
BENCHMARK(BM_fftn_transposed)->Apply(sizes);
BENCHMARK(BM_fftn_weak)->Apply(sizes);
BENCHMARK(BM_fftn_oneshot)->Apply(sizes);
BENCHMARK(BM_rfftn_plan)->Apply(sizes);
BENCHMARK(BM_library_c2c)->Apply(sizes);
