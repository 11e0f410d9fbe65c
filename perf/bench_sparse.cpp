// spmd::sparse::CsrMatrix SpMV on the Poisson model matrices, read against a triad roofline
// measured in the same run:
//   BM_spmv          y = A x (CsrMatrix::apply) for poisson2d 512^2 .. 4096^2 and poisson3d
//                    64^3 .. 256^3. Byte model (CSR, int indices): 12 B per nonzero (8 B value,
//                    4 B column index) + 20 B per row (4 B row offset, 8 B x, 8 B y), counted
//                    over the global matrix; GB/s = bytes / time of the slowest rank.
//                    triad_fraction = GB/s / the job's triad GB/s (a = b + s c over 2^25 doubles
//                    split over the ranks, 24 B per element, median of 15, measured once per run
//                    with every rank streaming at once).
//   BM_spmv_overlap  the phases of one spmv timed apart (medians of 15, slowest rank): the ghost
//                    import alone (import_begin + import_end), the diagonal-block SpMV alone, the
//                    off-diagonal-block SpMV alone; the benchmark's own time is the full
//                    overlapped spmv. overlap = (import + diagonal + offdiagonal - full) / import,
//                    clamped to [0, 1]: the fraction of the import hidden behind the diagonal
//                    block (0 at one rank, where there is nothing to import).
// The matrix of the last size is kept between Google Benchmark's calls of one benchmark
// (poisson_matrix.hpp).
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench_main.hpp"
#include "poisson_matrix.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/reduce.hpp"
#include "spmd/sparse.hpp"

namespace {

using Matrix = spmd::sparse::CsrMatrix<double>;

using spmd::perf::median_time;
using spmd::perf::triad_gbs;

double spmv_bytes(const Matrix& A) {
  return 12.0 * static_cast<double>(A.nnz()) + 20.0 * static_cast<double>(A.rows());
}

void set_counters(benchmark::State& state, const Matrix& A, const spmd::perf::ManualTimer& timer) {
  const double gbs = timer.rate(spmv_bytes(A));
  state.counters["GB/s"] = gbs;
  state.counters["triad_GB/s"] = triad_gbs();
  state.counters["triad_fraction"] = gbs / triad_gbs();
  state.counters["rows"] = static_cast<double>(A.rows());
  state.counters["nnz"] = static_cast<double>(A.nnz());
  state.counters["ghosts_per_rank"] =
      static_cast<double>(spmd::perf::world().allreduce(A.import_plan().num_ghosts(), spmd::Op::max));
}

void BM_spmv(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const Matrix& A = spmd::perf::poisson(dim, state.range(1));
  triad_gbs();
  auto x = spmd::full<double>(A.col_distribution(), 1.0, "spmd::perf::sparse::x");
  auto y = A.make_vector("spmd::perf::sparse::y");
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { A.apply(x, y); });
  // Row sums of the Laplacian: 2 dim minus one per neighbour; over all rows that is
  // 2 dim N - (nnz - N) = (2 dim + 1) N - nnz.
  const double want = (2.0 * dim + 1.0) * static_cast<double>(A.rows()) - static_cast<double>(A.nnz());
  spmd::perf::check_all(state, spmd::sum(y) == want, "BM_spmv: wrong result");
  set_counters(state, A, timer);
}

void BM_spmv_overlap(benchmark::State& state) {
  const int dim = static_cast<int>(state.range(0));
  const Matrix& A = spmd::perf::poisson(dim, state.range(1));
  triad_gbs();
  auto x = spmd::full<double>(A.col_distribution(), 1.0, "spmd::perf::sparse::x");
  auto y = A.make_vector("spmd::perf::sparse::y");
  const double t_import = median_time(15, [&] {
    A.import_begin(x);
    A.import_end();
  });
  const double t_diag = median_time(15, [&] { A.spmv_diagonal(1.0, x, 0.0, y); });
  const double t_off = median_time(15, [&] { A.spmv_offdiagonal(1.0, y); });
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { A.apply(x, y); });
  const double want = (2.0 * dim + 1.0) * static_cast<double>(A.rows()) - static_cast<double>(A.nnz());
  spmd::perf::check_all(state, spmd::sum(y) == want, "BM_spmv_overlap: wrong result");
  const double t_full = timer.total() / static_cast<double>(state.iterations());
  set_counters(state, A, timer);
  state.counters["import_us"] = 1e6 * t_import;
  state.counters["diagonal_us"] = 1e6 * t_diag;
  state.counters["offdiagonal_us"] = 1e6 * t_off;
  state.counters["full_us"] = 1e6 * t_full;
  // Nothing to hide where no rank sends anything (one rank).
  const int messages = spmd::perf::world().allreduce(A.import_plan().num_sends(), spmd::Op::sum);
  state.counters["overlap"] =
      messages > 0 ? std::clamp((t_import + t_diag + t_off - t_full) / t_import, 0.0, 1.0) : 0.0;
  state.counters["messages"] = messages;
}

const bool registered = [] {
  const std::pair<int, std::int64_t> sizes[] = {{2, 512}, {2, 1024}, {2, 2048}, {2, 4096}, {3, 64}, {3, 128}, {3, 256}};
  for (const auto& s : sizes) {
    benchmark::RegisterBenchmark("BM_spmv", BM_spmv)
        ->Args({s.first, s.second})
        ->ArgNames({"dim", "n"})
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    if (s.second == 2048 || s.second == 4096 || s.second == 128 || s.second == 256)
      benchmark::RegisterBenchmark("BM_spmv_overlap", BM_spmv_overlap)
          ->Args({s.first, s.second})
          ->ArgNames({"dim", "n"})
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
