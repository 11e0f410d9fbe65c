// One iteration of spmd::solvers CG and pipelined CG on the Poisson model problems, read against
// a triad roofline measured in the same run (spmd::perf::triad_gbs: a = b + s c over 2^25
// doubles, all ranks at once):
//   BM_cg            CG<CsrMatrix>::step() for poisson2d 512^2 .. 4096^2, poisson3d 64^3 .. 256^3
//   BM_pipelined_cg  PipelinedCG<CsrMatrix>::step(), same sizes
//   BM_cg_stencil, BM_pipelined_cg_stencil
//                    the same with the matrix-free solvers::Laplacian on a 2-D / 3-D array
// Byte model per iteration (N rows, nnz entries, doubles):
//   operator  CSR SpMV 12 B per entry + 20 B per row; stencil 16 B per row (read x, write y)
//   CG        + 96 B per row: the textbook iteration's vector traffic (p.q 16, x += a p 24,
//             r -= a q 24, r.r 8, p = r + b p 24). The fused implementation moves 80.
//   pipelined + 104 B per row: its one fused pass reads n, z, s, p, x, r, w and writes z, s, p,
//             x, r, w (13 streams of 8 B).
//   BM_laplacian_apply  the stencil operator alone, y = A x (16 B per row), with the halo
//             exchange overlapped with the interior (exchange:0) or blocking (exchange:1)
// GB/s = model bytes / time of the slowest rank; triad_fraction = GB/s / triad GB/s.
// The solve runs with rtol = 0 (it never stops by itself); a solver that stops anyway (residual
// exactly zero) is set up again outside the timed region.
#include <Kokkos_Core.hpp>

#include <climits>
#include <cstdint>
#include <utility>

#include "bench_main.hpp"
#include "poisson_matrix.hpp"
#include "spmd/reduce.hpp"
#include "spmd/solvers.hpp"

namespace {

namespace sv = spmd::solvers;

/// Time Solver::step() on operator A with b = 1, x = 0. Collective.
template <class Solver, class Op>
void bench_steps(benchmark::State& state, const Op& A, double op_bytes, double vector_bytes_per_row) {
  spmd::perf::triad_gbs();
  auto b = A.make_vector("spmd::perf::cg::b");
  auto x = A.make_vector("spmd::perf::cg::x");
  b.fill(1.0);
  sv::SolverOptions o;
  o.rtol = 0.0;
  o.max_iters = INT_MAX;
  Solver solver(A, o);
  solver.setup(b, x);
  solver.step();  // first touch of every vector
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) {
    if (solver.done()) solver.setup(b, x);
    timer([&] { solver.step(); });
  }
  const sv::SolveResult& res = solver.result();
  spmd::perf::check_all(state, res.reason == sv::Reason::none || res.reason == sv::Reason::converged_rtol,
                        "bench_cg: the iteration broke down");
  const double rows = static_cast<double>(b.size());
  const double gbs = timer.rate(op_bytes + vector_bytes_per_row * rows);
  state.counters["GB/s"] = gbs;
  state.counters["triad_GB/s"] = spmd::perf::triad_gbs();
  state.counters["triad_fraction"] = gbs / spmd::perf::triad_gbs();
  state.counters["rows"] = rows;
  state.counters["ms_per_iteration"] = 1e3 * timer.total() / static_cast<double>(state.iterations());
}

/// The solvers' vector traffic per row and iteration (the byte models above).
template <template <class> class Solver>
struct VectorBytes;
template <>
struct VectorBytes<sv::CG> {
  static constexpr double value = 96.0;
};
template <>
struct VectorBytes<sv::PipelinedCG> {
  static constexpr double value = 104.0;
};

template <template <class> class Solver>
void BM_csr(benchmark::State& state) {
  const auto& A = spmd::perf::poisson(static_cast<int>(state.range(0)), state.range(1));
  const double spmv = 12.0 * static_cast<double>(A.nnz()) + 20.0 * static_cast<double>(A.rows());
  bench_steps<Solver<spmd::sparse::CsrMatrix<double>>>(state, A, spmv, VectorBytes<Solver>::value);
  state.counters["nnz"] = static_cast<double>(A.nnz());
}

template <template <class> class Solver, int N>
void bench_stencil(benchmark::State& state) {
  const spmd::index_t n = state.range(1);
  spmd::Index<N> shape;
  for (int d = 0; d < N; ++d) shape[d] = n;
  const sv::Laplacian<double, N> L(spmd::perf::world(), shape);
  bench_steps<Solver<sv::Laplacian<double, N>>>(state, L, 16.0 * static_cast<double>(L.rows()),
                                                VectorBytes<Solver>::value);
}
template <template <class> class Solver>
void BM_stencil(benchmark::State& state) {
  if (state.range(0) == 2)
    bench_stencil<Solver, 2>(state);
  else
    bench_stencil<Solver, 3>(state);
}

template <int N>
void bench_apply(benchmark::State& state) {
  spmd::Index<N> shape;
  for (int d = 0; d < N; ++d) shape[d] = state.range(1);
  const auto mode = state.range(2) == 0 ? sv::Exchange::overlapped : sv::Exchange::blocking;
  const sv::Laplacian<double, N> L(spmd::Distribution<N>(spmd::perf::world(), shape, spmd::halo(1)), mode);
  auto x = L.make_vector("spmd::perf::cg::x");
  auto y = L.make_vector("spmd::perf::cg::y");
  x.fill(1.0);
  L.apply(x, y);  // builds the halo plan, first touch
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { L.apply(x, y); });
  // Row sums: 2N minus one per neighbour inside the shape, i.e. 1 at each face point per face.
  double want = 0;
  for (int d = 0; d < N; ++d) want += 2.0 * static_cast<double>(L.rows() / shape[d]);
  spmd::perf::check_all(state, spmd::sum(y) == want, "BM_laplacian_apply: wrong result");
  const double gbs = timer.rate(16.0 * static_cast<double>(L.rows()));
  state.counters["GB/s"] = gbs;
  state.counters["triad_fraction"] = gbs / spmd::perf::triad_gbs();
}
void BM_laplacian_apply(benchmark::State& state) {
  if (state.range(0) == 2)
    bench_apply<2>(state);
  else
    bench_apply<3>(state);
}

const bool registered = [] {
  const std::pair<int, std::int64_t> sizes[] = {{2, 512}, {2, 1024}, {2, 2048}, {2, 4096}, {3, 64}, {3, 128}, {3, 256}};
  for (const auto& s : sizes) {
    for (auto* b : {benchmark::RegisterBenchmark("BM_cg", BM_csr<sv::CG>),
                    benchmark::RegisterBenchmark("BM_pipelined_cg", BM_csr<sv::PipelinedCG>),
                    benchmark::RegisterBenchmark("BM_cg_stencil", BM_stencil<sv::CG>),
                    benchmark::RegisterBenchmark("BM_pipelined_cg_stencil", BM_stencil<sv::PipelinedCG>)})
      b->Args({s.first, s.second})->ArgNames({"dim", "n"})->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  for (const auto& s : {std::pair<int, std::int64_t>{2, 1024}, {2, 4096}, {3, 128}, {3, 256}})
    for (int mode : {0, 1})
      benchmark::RegisterBenchmark("BM_laplacian_apply", BM_laplacian_apply)
          ->Args({s.first, s.second, mode})
          ->ArgNames({"dim", "n", "exchange"})
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace
