// Halo exchange through Array::exchange_halo(pattern), halo width 1:
//   BM_halo2d/<face|box>: n x n doubles in total, n = 1024, 4096
//   BM_halo3d/<face|box>: n^3 doubles in total, n = 128, 256
// each with non-periodic and periodic boundaries (periodic:1 gives every rank 2N (face) or
// 3^N - 1 (box) neighbours, itself included, so the single-rank run moves data too).
// The process grid is Distribution's automatic choice for the rank count.
//
// Byte model: bytes = halo points this rank sends per exchange * 8 (the same number arrive);
// the counter reports the largest over the ranks. GB/s = bytes / time (time of the slowest rank;
// pack, MPI and unpack included). A rank with no neighbour moves 0 bytes: at one rank without
// periodic boundaries the time is the cost of an empty exchange.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#include "bench_main.hpp"
#include "spmd/array.hpp"
#include "spmd/halo.hpp"

namespace {

template <int N>
void run_halo(benchmark::State& state, spmd::Pattern pattern) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const bool periodic = state.range(1) != 0;
  spmd::Index<N> shape{};
  for (int d = 0; d < N; ++d) shape[d] = n;
  const auto dist = periodic ? spmd::Distribution<N>(comm, shape, spmd::halo(1), spmd::periodic())
                             : spmd::Distribution<N>(comm, shape, spmd::halo(1));
  const auto a = spmd::full<double>(dist, 1.0, "spmd::perf::halo::a");
  // A plan of our own, only to count what one exchange moves (the Array keeps its plan private).
  const spmd::HaloExchange<double, N> probe(dist, pattern);
  const double bytes = static_cast<double>(comm.allreduce(probe.send_points(), spmd::Op::max)) * sizeof(double);
  const int neighbors = comm.allreduce(probe.num_neighbors(), spmd::Op::max);

  a.exchange_halo(pattern);  // builds the array's plan outside the timed loop
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { a.exchange_halo(pattern); });

  state.counters["bytes_per_rank"] = bytes;
  state.counters["neighbors"] = neighbors;
  state.counters["GB/s"] = timer.rate(bytes);
  std::string grid = "grid ";
  for (int d = 0; d < N; ++d) grid += (d ? "x" : "") + std::to_string(dist.dims()[d]);
  state.SetLabel(grid);
}

void BM_halo2d(benchmark::State& state, spmd::Pattern pattern) { run_halo<2>(state, pattern); }
void BM_halo3d(benchmark::State& state, spmd::Pattern pattern) { run_halo<3>(state, pattern); }

void sizes_2d(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "periodic"})->ArgsProduct({{1024, 4096}, {0, 1}});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}
void sizes_3d(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "periodic"})->ArgsProduct({{128, 256}, {0, 1}});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK_CAPTURE(BM_halo2d, face, spmd::Pattern::face)->Apply(sizes_2d);
BENCHMARK_CAPTURE(BM_halo2d, box, spmd::Pattern::box)->Apply(sizes_2d);
BENCHMARK_CAPTURE(BM_halo3d, face, spmd::Pattern::face)->Apply(sizes_3d);
BENCHMARK_CAPTURE(BM_halo3d, box, spmd::Pattern::box)->Apply(sizes_3d);
