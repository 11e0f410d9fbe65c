#pragma once
/// \file bench_main.hpp
/// Shared pieces of the spmdarray benchmarks: the job's communicator and the MPI-aware timing of
/// one iteration (the kokkos-comm recipe).
///
/// Every rank runs every benchmark. Each iteration is timed on every rank between a fence and a
/// barrier before and a fence after; the slowest rank's time (MPI_MAX) is handed to Google
/// Benchmark with SetIterationTime, so every benchmark must be registered with UseManualTime().
/// Because every rank then sees the same iteration times, Google Benchmark chooses the same
/// iteration counts on every rank and the ranks stay in step. Only rank 0 reports.

#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "spmd/comm.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::perf {

/// The benchmark job's communicator (a duplicate of MPI_COMM_WORLD, owned by the Runtime in
/// main). Local.
const Comm& world();

/// Wait for all work on the default execution space (labelled where Kokkos supports it). Local.
inline void fence(const char* label) {
  impl::fence(Kokkos::DefaultExecutionSpace(), label);
}

/// Run `body` once and time it: fence, barrier, MPI_Wtime, body, fence, MPI_Wtime; the maximum
/// over ranks is reported with state.SetIterationTime and returned. Collective over world().
template <class F>
double time_iteration(benchmark::State& state, F&& body) {
  fence("spmd::perf::time_iteration before barrier");
  world().barrier();
  const double t0 = MPI_Wtime();
  std::forward<F>(body)();
  fence("spmd::perf::time_iteration after body");
  const double dt = world().allreduce(MPI_Wtime() - t0, Op::max);
  state.SetIterationTime(dt);
  return dt;
}

/// Times the iterations of one benchmark run with time_iteration and keeps their sum, so that
/// rates can be reported as plain numbers (GB/s = bytes * iterations / total time) rather than
/// Google Benchmark's "/s"-suffixed rate counters. Use one per benchmark function call:
///
///   spmd::perf::ManualTimer timer(state);
///   for (auto _ : state) timer([&] { kernel(); });
///   state.counters["GB/s"] = timer.rate(bytes_per_iteration);
class ManualTimer {
 public:
  explicit ManualTimer(benchmark::State& state) : state_(state) {}
  /// Time one iteration (see time_iteration). Collective over world().
  template <class F>
  void operator()(F&& body) {
    total_ += time_iteration(state_, std::forward<F>(body));
    ++count_;
  }
  /// Sum of the reported iteration times, seconds. Local.
  double total() const { return total_; }
  /// Mean reported iteration time in microseconds (0 before any iteration). Local.
  double mean_us() const { return count_ ? 1e6 * total_ / static_cast<double>(count_) : 0.0; }
  /// units_per_iteration * scale per second of reported time (default scale 1e-9: bytes give
  /// GB/s). Local.
  double rate(double units_per_iteration, double scale = 1e-9) const {
    return total_ > 0 ? units_per_iteration * scale * static_cast<double>(count_) / total_ : 0.0;
  }

 private:
  benchmark::State& state_;
  double total_ = 0;
  long long count_ = 0;
};

/// The slowest rank's time of one call of body (fence, barrier, time, fence, MPI_MAX), median of
/// `reps` calls. Collective over world().
template <class F>
double median_time(int reps, F&& body) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    fence("spmd::perf::median_time before barrier");
    world().barrier();
    const double t0 = MPI_Wtime();
    body();
    fence("spmd::perf::median_time after body");
    t.push_back(world().allreduce(MPI_Wtime() - t0, Op::max));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The job's triad bandwidth in GB/s: a = b + s c over 2^25 doubles in total split over the
/// ranks (every rank streaming at once), 24 B per element, median of 15 runs; measured on first
/// use, then remembered: the roofline the benchmarks' figures are read against. Collective over
/// world() on first use.
double triad_gbs();

/// Agree over world() that `ok` holds on every rank; otherwise mark the benchmark failed on every
/// rank alike (so the ranks stay in step). Collective.
inline bool check_all(benchmark::State& state, bool ok, const char* what) {
  const int bad = world().allreduce(ok ? 0 : 1, Op::sum);
  if (bad != 0) state.SkipWithError(what);
  return bad == 0;
}

}  // namespace spmd::perf
