// cuNumeric's stencil (an (n+2)^2 grid, boundaries -273.15 and 40.0,
// center[:] = 0.2 * (center + north + east + west + south)) one iteration at a time, five ways:
//   BM_stencil_fused_inplace    center = 0.2 * (...) with spmd views: ONE fused kernel; the
//                               destination is read at other positions, so NumPy semantics
//                               need a buffer and a copy back (a second kernel) on a device, the
//                               lagged form on a CPU
//   BM_stencil_fused_inplace_tiled  (devices) the same by the one-pass tiled form, selected
//                               through the test-only forms switch (impl/testing.hpp)
//   BM_stencil_fused_swap       next[1:-1, 1:-1] = 0.2 * (u[1:-1, 1:-1] + u[:-2, 1:-1] + ...);
//                               swap(u, next): the documented fast path, one kernel
//   BM_stencil_temporaries      what NumPy / CuPy do: one kernel per operator into temporaries
//                               (four sums, the scale, the copy into center: six kernels)
//   BM_stencil_kokkos_mdrange   hand-written Kokkos kernel on the double buffer (MDRangePolicy)
//   BM_stencil_kokkos_rows      hand-written Kokkos kernel on the double buffer (a parallel loop
//                               over rows, a plain inner loop: what vectorises best on a CPU)
// The timed region is the update alone (halo exchanges, the same for every form, are made
// outside it). Counters: points/s (interior points per second) and GB/s against the minimum
// traffic of 16 B per point (read u once, write once), the figure the fused forms are judged by.
// BM_stencil3d_*: the 3-D 7-point update, as an expression and as a hand-written MDRange kernel.
// BM_stencil_nohalo_{swap,inplace}: the NumPy program's grid, created without a halo: along a
// split axis each statement brings the rows its shifts read across block edges itself
// (impl::assign_split: the interior in place, the edge slabs from buffers), so the timed region
// is the whole statement, communication included (at one rank: the fused forms without a halo).
// Every form is checked once, on a small grid, to give the hand-written kernel's grid bitwise.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "spmd.hpp"
#include "spmd/impl/testing.hpp"

namespace {

using spmd::all;
using spmd::Array;
using spmd::index_t;
using spmd::none;
using spmd::slice;

/// The (n+2)^2 grid with cuNumeric's boundaries, a second grid for the double buffer, and the
/// five views of the update.
struct Grid {
  Array<double, 2> u, next;
  explicit Grid(index_t n)
      : u(spmd::zeros<double>(spmd::perf::world(), {n + 2, n + 2}, spmd::halo(1), spmd::label("u"))),
        next(spmd::zeros<double>(u.distribution(), spmd::label("next"))) {
    for (auto* g : {&u, &next}) {
      (*g)(all, 0) = -273.15;
      (*g)(all, -1) = -273.15;
      (*g)(-1, all) = -273.15;
      (*g)(0, all) = 40.0;
    }
  }
  index_t interior() const { return (u.extent(0) - 2) * (u.extent(1) - 2); }
};

enum class Form { fused_inplace, fused_inplace_tiled, fused_swap, temporaries, kokkos_mdrange, kokkos_rows };

/// One update of g in the given form. (Free functions: CUDA allows no device lambda inside a
/// lambda or a TEST body.)
struct Stepper {
  Grid& g;
  Form form;
  std::vector<Array<double, 2>> tmp;  // temporaries: one per operator, laid out like u

  Stepper(Grid& grid, Form f) : g(grid), form(f) {
    if (form == Form::temporaries)
      for (int k = 0; k < 5; ++k) tmp.push_back(spmd::zeros<double>(g.u.distribution(), spmd::label("tmp")));
  }

  void operator()() {
    const auto in = slice(1, -1);
    switch (form) {
      case Form::fused_inplace:
      case Form::fused_inplace_tiled: {  // the form is chosen by the switch BM_stencil sets
        auto center = g.u(in, in);
        center = 0.2 * (center + g.u(slice(0, -2), in) + g.u(in, slice(2, none)) + g.u(in, slice(0, -2)) +
                        g.u(slice(2, none), in));
        break;
      }
      case Form::fused_swap:
        g.next(in, in) = 0.2 * (g.u(in, in) + g.u(slice(0, -2), in) + g.u(in, slice(2, none)) + g.u(in, slice(0, -2)) +
                                g.u(slice(2, none), in));
        spmd::swap(g.u, g.next);
        break;
      case Form::temporaries:
        tmp[0](in, in) = g.u(in, in) + g.u(slice(0, -2), in);
        tmp[1](in, in) = tmp[0](in, in) + g.u(in, slice(2, none));
        tmp[2](in, in) = tmp[1](in, in) + g.u(in, slice(0, -2));
        tmp[3](in, in) = tmp[2](in, in) + g.u(slice(2, none), in);
        tmp[4](in, in) = 0.2 * tmp[3](in, in);
        spmd::assign(g.u(in, in), tmp[4](in, in));  // view = view of one type: spmd::assign
        break;
      case Form::kokkos_mdrange:
        kokkos_mdrange(g.u, g.next);
        spmd::swap(g.u, g.next);
        break;
      case Form::kokkos_rows:
        kokkos_rows(g.u, g.next);
        spmd::swap(g.u, g.next);
        break;
    }
  }

  /// The interior of the global grid inside this rank's block, in storage indices: [lo, hi).
  static void interior_local(const Array<double, 2>& a, int lo[2], int hi[2]) {
    for (int d = 0; d < 2; ++d) {
      const index_t first = std::max<index_t>(1, a.owned().lo[d]);
      const index_t last = std::min<index_t>(a.extent(d) - 1, a.owned().hi[d]);
      lo[d] = static_cast<int>(first - a.owned().lo[d] + a.halo()[d]);
      hi[d] = std::max(lo[d], static_cast<int>(last - a.owned().lo[d] + a.halo()[d]));
    }
  }
  static void kokkos_mdrange(const Array<double, 2>& from, const Array<double, 2>& to) {
    const auto a = from.local_with_halo();
    const auto b = to.local_with_halo();
    int lo[2], hi[2];
    interior_local(from, lo, hi);
    Kokkos::parallel_for(
        "spmd::perf::stencil::mdrange", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({lo[0], lo[1]}, {hi[0], hi[1]}),
        KOKKOS_LAMBDA(const int i, const int j) {
          b(i, j) = 0.2 * (a(i, j) + a(i - 1, j) + a(i, j + 1) + a(i, j - 1) + a(i + 1, j));
        });
  }
  static void kokkos_rows(const Array<double, 2>& from, const Array<double, 2>& to) {
    const auto a = from.local_with_halo();
    const auto b = to.local_with_halo();
    int lo[2], hi[2];
    interior_local(from, lo, hi);
    const int j0 = lo[1], j1 = hi[1];
    Kokkos::parallel_for(
        "spmd::perf::stencil::rows", Kokkos::RangePolicy<>(lo[0], hi[0]), KOKKOS_LAMBDA(const int i) {
          for (int j = j0; j < j1; ++j)
            b(i, j) = 0.2 * (a(i, j) + a(i - 1, j) + a(i, j + 1) + a(i, j - 1) + a(i + 1, j));
        });
  }
};

/// The hand-written 3-D 7-point kernel (MDRangePolicy over the interior in storage indices).
struct Stepper3 {
  static void mdrange(const Array<double, 3>& from, const Array<double, 3>& to, const double w) {
    const auto a = from.local_with_halo();
    const auto b = to.local_with_halo();
    int lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      const index_t first = std::max<index_t>(1, from.owned().lo[d]);
      const index_t last = std::min<index_t>(from.extent(d) - 1, from.owned().hi[d]);
      lo[d] = static_cast<int>(first - from.owned().lo[d] + from.halo()[d]);
      hi[d] = std::max(lo[d], static_cast<int>(last - from.owned().lo[d] + from.halo()[d]));
    }
    Kokkos::parallel_for(
        "spmd::perf::stencil3d::mdrange",
        Kokkos::MDRangePolicy<Kokkos::Rank<3>>({lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}),
        KOKKOS_LAMBDA(const int i, const int j, const int k) {
          b(i, j, k) = w * (a(i, j, k) + a(i - 1, j, k) + a(i + 1, j, k) + a(i, j - 1, k) + a(i, j + 1, k) +
                            a(i, j, k - 1) + a(i, j, k + 1));
        });
  }
};

/// The grid after `iters` updates of `form` on a small grid equals the hand-written kernel's.
bool verify(Form form) {
  const index_t n = 62;
  const int iters = 3;
  Grid a(n), b(n);
  Stepper sa(a, form), sb(b, Form::kokkos_mdrange);
  for (int it = 0; it < iters; ++it) {
    spmd::exchange_halo(a.u, spmd::Pattern::face);
    sa();
    spmd::exchange_halo(b.u, spmd::Pattern::face);
    sb();
  }
  return spmd::allgather(a.u) == spmd::allgather(b.u);
}

void BM_stencil(benchmark::State& state, Form form) {
  const index_t n = state.range(0) - 2;  // range(0) is the side of the whole grid
  spmd::testing::KnobsGuard forms;
  if (form == Form::fused_inplace_tiled) spmd::testing::knobs().tiled_alias = true;
  if (!spmd::perf::check_all(state, verify(form), "stencil: the form's grid differs from the hand-written kernel's"))
    return;
  Grid g(n);
  Stepper step(g, form);
  spmd::exchange_halo(g.u, spmd::Pattern::face);
  step();  // the first pass builds what is cached (buffers), outside the timing
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    spmd::exchange_halo(g.u, spmd::Pattern::face);  // outside the timed region
    timer([&] { step(); });
  }
  const double points = static_cast<double>(g.interior());
  state.counters["points/s"] = timer.rate(points, 1.0);
  state.counters["GB/s"] = timer.rate(16.0 * points);
  state.counters["points"] = points;
}

/// The double buffer (swap) or the update in place, on grids without a halo; the statement
/// communicates itself. Checked once against the halo grid's hand-written kernel.
void BM_stencil_nohalo(benchmark::State& state, bool inplace) {
  const index_t side = state.range(0);
  auto make = [&](index_t n, const char* label) {
    auto g = spmd::zeros<double>(spmd::perf::world(), {n, n}, spmd::label(label));
    g(all, 0) = -273.15;
    g(all, -1) = -273.15;
    g(-1, all) = -273.15;
    g(0, all) = 40.0;
    return g;
  };
  const auto in = slice(1, -1), lo = slice(0, -2), hi = slice(2, none);
  auto step = [&](Array<double, 2>& u, Array<double, 2>& next) {
    if (inplace) {
      u(in, in) = 0.2 * (u(in, in) + u(lo, in) + u(in, hi) + u(in, lo) + u(hi, in));
    } else {
      next(in, in) = 0.2 * (u(in, in) + u(lo, in) + u(in, hi) + u(in, lo) + u(hi, in));
      spmd::swap(u, next);
    }
  };
  {
    auto u = make(64, "u"), next = make(64, "next");
    Grid ref(62);
    Stepper sr(ref, Form::kokkos_mdrange);
    for (int it = 0; it < 3; ++it) {
      step(u, next);
      spmd::exchange_halo(ref.u, spmd::Pattern::face);
      sr();
    }
    auto r = spmd::zeros<double>(u.distribution());
    r(all, all) = ref.u(all, all);
    if (!spmd::perf::check_all(state, spmd::allgather(u) == spmd::allgather(r),
                               "stencil without a halo: the grid differs from the hand-written kernel's"))
      return;
  }
  auto u = make(side, "u"), next = make(side, "next");
  step(u, next);  // the first pass builds the plans and buffers, outside the timing
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { step(u, next); });
  const double points = static_cast<double>((side - 2) * (side - 2));
  state.counters["points/s"] = timer.rate(points, 1.0);
  state.counters["GB/s"] = timer.rate(16.0 * points);
  state.counters["points"] = points;
}

// The 3-D 7-point form: next[1:-1, 1:-1, 1:-1] = (1/7) * (the point and its six neighbours);
// swap. 16 B per interior point is its roofline too (read u once, write next once).
void BM_stencil3d(benchmark::State& state, bool expression) {
  const index_t side = state.range(0);
  auto u = spmd::zeros<double>(spmd::perf::world(), {side, side, side}, spmd::halo(1), spmd::label("u3"));
  auto next = spmd::zeros<double>(u.distribution(), spmd::label("next3"));
  u(0, all, all) = 1.0;
  next(0, all, all) = 1.0;
  const auto in = slice(1, -1), lo = slice(0, -2), hi = slice(2, none);
  const double w = 1.0 / 7.0;
  auto step = [&] {
    if (expression) {
      next(in, in, in) = w * (u(in, in, in) + u(lo, in, in) + u(hi, in, in) + u(in, lo, in) + u(in, hi, in) +
                              u(in, in, lo) + u(in, in, hi));
    } else {
      Stepper3::mdrange(u, next, w);
    }
    spmd::swap(u, next);
  };
  spmd::exchange_halo(u, spmd::Pattern::face);
  step();
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    spmd::exchange_halo(u, spmd::Pattern::face);
    timer([&] { step(); });
  }
  const double points = static_cast<double>((side - 2) * (side - 2) * (side - 2));
  state.counters["points/s"] = timer.rate(points, 1.0);
  state.counters["GB/s"] = timer.rate(16.0 * points);
  state.counters["points"] = points;
}

const bool registered = [] {
  const bool device = !spmd::impl::host_accessible<Kokkos::DefaultExecutionSpace::memory_space>();
  const std::pair<const char*, Form> forms[] = {{"BM_stencil_fused_inplace", Form::fused_inplace},
                                                {"BM_stencil_fused_inplace_tiled", Form::fused_inplace_tiled},
                                                {"BM_stencil_fused_swap", Form::fused_swap},
                                                {"BM_stencil_temporaries", Form::temporaries},
                                                {"BM_stencil_kokkos_mdrange", Form::kokkos_mdrange},
                                                {"BM_stencil_kokkos_rows", Form::kokkos_rows}};
  for (std::int64_t side : {1024, 4096, 8192, 16384}) {
    if (side > 4096 && !device) continue;  // on a GPU also 8192^2 and 16384^2 (2 GiB per grid)
    for (const auto& f : forms) {
      if (f.second == Form::fused_inplace_tiled && !device) continue;  // host spaces: the lagged form
      benchmark::RegisterBenchmark(f.first, BM_stencil, f.second)
          ->Arg(side)
          ->ArgName("grid")
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (std::int64_t side : {1024, 4096, 16384}) {
    if (side > 4096 && !device) continue;
    for (bool inplace : {false, true})
      benchmark::RegisterBenchmark(inplace ? "BM_stencil_nohalo_inplace" : "BM_stencil_nohalo_swap", BM_stencil_nohalo,
                                   inplace)
          ->Arg(side)
          ->ArgName("grid")
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  }
  for (std::int64_t side : {256, 512}) {
    if (side > 256 && !device) continue;
    for (bool expression : {true, false})
      benchmark::RegisterBenchmark(expression ? "BM_stencil3d_fused_swap" : "BM_stencil3d_kokkos_mdrange", BM_stencil3d,
                                   expression)
          ->Arg(side)
          ->ArgName("grid")
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
