// The latency of an 8-byte all-reduce (a dot product's last step: one double summed over the
// ranks, the result on the host), by the ways the library can do it:
//   BM_allreduce/host        MPI_Allreduce of a host double (Comm::allreduce): the floor
//   BM_allreduce/device_mpi  a device scalar copied to the host, then MPI_Allreduce there (what
//                            spmd::dot / sum / norm2 do after their local reduction)
//   BM_allreduce/device_nccl ncclAllReduce of the device scalar on the stream
//                            (spmd::allreduce(..., Backend::nccl)), then the result copied to the
//                            host; skipped where the build or the job has no NCCL
//   BM_dot_to_host           spmd::dot(a, b) of n doubles in total: the local reduction and the
//                            all-reduce, result on the host (n = 2^10 and 2^20 per rank)
// Every call's result is checked against the sum the ranks contributed. Each timed iteration runs
// `calls` calls back to back (fence and barrier only around the batch), so the per-call figure
// (counter latency_us) is the latency a solver loop sees, not a fence's.
#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>

#include "bench_main.hpp"
#include "spmd/array.hpp"
#include "spmd/reduce.hpp"

namespace {

constexpr int calls = 100;

enum class Way { host, device_mpi, device_nccl };

void BM_allreduce(benchmark::State& state, Way way) {
  const spmd::Comm& comm = spmd::perf::world();
  const double mine = 1.0 + comm.rank(), want = comm.size() * (comm.size() + 1) / 2.0;
  Kokkos::View<double*> dev(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::perf::allreduce::x"), 1);
  auto host = Kokkos::create_mirror_view(dev);
  const Kokkos::DefaultExecutionSpace exec;
  if (way == Way::device_nccl) {
    try {  // no NCCL in this build or job: the same spmd::Error everywhere
      Kokkos::deep_copy(dev, mine);
      spmd::allreduce(exec, comm, dev, spmd::Op::sum, spmd::Backend::nccl);
    } catch (const spmd::Error& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  double result = 0;
  bool ok = true;
  auto one = [&] {
    switch (way) {
      case Way::host:
        result = comm.allreduce(mine, spmd::Op::sum);
        break;
      case Way::device_mpi:
        Kokkos::deep_copy(exec, host, dev);  // the scalar a device reduction left
        spmd::impl::fence(exec, "spmd::perf::allreduce: device scalar on the host");
        result = comm.allreduce(host(0), spmd::Op::sum);
        break;
      case Way::device_nccl:
        spmd::allreduce(exec, comm, dev, spmd::Op::sum, spmd::Backend::nccl);
        Kokkos::deep_copy(exec, host, dev);
        spmd::impl::fence(exec, "spmd::perf::allreduce: result on the host");
        result = host(0);
        Kokkos::deep_copy(exec, dev, mine);  // this rank's contribution again (stream-ordered)
        break;
    }
  };
  Kokkos::deep_copy(dev, mine);
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state)
    timer([&] {
      for (int k = 0; k < calls; ++k) {
        one();
        ok = ok && result == want;
      }
    });
  spmd::perf::check_all(state, ok, "wrong all-reduce result");
  state.counters["latency_us"] = timer.mean_us() / calls;
  state.counters["ranks"] = comm.size();
}

void BM_dot_to_host(benchmark::State& state) {
  const spmd::Comm& comm = spmd::perf::world();
  const spmd::index_t per_rank = state.range(0);
  const spmd::Distribution<1> dist(comm, spmd::Index<1>{per_rank * comm.size()});
  const auto a = spmd::full<double>(dist, 1.0, spmd::label("spmd::perf::allreduce::a"));
  const auto b = spmd::full<double>(dist, 2.0, spmd::label("spmd::perf::allreduce::b"));
  const double want = 2.0 * static_cast<double>(dist.size());
  double result = spmd::dot(a, b);
  bool ok = true;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state)
    timer([&] {
      for (int k = 0; k < calls; ++k) {
        result = spmd::dot(a, b);
        ok = ok && result == want;
      }
    });
  spmd::perf::check_all(state, ok, "wrong dot product");
  state.counters["latency_us"] = timer.mean_us() / calls;
  state.counters["ranks"] = comm.size();
}

}  // namespace

BENCHMARK_CAPTURE(BM_allreduce, host, Way::host)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_allreduce, device_mpi, Way::device_mpi)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_allreduce, device_nccl, Way::device_nccl)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_dot_to_host)
    ->ArgNames({"per_rank"})
    ->Arg(1 << 10)
    ->Arg(1 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
