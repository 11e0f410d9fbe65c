// MPI-aware Google Benchmark main: spmd::Runtime (MPI, then Kokkos), every rank runs every
// benchmark, rank 0 alone prints and writes --benchmark_out; the other ranks report to a
// reporter that prints nothing and never open the output file.
#include "bench_main.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "spmd/config.hpp"
#include "spmd/impl/testing.hpp"
#include "spmd/distribution.hpp"
#include "spmd/impl/testing.hpp"
#include "spmd/runtime.hpp"

namespace {

spmd::Comm* g_world = nullptr;

/// Swallows everything, messages on its error stream included ("Failed to match any
/// benchmarks ..."): the display reporter of ranks other than 0.
class NullReporter : public benchmark::BenchmarkReporter {
 public:
  NullReporter() {
    SetOutputStream(&sink_);
    SetErrorStream(&sink_);
  }
  bool ReportContext(const Context&) override { return true; }  // false would skip the run
  void ReportRuns(const std::vector<Run>&) override {}
  void Finalize() override {}

 private:
  std::ostream sink_{nullptr};  // no stream buffer: writes are discarded
};

/// Remove the arguments that start with `prefix` from argv.
void strip_args(int& argc, char** argv, const char* prefix) {
  const std::size_t len = std::strlen(prefix);
  int out = 1;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix, len) != 0) argv[out++] = argv[i];
  argc = out;
  argv[argc] = nullptr;
}

/// True when a boolean Google Benchmark flag is given as --flag or --flag=<anything but false/0>.
bool bool_flag_set(int argc, char** argv, const char* flag) {
  const std::size_t len = std::strlen(flag);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, len) != 0) continue;
    const char* rest = argv[i] + len;
    if (*rest == '\0') return true;
    if (*rest == '=' && std::strcmp(rest, "=false") != 0 && std::strcmp(rest, "=0") != 0) return true;
  }
  return false;
}

}  // namespace

namespace spmd::perf {

namespace {
/// a(i) = b(i) + s c(i).
struct Triad {
  Kokkos::View<double*> a, b, c;
  double s;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const { a(i) = b(i) + s * c(i); }
};
}  // namespace

double triad_gbs() {
  static double gbs = 0;
  if (gbs > 0) return gbs;
  const Comm& comm = world();
  const index_t n = index_t(1) << 25;
  const auto len = impl::block_extent(n, comm.size(), comm.rank());
  Triad t{Kokkos::View<double*>("spmd::perf::triad_a", static_cast<std::size_t>(len)),
          Kokkos::View<double*>("spmd::perf::triad_b", static_cast<std::size_t>(len)),
          Kokkos::View<double*>("spmd::perf::triad_c", static_cast<std::size_t>(len)), 3.0};
  Kokkos::deep_copy(t.b, 1.0);
  Kokkos::deep_copy(t.c, 2.0);
  const Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace, Kokkos::IndexType<std::int64_t>> policy(0, len);
  Kokkos::parallel_for("spmd::perf::triad", policy, t);  // first touch, warm-up
  const double dt = median_time(15, [&] { Kokkos::parallel_for("spmd::perf::triad", policy, t); });
  gbs = 24.0 * static_cast<double>(n) / dt * 1e-9;
  return gbs;
}

const Comm& world() {
  return *g_world;
}
}  // namespace spmd::perf

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm world = rt.world();
  g_world = &world;
  const bool root = world.rank() == 0;

  // Kokkos has read its --kokkos-* options already (Runtime leaves them in argv); Google
  // Benchmark would call them unrecognized.
  strip_args(argc, argv, "--kokkos-");
  // Only rank 0 may open (and truncate) the output file. Google Benchmark accepts only the
  // --flag=value form for string flags.
  if (!root) strip_args(argc, argv, "--benchmark_out=");
  // Random interleaving shuffles with std::random_device: each rank would run the benchmarks in
  // its own order and the job would deadlock. One rank alone may (it is how ratios are measured
  // on a loaded machine: the repetitions of the forms compared alternate).
  if (world.size() > 1 && bool_flag_set(argc, argv, "--benchmark_enable_random_interleaving")) {
    if (root)
      std::fprintf(stderr,
                   "spmd::perf: --benchmark_enable_random_interleaving is not supported under MPI "
                   "(each rank would shuffle differently and the job would deadlock)\n");
    return 1;
  }
  // With --benchmark_list_tests Google Benchmark prints the names itself; let rank 0 alone do it.
  const bool list_only = bool_flag_set(argc, argv, "--benchmark_list_tests");
  benchmark::Initialize(&argc, argv);
  // Every rank holds the same argv, so every rank reaches the same verdict here.
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  benchmark::AddCustomContext("spmdarray", SPMD_VERSION_STRING);
  benchmark::AddCustomContext("mpi_ranks", std::to_string(world.size()));
  benchmark::AddCustomContext("kokkos_backend", spmd::Runtime::backend());
  benchmark::AddCustomContext("kokkos_concurrency", std::to_string(Kokkos::DefaultExecutionSpace().concurrency()));
  benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
  benchmark::AddCustomContext("timing", "per iteration: fence, barrier, MPI_Wtime; MPI_MAX over ranks");
  // SPMD_BENCH_MULTI_POINTS=N: the kernel layer's device form takes several points per work item
  // from N points on (a huge N: one point per item), so that two runs of one build compare the
  // forms. Unset: the library's threshold.
  if (const char* m = std::getenv("SPMD_BENCH_MULTI_POINTS")) {
    spmd::testing::knobs().multi_points = std::strtoll(m, nullptr, 10);
    benchmark::AddCustomContext("multi_points", m);
  }
  // SPMD_BENCH_COLUMN_MIN=N: rows of at least N points take the device column form (a huge N:
  // the strided form of several points per item instead), for the same kind of A/B.
  if (const char* m = std::getenv("SPMD_BENCH_COLUMN_MIN")) {
    spmd::testing::knobs().column_min = std::strtoll(m, nullptr, 10);
    benchmark::AddCustomContext("column_min", m);
  }
  // SPMD_BENCH_TILED_ALIAS=1: an aliased in-place update on a device takes the one-pass tiled
  // form where it applies instead of the buffered one (the default: evaluate into a temporary,
  // copy back). bench_stencil's BM_stencil_fused_inplace_tiled selects it by itself.
  if (const char* m = std::getenv("SPMD_BENCH_TILED_ALIAS")) {
    spmd::testing::knobs().tiled_alias = std::strtoll(m, nullptr, 10) != 0;
    benchmark::AddCustomContext("tiled_alias", m);
  }

  if (root) {
    benchmark::RunSpecifiedBenchmarks();
  } else if (!list_only) {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  g_world = nullptr;
  return 0;
}
