// Halo exchanges, halo width 1, per communication backend in one program run:
//   BM_halo2d/<face|box>: n x n doubles in total, n = 1024, 4096
//   BM_halo3d/<face|box>: n^3 doubles in total, n = 128, 256
// each with non-periodic and periodic boundaries (periodic:1 gives every rank 2N (face) or
// 3^N - 1 (box) neighbour directions; where a direction wraps onto the rank itself the plan
// copies locally instead of messaging, so the single-rank periodic run still moves data), and
// each backend: backend:0 automatic (what spmd::exchange_halo uses), 1 mpi (host-staged on a
// GPU with a host MPI), 2 nccl, 3 ipc (spmd/backend.hpp). A backend the build or the job cannot
// use is reported as skipped (with the reason) on every rank alike.
//   BM_overlap/<mode>: the 5-point stencil update of apps/stencil (double buffer) on n x n doubles
//   in total, n = 4096, 16384, with the automatic backend: mode update (no exchange: the compute
//   alone), sequential (exchange_halo, then the update), overlapped (halo_begin_overlapped, then
//   spmd::assign(pending, ...): the interior while the halo travels). The exposed communication
//   of a step is time(sequential) - time(update) and time(overlapped) - time(update)
//   (counter exposed_us on the two, from the update's time measured just before in the run).
// The process grid is Distribution's automatic choice for the rank count.
//
// Byte model, per rank and exchange (each counter is the largest over the ranks):
//   bytes_per_rank      halo points this rank's exchange fills * 8 (periodic wraps onto itself
//                       included); the same number of owned points is read and packed
//   mpi_bytes_per_rank  the part of it that comes from other ranks (through the backend)
//   messages_per_rank   messages this rank sends per exchange (one per direction whose
//                       neighbour is another rank; 2 ranks on a periodic axis exchange 2)
//   GB/s                bytes_per_rank / time (time of the slowest rank; pack, messages, local
//                       wrap copies and unpack included)
// A rank with no neighbour moves 0 bytes: at one rank without periodic boundaries the time is
// the cost of an empty exchange.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "bench_main.hpp"
#include "spmd/array.hpp"
#include "spmd/expr.hpp"
#include "spmd/halo.hpp"
#include "spmd/overlap.hpp"
#include "spmd/slice.hpp"

namespace {

const spmd::Backend kBackends[] = {spmd::Backend::automatic, spmd::Backend::mpi, spmd::Backend::nccl,
                                   spmd::Backend::ipc};

template <int N>
void run_halo(benchmark::State& state, spmd::Pattern pattern) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t n = state.range(0);
  const bool periodic = state.range(1) != 0;
  const spmd::Backend requested = kBackends[state.range(2)];
  spmd::Index<N> shape{};
  for (int d = 0; d < N; ++d) shape[d] = n;
  const auto dist = periodic ? spmd::Distribution<N>(comm, shape, spmd::halo(1), spmd::periodic())
                             : spmd::Distribution<N>(comm, shape, spmd::halo(1));
  const auto a = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::halo::a"));
  std::unique_ptr<spmd::HaloExchange<double, N>> plan;
  try {  // an impossible backend is the same spmd::Error on every rank
    plan = std::make_unique<spmd::HaloExchange<double, N>>(dist, pattern, dist.halo(), requested);
  } catch (const spmd::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const double mpi_bytes = static_cast<double>(comm.allreduce(plan->send_points(), spmd::Op::max)) * sizeof(double);
  const int messages = comm.allreduce(plan->num_neighbors(), spmd::Op::max);  // sends to other ranks
  const double bytes = static_cast<double>(comm.allreduce(plan->fill_points(), spmd::Op::max)) * sizeof(double);

  plan->exchange(a);  // the first exchange maps the peers' buffers (ipc) or connects (NCCL)
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { plan->exchange(a); });

  state.counters["bytes_per_rank"] = bytes;
  state.counters["mpi_bytes_per_rank"] = mpi_bytes;
  state.counters["messages_per_rank"] = messages;
  state.counters["GB/s"] = timer.rate(bytes);
  state.counters["latency_us"] = timer.mean_us();
  std::string grid = "grid ";
  for (int d = 0; d < N; ++d) grid += (d ? "x" : "") + std::to_string(dist.dims()[d]);
  state.SetLabel(grid + " " + spmd::to_string(plan->backend()));
}

void BM_halo2d(benchmark::State& state, spmd::Pattern pattern) {
  run_halo<2>(state, pattern);
}
void BM_halo3d(benchmark::State& state, spmd::Pattern pattern) {
  run_halo<3>(state, pattern);
}

void sizes_2d(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "periodic", "backend"})->ArgsProduct({{1024, 4096}, {0, 1}, {0, 1, 2, 3}});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}
void sizes_3d(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "periodic", "backend"})->ArgsProduct({{128, 256}, {0, 1}, {0, 1, 2, 3}});
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

// ---- overlap ------------------------------------------------------------------------------------

enum class Mode { update, sequential, overlapped };

/// The update's time per step of the last BM_overlap/update run of each n (the overlap
/// benchmarks of the same n run after it: registration order).
std::map<spmd::index_t, double>& update_us() {
  static std::map<spmd::index_t, double> m;
  return m;
}

void BM_overlap(benchmark::State& state, Mode mode) {
  using spmd::slice;
  const spmd::index_t n = state.range(0);
  const spmd::Distribution<2> dist(spmd::perf::world(), {n, n}, spmd::halo(1));
  auto u = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::overlap::u"));
  auto v = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::overlap::v"));
  const auto in = slice(1, -1);
  auto f = [&](const spmd::Array<double, 2>& g) {
    return 0.2 * (g(in, in) + g(slice(0, -2), in) + g(in, slice(2, spmd::none)) + g(in, slice(0, -2)) +
                  g(slice(2, spmd::none), in));
  };
  auto step = [&] {
    if (mode == Mode::update) {
      spmd::assign(v(in, in), f(u), spmd::label("spmd::perf::overlap::update"));
    } else if (mode == Mode::sequential) {
      spmd::exchange_halo(u, spmd::Pattern::face);
      spmd::assign(v(in, in), f(u), spmd::label("spmd::perf::overlap::update"));
    } else {
      auto pending = spmd::halo_begin_overlapped(u, spmd::Pattern::face);
      spmd::assign(pending, v(in, in), f(u), spmd::label("spmd::perf::overlap::update"));
    }
    spmd::swap(u, v);
  };
  for (int k = 0; k < 2; ++k) step();  // plans, connections and buffers of both arrays
  constexpr int steps = 10;            // per timed iteration
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state)
    timer([&] {
      for (int k = 0; k < steps; ++k) step();
    });
  const double per_step = timer.mean_us() / steps;
  state.counters["step_us"] = per_step;
  state.counters["points_per_s"] = per_step > 0 ? static_cast<double>(n) * static_cast<double>(n) / per_step * 1e6 : 0;
  if (mode == Mode::update)
    update_us()[n] = per_step;
  else if (update_us().count(n))
    state.counters["exposed_us"] = per_step - update_us()[n];
  const spmd::HaloExchange<double, 2> probe(dist, spmd::Pattern::face);  // the backend the arrays' plans chose
  std::string grid = "grid " + std::to_string(dist.dims()[0]) + "x" + std::to_string(dist.dims()[1]);
  state.SetLabel(grid + " " + spmd::to_string(probe.backend()));
}

void sizes_overlap(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n"})->Args({4096})->Args({16384});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(5);
}

}  // namespace

BENCHMARK_CAPTURE(BM_halo2d, face, spmd::Pattern::face)->Apply(sizes_2d);
BENCHMARK_CAPTURE(BM_halo2d, box, spmd::Pattern::box)->Apply(sizes_2d);
BENCHMARK_CAPTURE(BM_halo3d, face, spmd::Pattern::face)->Apply(sizes_3d);
BENCHMARK_CAPTURE(BM_halo3d, box, spmd::Pattern::box)->Apply(sizes_3d);
BENCHMARK_CAPTURE(BM_overlap, update, Mode::update)->Apply(sizes_overlap);
BENCHMARK_CAPTURE(BM_overlap, sequential, Mode::sequential)->Apply(sizes_overlap);
BENCHMARK_CAPTURE(BM_overlap, overlapped, Mode::overlapped)->Apply(sizes_overlap);
