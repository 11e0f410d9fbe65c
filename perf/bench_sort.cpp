// spmd::sort / spmd::argsort throughput (sort.hpp): n uniform random doubles in [0, 1) in total
// (spmd::random, the same keys at any rank count), split over the ranks in balanced blocks.
//   BM_sort     spmd::sort(x): a new sorted array in x's blocks
//   BM_argsort  spmd::argsort(x): the global indices
// keys/s = n / time of the slowest rank (the whole call: host copy, local sort, sample, bucket
// exchange, merge, balancing exchange, copy back, allocation of the result). Run at 1 and 2
// ranks (mpiexec -n 1|2 ./perf/bench_sort) and read the two keys/s figures side by side.
#include <Kokkos_Core.hpp>

#include <cstdint>

#include "bench_main.hpp"
#include "spmd/random.hpp"
#include "spmd/reduce.hpp"
#include "spmd/sort.hpp"

namespace {

template <bool Arg>
void BM_sort(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  spmd::Array<double, 1> x(spmd::Distribution<1>(comm, spmd::Index<1>{n}), spmd::label("spmd::perf::sort::x"));
  spmd::random::uniform(x, spmd::random::Generator{2026});
  bool ok = true;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    if constexpr (Arg) {
      spmd::Array<spmd::index_t, 1> i;
      timer([&] { i = spmd::argsort(x); });
      ok = ok && i.shape()[0] == n;
    } else {
      spmd::Array<double, 1> s;
      timer([&] { s = spmd::sort(x); });
      // sorted within each block (and the blocks in order: the first of each >= the last before)
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.local());
      for (std::size_t k = 1; k < h.extent(0); ++k) ok = ok && h(k - 1) <= h(k);
    }
  }
  spmd::perf::check_all(state, ok, Arg ? "BM_argsort: wrong length" : "BM_sort: a block is not sorted");
  state.counters["keys/s"] = timer.rate(static_cast<double>(n), 1.0);
  state.counters["Mkeys/s"] = timer.rate(static_cast<double>(n), 1e-6);
  state.counters["keys"] = static_cast<double>(n);
  state.counters["ranks"] = comm.size();
}

const bool registered = [] {
  for (int e : {20, 24}) {
    const std::int64_t n = std::int64_t(1) << e;
    benchmark::RegisterBenchmark("BM_sort", BM_sort<false>)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_argsort", BM_sort<true>)
        ->Arg(n)
        ->ArgName("n")
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
