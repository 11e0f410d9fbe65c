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
//                    import alone (import_begin + import_end: import_us), the diagonal-block SpMV
//                    alone, the off-diagonal-block SpMV alone; the import's exposed part in an
//                    overlapped product (time in import_begin plus the wait left in import_end
//                    after the diagonal block, on the rank that reaches import_end last, i.e. on
//                    the critical path: import_exposed_us); the benchmark's own time is the
//                    full spmv. overlap = 1 - exposed / import, clamped to [0, 1]: the fraction of
//                    the import hidden behind the diagonal block (0 at one rank, where there is
//                    nothing to import). It is measured on the import itself, because the import
//                    (microseconds) is far below the run-to-run noise of the products
//                    (milliseconds): a difference of total times could not resolve it.
//                    moved_GB/s counts what the kernels move instead, with each rank's diagonal
//                    block in its stored format (SELL: 12 B per slot, padding included, 16 B per
//                    row, 4 B per chunk); padding = padding slots / nnz; sell = 1 where every
//                    rank stores its diagonal block in SELL form.
//   BM_spmv_local    the diagonal block's product alone on its CSR form by KokkosSparse::spmv
//                    (kernel:0; with Kokkos Kernels >= 4.3 its default algorithm, which is the
//                    vendor library where Kokkos Kernels was built with it: cuSPARSE on CUDA),
//                    by KokkosSparse::spmv with a static schedule (kernel:1), by a plain scalar
//                    CSR loop (kernel:2), the matrix's own product (spmv_diagonal: SELL chunks
//                    per work item on host spaces, a row per thread in chunks of 32 rows on
//                    devices, kernel:3), and with Kokkos Kernels >= 4.3 its native kernel with
//                    the default schedule (SPMV_NATIVE, kernel:4) and the merge-path algorithm
//                    (SPMV_MERGE_PATH, kernel:5), at the two largest sizes: every SpMV we could
//                    run, compared within one run.
// The matrix of the last size is kept between Google Benchmark's calls of one benchmark
// (poisson_matrix.hpp).
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "bench_main.hpp"
#include "poisson_matrix.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/reduce.hpp"
#include "spmd/sparse.hpp"

namespace {

using Matrix = spmd::sparse::CsrMatrix<double>;

using spmd::perf::median_time;
using spmd::perf::poisson;
using spmd::perf::triad_gbs;

double spmv_bytes(const Matrix& A) {
  return 12.0 * static_cast<double>(A.nnz()) + 20.0 * static_cast<double>(A.rows());
}

/// Over all ranks: the bytes the diagonal blocks' products move in their stored format (CSR: the
/// byte model; SELL: 12 B per slot, padding included, 16 B per row (x, y) and 4 B per chunk
/// offset), the same by the CSR byte model, and the padding slots. Collective.
std::array<double, 3> diagonal_bytes(const Matrix& A) {
  const spmd::sparse::BlockStorage& s = A.diagonal_storage();
  const auto d = [](spmd::index_t v) { return static_cast<double>(v); };
  std::array<double, 3> b{
      s.sliced ? 12.0 * d(s.slots) + 16.0 * d(s.rows) + 4.0 * d(s.chunks + 1) : 12.0 * d(s.entries) + 20.0 * d(s.rows),
      12.0 * d(s.entries) + 20.0 * d(s.rows), d(s.slots - s.entries)};
  spmd::perf::world().allreduce(b.data(), 3, spmd::Op::sum);
  return b;
}

void set_counters(benchmark::State& state, const Matrix& A, const spmd::perf::ManualTimer& timer) {
  const double gbs = timer.rate(spmv_bytes(A));
  state.counters["GB/s"] = gbs;
  // What the kernels move: the byte model with the diagonal blocks counted in their format.
  const auto diag = diagonal_bytes(A);
  state.counters["moved_GB/s"] = timer.rate(spmv_bytes(A) - diag[1] + diag[0]);
  state.counters["padding"] = diag[2] / static_cast<double>(A.nnz());
  state.counters["sell"] = spmd::perf::world().allreduce(A.diagonal_storage().sliced ? 1 : 0, spmd::Op::min);
  state.counters["triad_GB/s"] = triad_gbs();
  state.counters["triad_fraction"] = gbs / triad_gbs();
  state.counters["rows"] = static_cast<double>(A.rows());
  state.counters["nnz"] = static_cast<double>(A.nnz());
  state.counters["ghosts_per_rank"] =
      static_cast<double>(spmd::perf::world().allreduce(A.import_plan().num_ghosts(), spmd::Op::max));
}

/// What both SpMV benchmarks share: the matrix, x = 1 and y; run() times y = A x, checks the
/// result and sets the common counters.
struct SpmvRun {
  int dim;
  const Matrix& A;
  Matrix::vector_type x, y;
  explicit SpmvRun(benchmark::State& state)
      : dim(static_cast<int>(state.range(0))),
        A(poisson(dim, state.range(1))),
        x(spmd::full<double>(A.col_distribution(), 1.0, spmd::label("spmd::perf::sparse::x"))),
        y(A.make_vector("spmd::perf::sparse::y")) {
    triad_gbs();
  }
  /// Times A x over the benchmark's iterations; returns the mean time of one. Collective.
  double run(benchmark::State& state, const char* name) {
    spmd::perf::ManualTimer timer(state);
    for (auto _ : state) timer([&] { A.apply(x, y); });
    // Row sums of the Laplacian: 2 dim minus one per neighbour; over all rows that is
    // 2 dim N - (nnz - N) = (2 dim + 1) N - nnz (exact in doubles).
    const double want = (2.0 * dim + 1.0) * static_cast<double>(A.rows()) - static_cast<double>(A.nnz());
    spmd::perf::check_all(state, spmd::sum(y) == want, name);
    set_counters(state, A, timer);
    return timer.total() / static_cast<double>(state.iterations());
  }
};

void BM_spmv(benchmark::State& state) {
  SpmvRun(state).run(state, "BM_spmv: wrong result");
}

void BM_spmv_overlap(benchmark::State& state) {
  SpmvRun r(state);
  const Matrix& A = r.A;
  const double t_import = median_time(15, [&] {
    A.import_begin(r.x);
    A.import_end();
  });
  const double t_diag = median_time(15, [&] { A.spmv_diagonal(1.0, r.x, 0.0, r.y); });
  const double t_off = median_time(15, [&] { A.spmv_offdiagonal(1.0, r.y); });
  // The import's exposed part inside an overlapped product, on the critical path: on the rank
  // that reaches import_end last (the others may wait there for it, which is load imbalance,
  // not import), the time spent in import_begin plus the wait left in import_end (median of 15).
  std::vector<double> exposed;
  for (int k = 0; k < 15; ++k) {
    spmd::perf::fence("spmd::perf::sparse::overlap before barrier");
    spmd::perf::world().barrier();
    const double t0 = MPI_Wtime();
    A.import_begin(r.x);
    const double t1 = MPI_Wtime();
    A.spmv_diagonal(1.0, r.x, 0.0, r.y);
    spmd::perf::fence("spmd::perf::sparse::overlap after diagonal");
    const double t2 = MPI_Wtime();
    A.import_end();
    spmd::perf::fence("spmd::perf::sparse::overlap after import");
    const double t3 = MPI_Wtime();
    A.spmv_offdiagonal(1.0, r.y);
    const double mine[2] = {t2 - t0, (t1 - t0) + (t3 - t2)};
    const std::vector<double> all = spmd::perf::world().allgather(mine, 2);
    std::size_t last = 0;
    for (std::size_t q = 1; q < all.size() / 2; ++q)
      if (all[2 * q] > all[2 * last]) last = q;
    exposed.push_back(all[2 * last + 1]);
  }
  std::sort(exposed.begin(), exposed.end());
  const double t_exposed = exposed[exposed.size() / 2];
  const double t_full = r.run(state, "BM_spmv_overlap: wrong result");
  state.counters["import_us"] = 1e6 * t_import;
  state.counters["import_exposed_us"] = 1e6 * t_exposed;
  state.counters["diagonal_us"] = 1e6 * t_diag;
  state.counters["offdiagonal_us"] = 1e6 * t_off;
  state.counters["full_us"] = 1e6 * t_full;
  // Nothing to hide where no rank sends anything (one rank).
  const int messages = spmd::perf::world().allreduce(A.import_plan().num_sends(), spmd::Op::sum);
  state.counters["overlap"] = messages > 0 ? std::clamp(1.0 - t_exposed / t_import, 0.0, 1.0) : 0.0;
  state.counters["messages"] = messages;
}

/// The plain scalar CSR loop (one row per iteration, int indices): the reference a kernel
/// library's CSR SpMV is read against.
struct CsrLoop {
  Matrix::local_matrix_type::row_map_type rows;
  Matrix::local_matrix_type::index_type cols;
  Matrix::local_matrix_type::values_type vals;
  Kokkos::View<const double*, Kokkos::LayoutLeft, Matrix::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> x;
  Kokkos::View<double*, Kokkos::LayoutLeft, Matrix::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> y;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    double s = 0;
    for (int k = rows(i); k < rows(i + 1); ++k) s += vals(k) * x(cols(k));
    y(i) = s;
  }
};

/// The diagonal block's local product alone, on its CSR form (diagonal_block(): a CSR copy
/// where the matrix stores it in SELL form) or the matrix's own: variant 0: KokkosSparse::spmv
/// (where SELL falls back; the vendor library where Kokkos Kernels >= 4.3 has it); 1:
/// KokkosSparse::spmv with a static schedule (the native default switches to a dynamic
/// schedule above 10M entries); 2: the plain CsrLoop; 3: CsrMatrix::spmv_diagonal (the SELL
/// kernels); 4 and 5 (Kokkos Kernels >= 4.3): the SPMV_NATIVE and SPMV_MERGE_PATH algorithms.
/// GB/s: the byte model over the diagonal blocks of all ranks; moved_GB/s: the bytes of the
/// format the variant reads (SELL padding included).
void BM_spmv_local(benchmark::State& state) {
  SpmvRun r(state);
  const int variant = static_cast<int>(state.range(2));
  const auto D = variant == 3 ? Matrix::local_matrix_type() : r.A.diagonal_block();  // 3: the SELL kernels
  const auto xv = spmd::impl::vec(r.x);
  const auto yv = spmd::impl::vec(r.y);
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40300
  // Kokkos Kernels 4.3 moved the schedule choice into the SPMV handle (Controls are deprecated).
  using Handle = KokkosSparse::SPMVHandle<Kokkos::DefaultExecutionSpace, std::decay_t<decltype(D)>,
                                          std::decay_t<decltype(xv)>, std::decay_t<decltype(yv)>>;
  Handle handle(KokkosSparse::SPMV_NATIVE);
  handle.force_static_schedule = true;
  auto spmv_static = [&] { KokkosSparse::spmv(&handle, "N", 1.0, D, xv, 0.0, yv); };
  Handle native(KokkosSparse::SPMV_NATIVE), merge(KokkosSparse::SPMV_MERGE_PATH);
  auto spmv_algorithm = [&](const int v) { KokkosSparse::spmv(v == 4 ? &native : &merge, "N", 1.0, D, xv, 0.0, yv); };
#else
  auto spmv_algorithm = [&](int) { KokkosSparse::spmv("N", 1.0, D, xv, 0.0, yv); };  // not registered
  KokkosKernels::Experimental::Controls controls;
  controls.setParameter("schedule", "static");
  auto spmv_static = [&] { KokkosSparse::spmv(controls, "N", 1.0, D, xv, 0.0, yv); };
#endif
  const CsrLoop loop{D.graph.row_map, D.graph.entries, D.values, xv, yv};
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state)
    timer([&] {
      if (variant == 0)
        KokkosSparse::spmv("N", 1.0, D, xv, 0.0, yv);
      else if (variant == 1)
        spmv_static();
      else if (variant == 2)
        Kokkos::parallel_for("spmd::perf::sparse::csr_loop", Kokkos::RangePolicy<>(0, D.numRows()), loop);
      else if (variant == 3)
        r.A.spmv_diagonal(1.0, r.x, 0.0, r.y);
      else
        spmv_algorithm(variant);
    });
  const auto bytes = diagonal_bytes(r.A);
  const double gbs = timer.rate(bytes[1]);
  state.counters["GB/s"] = gbs;
  state.counters["moved_GB/s"] = timer.rate(variant == 3 ? bytes[0] : bytes[1]);
  state.counters["triad_fraction"] = gbs / triad_gbs();
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
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40300
  const int variants = 6;
#else
  const int variants = 4;
#endif
  for (const auto& s : {std::pair<int, std::int64_t>{2, 4096}, {3, 256}})
    for (int variant = 0; variant < variants; ++variant)
      benchmark::RegisterBenchmark("BM_spmv_local", BM_spmv_local)
          ->Args({s.first, s.second, variant})
          ->ArgNames({"dim", "n", "kernel"})
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
