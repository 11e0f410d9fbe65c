// apps/cg_solver: solve a sparse SPD system with CG or pipelined CG and report on rank 0.
//
//   mpirun -n N ./cg_solver --problem poisson2d|poisson3d|mm --n 2048 [--file A.mtx] --tol 1e-8
//                           --max-iters 5000 [--pipelined] [--precond none|jacobi]
//                           [--operator csr|matrix-free] [--monitor 50] [--json out.json]
//                           [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// Problems: poisson2d / poisson3d are the unscaled Dirichlet Laplacians on n^2 / n^3 unknowns
// (spmd::sparse::poisson2d/3d, or with --operator matrix-free the stencil operator
// spmd::solvers::Laplacian on a 2-D / 3-D array). The right side is b = A u* for a known
// solution u* (a deterministic pseudo-random field of the unknown's global index), so the error
// of x against u* is reported. --problem mm reads A from a Matrix Market file and takes
// b = A 1 (the known solution is the vector of ones).
//
// Reported on rank 0 (and in --json): the stop reason and iterations, the true relative residual
// ||b - A x|| / ||b||, the error against the known solution, the time per iteration and the
// effective bandwidth against the byte model (docs/api/solvers.md):
//   CSR SpMV 12 B per stored entry + 20 B per row; matrix-free stencil 16 B per row;
//   plus CG 96 B per row (pipelined CG 104), plus 16 (56) B per row with Jacobi.
// Exit status: 0 converged (and within --check-error), 2 no convergence, 1 error bound exceeded
// or an error.
//
// Checkpoints (builds with parallel HDF5) hold the solver's whole state between two iterations:
// x, the work vectors (r, p for CG; r, w, z, s, p, and u, m, q with Jacobi, for pipelined CG) and
// the reduced scalars; --restart continues from one exactly. The problem, operator, solver and
// preconditioner are taken from the file. A restarted run ends bitwise equal to an uninterrupted
// one at the same rank count, and equal to roundoff at another.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spmd.hpp>

#include "app_cli.hpp"
#include "checkpoint_options.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace sv = spmd::solvers;
using spmd::index_t;

struct Config {
  std::string problem = "poisson2d";
  std::string file;
  std::string op = "csr";
  std::string precond = "none";
  index_t n = 0;  // 0: 2048 for poisson2d, 128 for poisson3d
  double tol = 1e-8, atol = 0.0, check_error = -1.0;
  int max_iters = 5000, monitor = 0;
  bool pipelined = false;
  std::string json;
};

/// Known solution: a pseudo-random value in [-1, 1) of the unknown's row-major global index k
/// (splitmix64 of k), or 1 everywhere. Writes every owned point of an N-d array.
template <class Acc, int N>
struct KnownSolution {
  Acc a;
  Kokkos::Array<index_t, N> shape;
  bool ones;
  template <class... I>
  KOKKOS_INLINE_FUNCTION void operator()(I... g) const {
    const index_t idx[N] = {g...};
    std::uint64_t k = 0;
    for (int d = 0; d < N; ++d) k = k * static_cast<std::uint64_t>(shape[d]) + static_cast<std::uint64_t>(idx[d]);
    std::uint64_t z = k * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    a(g...) = ones ? 1.0 : static_cast<double>(z >> 11) * (1.0 / 4503599627370496.0) - 1.0;
  }
};
struct Minus {
  KOKKOS_INLINE_FUNCTION double operator()(double a, double b) const { return a - b; }
};

template <class T, int N, class M>
void fill_known(const spmd::Array<T, N, M>& a, bool ones) {
  KnownSolution<decltype(a.accessor()), N> f{a.accessor(), {}, ones};
  for (int d = 0; d < N; ++d) f.shape[d] = a.extent(d);
  spmd::for_each(a, f);
}

/// What the report needs besides the solve.
struct Problem {
  std::string name, op;
  index_t n = 0, rows = 0, nnz = 0;
  double op_bytes_per_row = 0;  // the operator's share of the byte model, per row
};

double solver_bytes_per_row(bool pipelined, bool jacobi) {
  if (pipelined) return jacobi ? 160.0 : 104.0;
  return jacobi ? 112.0 : 96.0;
}

#if SPMD_HAVE_HDF5
template <class V>
void save_state(const spmd::io::CheckpointSeries& series, const sv::SolverState<V>& st, const Problem& pb,
                const Config& cfg) {
  std::vector<spmd::io::Dataset> datasets;
  for (const auto& v : st.vectors) datasets.emplace_back(v.first, v.second);
  spmd::io::Attributes attrs{{"problem", pb.name},      {"operator", pb.op},
                             {"n", std::int64_t(pb.n)}, {"file", cfg.file},
                             {"solver", st.solver},     {"precond", std::string(sv::to_string(st.precond))}};
  for (const auto& s : st.scalars) attrs["state." + s.first] = s.second;
  series.save(st.iteration, datasets, attrs);
}

template <class Op>
sv::SolverState<typename Op::vector_type> load_state(const std::string& path, const spmd::io::FileInfo& info,
                                                     const Op& A) {
  using Opts = spmd::apps::CheckpointOptions;
  sv::SolverState<typename Op::vector_type> st;
  st.solver = Opts::string_attribute(info, "solver");
  st.precond = Opts::string_attribute(info, "precond") == "jacobi" ? sv::Precond::jacobi : sv::Precond::none;
  st.iteration = Opts::int_attribute(info, "step");
  for (const auto& d : info.datasets) {
    auto v = A.make_vector("spmd::cg_solver::restart::" + d.name);
    spmd::io::load_into(path, d.name, v);
    st.vectors.emplace_back(d.name, v);
  }
  for (const auto& a : info.attributes)
    if (a.first.rfind("state.", 0) == 0 && std::holds_alternative<double>(a.second))
      st.scalars.emplace_back(a.first.substr(6), std::get<double>(a.second));
  return st;
}
#endif

/// Solve with Solver on operator A, report, return the exit status. Collective.
template <class Solver, class Op>
int run(const Op& A, const Problem& pb, const Config& cfg, const spmd::apps::CheckpointOptions& ckpt,
        const std::string& restart_path, const spmd::Comm& comm) {
  using V = typename Op::vector_type;
  const bool mm = pb.name == "mm";
  V ustar = A.make_vector("spmd::cg_solver::ustar"), b = A.make_vector("spmd::cg_solver::b"),
    x = A.make_vector("spmd::cg_solver::x"), tmp = A.make_vector("spmd::cg_solver::tmp");
  fill_known(ustar, mm);
  A.apply(ustar, b);

  sv::SolverOptions o;
  o.rtol = cfg.tol;
  o.atol = cfg.atol;
  o.max_iters = cfg.max_iters;
  o.precond = cfg.precond == "jacobi" ? sv::Precond::jacobi : sv::Precond::none;
  o.monitor = cfg.monitor;
  Solver solver(A, o);
  const char* name = cfg.pipelined ? "pipelined_cg" : "cg";
  if (comm.rank() == 0)
    std::printf("cg_solver: %s, %lld unknowns, %lld entries, %s operator, %s, precond %s, %d ranks, backend %s\n",
                pb.name.c_str(), static_cast<long long>(pb.rows), static_cast<long long>(pb.nnz), pb.op.c_str(), name,
                cfg.precond.c_str(), comm.size(), spmd::Runtime::backend().c_str());

  bool done = false;
  int first = 0;
#if SPMD_HAVE_HDF5
  if (!restart_path.empty()) {
    const auto st = load_state(restart_path, spmd::io::inspect(restart_path, comm), A);
    first = static_cast<int>(st.iteration);
    if (comm.rank() == 0) std::printf("cg_solver: restarting from %s at iteration %d\n", restart_path.c_str(), first);
    done = solver.resume(b, x, st);
  } else {
    done = solver.setup(b, x);
  }
  const auto series = ckpt.series(comm);
#else
  (void)restart_path;
  done = solver.setup(b, x);
#endif
  Kokkos::fence();
  comm.barrier();
  const double t0 = MPI_Wtime();
  while (!done) {
    done = solver.step();
#if SPMD_HAVE_HDF5
    if (!done && ckpt.due(solver.iteration())) save_state(series, solver.state(), pb, cfg);
#else
    (void)ckpt;
#endif
  }
  Kokkos::fence();
  const double elapsed = comm.allreduce(MPI_Wtime() - t0, spmd::Op::max);
  const sv::SolveResult& res = solver.result();

  // True residual and error against the known solution.
  A.apply(x, tmp);
  spmd::transform(tmp, Minus{}, b, tmp);
  const double bnorm = spmd::norm2(b);
  const double true_rel = bnorm > 0 ? spmd::norm2(tmp) / bnorm : spmd::norm2(tmp);
  spmd::transform(tmp, Minus{}, x, ustar);
  const double err_inf = spmd::norm_inf(tmp), err_rel = spmd::norm2(tmp) / spmd::norm2(ustar);
  const std::int64_t state_crc32 = spmd::apps::state_crc32(x);
  const double x_sum = spmd::sum(x);
  const int run_iters = res.iterations - first;
  const double per_iter = run_iters > 0 ? elapsed / run_iters : 0.0;
  const double bytes =
      pb.op_bytes_per_row * static_cast<double>(pb.rows) + (pb.op == "csr" ? 12.0 * static_cast<double>(pb.nnz) : 0.0) +
      solver_bytes_per_row(cfg.pipelined, o.precond == sv::Precond::jacobi) * static_cast<double>(pb.rows);
  const double gbs = per_iter > 0 ? bytes / per_iter * 1e-9 : 0.0;
  if (comm.rank() == 0) {
    std::printf(
        "cg_solver: %s after %d iterations: ||b - Ax||/||b|| %.3e, error vs known solution max %.3e "
        "(relative %.3e)\n",
        sv::to_string(res.reason), res.iterations, true_rel, err_inf, err_rel);
    std::printf(
        "cg_solver: %d iterations in %.4f s: %.4f ms/iteration, %.2f GB/s against the byte model "
        "(%.0f B/iteration)\n",
        run_iters, elapsed, 1e3 * per_iter, gbs, bytes);
    if (!cfg.json.empty()) {
      nlohmann::json j = {{"app", "cg_solver"},
                          {"problem", pb.name},
                          {"operator", pb.op},
                          {"n", pb.n},
                          {"rows", pb.rows},
                          {"nnz", pb.nnz},
                          {"ranks", comm.size()},
                          {"solver", name},
                          {"precond", cfg.precond},
                          {"tol", cfg.tol},
                          {"max_iters", cfg.max_iters},
                          {"converged", res.converged},
                          {"reason", sv::to_string(res.reason)},
                          {"iterations", res.iterations},
                          {"first_iteration", first},
                          {"residual", res.residual},
                          {"true_relative_residual", true_rel},
                          {"error_max", err_inf},
                          {"error_relative", err_rel},
                          {"seconds", elapsed},
                          {"seconds_per_iteration", per_iter},
                          {"bytes_per_iteration", bytes},
                          {"gb_per_second", gbs},
                          {"state_crc32", state_crc32},
                          {"x_sum", x_sum}};
      std::ofstream(cfg.json) << j.dump(2) << "\n";
    }
  }
  if (!res.converged) return 2;
  if (cfg.check_error >= 0 && !(err_inf <= cfg.check_error)) {
    if (comm.rank() == 0)
      std::fprintf(stderr, "cg_solver: error %.3e exceeds --check-error %.3e\n", err_inf, cfg.check_error);
    return 1;
  }
  return 0;
}

template <class Op>
int run_with(const Op& A, const Problem& pb, const Config& cfg, const spmd::apps::CheckpointOptions& ckpt,
             const std::string& restart_path, const spmd::Comm& comm) {
  if (cfg.pipelined) return run<sv::PipelinedCG<Op>>(A, pb, cfg, ckpt, restart_path, comm);
  return run<sv::CG<Op>>(A, pb, cfg, ckpt, restart_path, comm);
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm comm = rt.world();

  CLI::App cli{"CG / pipelined CG on a distributed sparse SPD system (spmd::solvers)"};
  Config cfg;
  cli.add_option("--problem", cfg.problem, "poisson2d, poisson3d or mm (Matrix Market, --file)")
      ->check(CLI::IsMember({"poisson2d", "poisson3d", "mm"}));
  cli.add_option("--n", cfg.n, "grid points per axis (default 2048 in 2-D, 128 in 3-D)")
      ->check(CLI::Range(index_t(1), index_t(1) << 30));
  cli.add_option("--file", cfg.file, "Matrix Market file (--problem mm)");
  cli.add_option("--operator", cfg.op, "csr (assembled CsrMatrix) or matrix-free (stencil on an N-d array)")
      ->check(CLI::IsMember({"csr", "matrix-free"}));
  cli.add_option("--tol", cfg.tol, "relative tolerance: stop when ||r|| <= tol ||b||")->check(CLI::NonNegativeNumber);
  cli.add_option("--atol", cfg.atol, "absolute tolerance: or when ||r|| <= atol")->check(CLI::NonNegativeNumber);
  cli.add_option("--max-iters", cfg.max_iters, "iteration limit")->check(CLI::NonNegativeNumber);
  cli.add_flag("--pipelined", cfg.pipelined, "pipelined CG (one nonblocking all-reduce per iteration)");
  cli.add_option("--precond", cfg.precond, "none or jacobi")->check(CLI::IsMember({"none", "jacobi"}));
  cli.add_option("--monitor", cfg.monitor, "print the residual every K iterations (0: never)")
      ->check(CLI::NonNegativeNumber);
  cli.add_option("--json", cfg.json, "write the results to this JSON file (rank 0)");
  cli.add_option("--check-error", cfg.check_error, "exit non-zero if the max error vs the known solution exceeds this");
  spmd::apps::CheckpointOptions ckpt("cg_solver");
  ckpt.add_to(cli);
  if (const int code = spmd::apps::parse(cli, comm, argc, argv); code >= 0) return code;

  ckpt.require_hdf5("cg_solver");
  std::string restart_path;
#if SPMD_HAVE_HDF5
  if (ckpt.restarting()) {
    using Opts = spmd::apps::CheckpointOptions;
    restart_path = ckpt.restart_file(comm);
    const spmd::io::FileInfo info = spmd::io::inspect(restart_path, comm);
    cfg.problem = Opts::string_attribute(info, "problem");
    cfg.op = Opts::string_attribute(info, "operator");
    cfg.n = Opts::int_attribute(info, "n");
    cfg.file = Opts::string_attribute(info, "file");
    cfg.pipelined = Opts::string_attribute(info, "solver") == "pipelined_cg";
    cfg.precond = Opts::string_attribute(info, "precond");
  }
#endif
  if (cfg.problem == "mm" && cfg.file.empty()) throw spmd::Error("cg_solver: --problem mm needs --file", true);
  if (cfg.problem == "mm" && cfg.op != "csr")
    throw spmd::Error("cg_solver: --problem mm needs --operator csr (the matrix-free operator is the Laplacian)", true);
  if (cfg.n == 0) cfg.n = cfg.problem == "poisson3d" ? 128 : 2048;

  Problem pb{cfg.problem, cfg.op, cfg.problem == "mm" ? 0 : cfg.n, 0, 0, 0.0};
  const index_t n = cfg.n;
  if (cfg.op == "matrix-free") {
    pb.op_bytes_per_row = 16.0;  // read x, write y
    if (cfg.problem == "poisson2d") {
      const sv::Laplacian<double, 2> L(comm, spmd::Index<2>{n, n});
      pb.rows = L.rows();
      pb.nnz = 5 * n * n - 4 * n;
      return run_with(L, pb, cfg, ckpt, restart_path, comm);
    }
    const sv::Laplacian<double, 3> L(comm, spmd::Index<3>{n, n, n});
    pb.rows = L.rows();
    pb.nnz = 7 * n * n * n - 6 * n * n;
    return run_with(L, pb, cfg, ckpt, restart_path, comm);
  }
  pb.op_bytes_per_row = 20.0;  // CSR: 12 B per entry (value, column) + 20 B per row (offset, x, y)
  const auto A = cfg.problem == "poisson2d"   ? spmd::sparse::poisson2d<double>(comm, n, n)
                 : cfg.problem == "poisson3d" ? spmd::sparse::poisson3d<double>(comm, n, n, n)
                                              : spmd::sparse::read_matrix_market<double>(comm, cfg.file);
  pb.rows = A.rows();
  pb.nnz = A.nnz();
  return run_with(A, pb, cfg, ckpt, restart_path, comm);
}
