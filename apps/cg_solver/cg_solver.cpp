// apps/cg_solver: solve a distributed sparse linear system with a Krylov method (CG, pipelined
// CG, GMRES(m), flexible GMRES, BiCGStab) and a preconditioner, and report on rank 0.
//
//   mpirun -n N ./cg_solver --problem poisson2d|poisson3d|convdiff2d|mm [--n 2048] [--file A.mtx]
//                           [--method cg|pipelined|gmres|fgmres|bicgstab] [--precond none|jacobi|
//                           chebyshev|ilu|mg] [--gmres-restart 30] [--peclet 100] [--tol 1e-8]
//                           [--atol 0] [--max-iters 5000] [--pipelined] [--operator csr|matrix-free]
//                           [--monitor 100] [--check-error E] [--json FILE] [--quiet] [--resources]
//                           [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//                           [--no-symmetry-check] [--symmetry-rtol 1e-12] [--replace-every 50]
//                           [--reproducible]
//
// Problems: poisson2d / poisson3d are the unscaled Dirichlet Laplacians on n^2 / n^3 unknowns
// (--n is the number of unknowns per axis, as in every app: docs/apps.md; spmd::sparse::
// poisson2d/3d, or with --operator matrix-free the stencil operator spmd::solvers::Laplacian on a
// 2-D / 3-D array). convdiff2d is the nonsymmetric upwind convection-diffusion operator
// spmd::sparse::convection_diffusion2d with Peclet number --peclet (CSR only). The right side is
// b = A u* for a known solution u* (a deterministic pseudo-random field of the unknown's global
// index), so the error of x against u* is reported. --problem mm reads A from a Matrix Market file
// and takes b = A 1 (the known solution is the vector of ones).
//
// Methods (docs/api/solvers.md): cg and pipelined (= --pipelined) need a symmetric matrix; gmres
// (restarted every --gmres-restart iterations), fgmres and bicgstab take any. Preconditioners:
// jacobi; chebyshev (degree 4, its interval estimated by 10 Lanczos steps, or power steps for a
// nonsymmetric problem); ilu (block Jacobi ILU(0) of each rank's diagonal block, --operator csr,
// not with CG); mg (geometric multigrid V(2,2)-cycles with Chebyshev smoothing, --operator
// matrix-free poisson2d/3d).
//
// Before solving with cg or pipelined, a CSR matrix is checked for symmetry
// (spmd::sparse::require_symmetric: the largest |a_ij - a_ji| must be at most --symmetry-rtol
// times max |a_ij|); a nonsymmetric one is an error (exit 1) naming the largest asymmetry and
// where, and --method gmres. --no-symmetry-check skips it. The solver decides convergence on the
// true residual ||b - A x||: when the recursive residual meets the tolerance and the true one does
// not, the reason is residual_mismatch (exit 2). b = 0 gives x = 0 with reason zero_rhs (exit 0).
//
// Reported on rank 0 (and in --json): a progress line every --monitor K iterations (the relative
// residual, elapsed time, rate and an ETA from the convergence rate so far), then the stop
// reason and iterations, the true relative residual ||b - A x|| / ||b||, the error against the
// known solution, the time per iteration (and the setup time of the preconditioner) and the
// effective bandwidth against the byte model (docs/api/solvers.md):
//   CSR SpMV 12 B per stored entry + 20 B per row; matrix-free stencil 16 B per row;
//   plus CG 96 B per row (pipelined CG 104, BiCGStab 168 and twice the operator, GMRES(m) and
//   FGMRES(m) 8 (m - 1) + 56: the two delayed-CGS2 sweeps of an average iteration and the cycle's
//   last second pass), plus 16 (CG),
//   56 (pipelined CG), 48 (BiCGStab) or 24 (GMRES) B per row with Jacobi. The other
//   preconditioners are not in the byte model.
// Exit status (docs/apps.md#exit-status): 0 converged (and within --check-error); 2 no
// convergence (residual_mismatch included); 3 the error bound exceeded or non-finite results;
// 1 an error (a nonsymmetric matrix for CG included); 64 bad arguments.
//
// Checkpoints (builds with parallel HDF5) hold the solver's whole state between two iterations:
// x, the work vectors (r, p for CG; r, w, z, s, p, and u, m, q with a preconditioner, for
// pipelined CG; the Krylov basis v0 .. vj (and z0 .. for FGMRES) for GMRES; x, r, r_hat, p, v for
// BiCGStab) and the reduced scalars, with the problem record: the problem, operator, n, the
// matrix file's absolute path, the method, preconditioner and tolerances, and what the matrix is
// (rows, nnz and a checksum of its entries, apps/common/matrix_fingerprint.hpp). --restart
// continues from one exactly; options not given are taken from the checkpoint, and options or a
// matrix that differ from it are an error naming the field. A restarted run ends bitwise equal to
// an uninterrupted one at the same rank count, and equal to roundoff at another.
#include <spmd.hpp>

#include "app.hpp"
#include "checkpoint_options.hpp"
#include "matrix_fingerprint.hpp"
#include "report.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace sv = spmd::solvers;
using spmd::index_t;

struct Config {
  std::string problem = "poisson2d";
  std::string file;
  std::string op = "csr";
  std::string method = "cg";
  std::string precond = "none";
  index_t n = 0;  // 0: 2048 for poisson2d and convdiff2d, 128 for poisson3d
  double tol = 1e-8, atol = 0.0, check_error = -1.0, symmetry_rtol = 1e-12, peclet = 100.0;
  int max_iters = 5000, monitor = 0, restart = 30;
  bool pipelined = false, no_symmetry_check = false, reproducible = false, history = false;
  int replace_every = 50;
  /// The method's name in the report and the library: cg, pipelined_cg, gmres, fgmres, bicgstab.
  std::string solver() const { return method == "pipelined" ? "pipelined_cg" : method; }
  bool symmetric_method() const { return method == "cg" || method == "pipelined"; }
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
  std::string checksum;         // of the CSR matrix's entries ("" matrix-free)
  double op_bytes_per_row = 0;  // the operator's share of the byte model, per row
};

/// The solver's vector traffic per row and iteration (doubles; see the file comment), and how
/// many operator applications an iteration makes.
double solver_bytes_per_row(const Config& cfg, bool jacobi) {
  if (cfg.method == "pipelined") return jacobi ? 160.0 : 104.0;
  if (cfg.method == "bicgstab") return jacobi ? 216.0 : 168.0;
  if (cfg.method == "gmres" || cfg.method == "fgmres") return 8.0 * (cfg.restart - 1) + 56.0 + (jacobi ? 24.0 : 0.0);
  return jacobi ? 112.0 : 96.0;
}
int operator_applications(const Config& cfg) {
  return cfg.method == "bicgstab" ? 2 : 1;
}

#if SPMD_HAVE_HDF5
template <class V>
void save_state(const spmd::apps::CheckpointOptions& ckpt, const spmd::apps::Start& start, const sv::SolverState<V>& st,
                const spmd::apps::ProblemRecord& record) {
  std::vector<spmd::io::Dataset> datasets;
  for (const auto& v : st.vectors) datasets.emplace_back(v.first, v.second);
  spmd::io::Attributes attrs{{"solver", st.solver}, {"precond", std::string(sv::to_string(st.precond))}};
  for (const auto& s : st.scalars) attrs["state." + s.first] = s.second;
  ckpt.save(start, st.iteration, datasets, record, attrs);
}

/// The solver state of a checkpoint: its vectors, scalars and iteration. The state's solver and
/// preconditioner must be the run's (taken from the checkpoint's record, and checked there by the
/// options' validators), and its scalars finite: anything else is refused. Collective.
template <class Op>
sv::SolverState<typename Op::vector_type> load_state(const std::string& path, const spmd::io::FileInfo& info,
                                                     const Op& A, const Config& cfg) {
  sv::SolverState<typename Op::vector_type> st;
  const auto text = [&](const char* name) {
    const auto it = info.attributes.find(name);
    if (it == info.attributes.end() || !std::holds_alternative<std::string>(it->second))
      throw spmd::Error::replicated("restart: checkpoint '" + path + "' has no string attribute '" + name + "'");
    return std::get<std::string>(it->second);
  };
  st.solver = text("solver");
  const std::string solver = cfg.method == "pipelined" ? "pipelined_cg" : cfg.method, precond = text("precond");
  if (st.solver != solver || precond != cfg.precond)
    throw spmd::Error::replicated("restart: the checkpoint '" + spmd::io::impl::printable(path) +
                                  "' holds the state of solver " + spmd::apps::value_str(st.solver) +
                                  " with preconditioner " + spmd::apps::value_str(precond) + ", not of " + solver +
                                  " with " + cfg.precond + " as its record says");
  if (!sv::precond_from_string(precond, st.precond))
    throw spmd::Error::replicated("restart: the checkpoint '" + spmd::io::impl::printable(path) +
                                  "' names an unknown preconditioner " + spmd::apps::value_str(precond));
  st.iteration = spmd::apps::CheckpointOptions::int_attribute(info, "step");
  for (const auto& d : info.datasets) {
    auto v = A.make_vector("spmd::cg_solver::restart::" + d.name);
    spmd::io::load_into(path, d.name, v);
    st.vectors.emplace_back(d.name, std::move(v));
  }
  for (const auto& a : info.attributes)
    if (a.first.rfind("state.", 0) == 0 && std::holds_alternative<double>(a.second)) {
      const double v = std::get<double>(a.second);
      if (!std::isfinite(v))
        throw spmd::Error::replicated("restart: the checkpoint '" + spmd::io::impl::printable(path) + "' records " +
                                      a.first + " " + spmd::apps::readable(v) + ", not a finite number");
      st.scalars.emplace_back(a.first.substr(6), v);
    }
  return st;
}
#endif

/// The estimated iterations left: the convergence rate between the last two reports (CG's
/// rate changes as it goes; the first iterations drop fastest) extrapolated to rtol, capped by
/// max_iters; max_iters - it when the residual does not decrease; NaN (unknown) at the first
/// report.
struct Eta {
  int it0 = -1;
  double rel0 = 0;
  double remaining(int it, double rel, const Config& cfg) {
    const double cap = static_cast<double>(cfg.max_iters - it);
    const int prev_it = it0;
    const double prev_rel = rel0;
    it0 = it;
    rel0 = rel;
    if (prev_it < 0 || it <= prev_it || !(prev_rel > 0) || !(rel > 0)) return std::nan("");
    const double per_it = std::log(rel / prev_rel) / (it - prev_it);
    if (!(per_it < 0) || !(cfg.tol > 0)) return cap;
    return std::min(cap, std::max(0.0, std::log(cfg.tol / rel) / per_it));
  }
};

/// Solve with Solver on operator A preconditioned by M (or the fused Jacobi of --precond
/// jacobi), report, return the exit status. Collective.
template <class Solver, class Op>
int run(const Op& A, const sv::Preconditioner<typename Op::vector_type>& M, double setup_seconds, const Problem& pb,
        const Config& cfg, spmd::apps::App& app, const spmd::apps::CheckpointOptions& ckpt,
        const spmd::apps::Start& start, const spmd::apps::ProblemRecord& record, const spmd::Comm& comm) {
  using V = typename Op::vector_type;
  using spmd::apps::format;
  const bool mm = pb.name == "mm";
  V ustar = A.make_vector("spmd::cg_solver::ustar"), b = A.make_vector("spmd::cg_solver::b"),
    x = A.make_vector("spmd::cg_solver::x"), tmp = A.make_vector("spmd::cg_solver::tmp");
  fill_known(ustar, mm);
  A.apply(ustar, b);

  spmd::apps::Report report(app, comm);
  spmd::apps::Progress progress(app, comm, "iteration", start.step + 1, cfg.max_iters);
  Eta eta;
  sv::SolverOptions o;
  o.rtol = cfg.tol;
  o.atol = cfg.atol;
  o.max_iters = cfg.max_iters;
  o.precond = cfg.precond == "jacobi" ? sv::Precond::jacobi : sv::Precond::none;
  o.restart = cfg.restart;
  o.replace_every = cfg.replace_every;
  o.reproducible = cfg.reproducible;
  o.keep_history = cfg.history;
  o.monitor = app.monitor() > 0 ? app.monitor() : (app.resources() ? cfg.max_iters : 0);
  o.monitor_callback = [&](const sv::MonitorInfo& m) {
    progress.report(m.iteration, format("||r||/||b|| %.6e", m.relative_residual),
                    eta.remaining(m.iteration, m.relative_residual, cfg));
  };
  Solver solver(A, M, o);
  const std::string name = cfg.solver();
  const std::string precond = M ? M.describe() : cfg.precond;
  app.say(comm, format("cg_solver: %s, %lld unknowns, %lld entries, %s operator, %s, precond %s, %d ranks, backend %s",
                       pb.name.c_str(), static_cast<long long>(pb.rows), static_cast<long long>(pb.nnz), pb.op.c_str(),
                       name.c_str(), precond.c_str(), comm.size(), spmd::Runtime::backend().c_str()));
  if (M)
    app.say(comm, format("cg_solver: preconditioner set up in %s", spmd::apps::duration_str(setup_seconds).c_str()));

  bool done = false;
  progress.start();
#if SPMD_HAVE_HDF5
  if (start.restarting()) {
    const auto st = load_state(start.path, start.info, A, cfg);
    app.say(comm, format("cg_solver: restarted from %s at iteration %lld (run %s)", start.path.c_str(),
                         static_cast<long long>(st.iteration), start.run_id.c_str()));
    done = solver.resume(b, x, st);
  } else {
    done = solver.setup(b, x);
  }
#else
  done = solver.setup(b, x);
#endif
  Kokkos::fence();
  comm.barrier();
  const double t_iterations = progress.elapsed();  // the iterations are timed from here
  while (!done) {
    done = solver.step();
#if SPMD_HAVE_HDF5
    if (!done && ckpt.due(solver.iteration())) save_state(ckpt, start, solver.state(), record);
#else
    (void)ckpt;
    (void)record;
#endif
  }
  const sv::SolveResult& res = solver.result();
  const std::int64_t run_iters = res.iterations - start.step;
  const double bytes = operator_applications(cfg) * (pb.op_bytes_per_row * static_cast<double>(pb.rows) +
                                                     (pb.op == "csr" ? 12.0 * static_cast<double>(pb.nnz) : 0.0)) +
                       solver_bytes_per_row(cfg, o.precond == sv::Precond::jacobi) * static_cast<double>(pb.rows);
  Kokkos::fence();
  report.set_timings(progress, progress.elapsed() - t_iterations, std::max<std::int64_t>(run_iters, 0), bytes,
                     "B/s (byte model)", comm);
  report.j["timings"]["bytes_per_step"] = bytes;
  report.j["timings"]["setup_seconds"] = setup_seconds;

  // True residual and error against the known solution.
  A.apply(x, tmp);
  spmd::transform(tmp, Minus{}, b, tmp);
  const double bnorm = spmd::norm2(b);
  const double true_rel = bnorm > 0 ? spmd::norm2(tmp) / bnorm : spmd::norm2(tmp);
  spmd::transform(tmp, Minus{}, x, ustar);
  const double err_inf = spmd::norm_inf(tmp), err_rel = spmd::norm2(tmp) / spmd::norm2(ustar);
  const std::int64_t crc = spmd::apps::state_crc32(x);
  const double x_sum = spmd::sum(x);
  const bool finite = std::isfinite(true_rel) && std::isfinite(err_inf) && std::isfinite(x_sum);
  const double per_iter = report.j["timings"]["seconds_per_step"].get<double>();
  app.say(comm, format("cg_solver: %s after %d iterations: ||b - Ax||/||b|| %.3e, error vs known solution max %.3e "
                       "(relative %.3e)",
                       sv::to_string(res.reason), res.iterations, true_rel, err_inf, err_rel));
  app.say(comm, format("cg_solver: %lld iterations in %s: %.4f ms/iteration, %.2f GB/s against the byte model "
                       "(%.0f B/iteration)",
                       static_cast<long long>(run_iters), spmd::apps::duration_str(report.seconds()).c_str(),
                       1e3 * per_iter, per_iter > 0 ? bytes / per_iter * 1e-9 : 0.0, bytes));

  nlohmann::json shape = pb.name == "poisson2d" || pb.name == "convdiff2d" ? nlohmann::json{pb.n, pb.n}
                         : pb.name == "poisson3d"                          ? nlohmann::json{pb.n, pb.n, pb.n}
                                                                           : nlohmann::json{pb.rows};
  report.j["problem"] = {{"name", pb.name},
                         {"operator", pb.op},
                         {"n", pb.n},
                         {"shape", shape},
                         {"rows", pb.rows},
                         {"nnz", pb.nnz},
                         {"file", cfg.file},
                         {"matrix_checksum", pb.checksum},
                         {"solver", name},
                         {"precond", cfg.precond},
                         {"precond_detail", precond},
                         {"restart", cfg.restart},
                         {"peclet", pb.name == "convdiff2d" ? nlohmann::json(cfg.peclet) : nlohmann::json()},
                         {"rtol", cfg.tol},
                         {"atol", cfg.atol},
                         {"max_iters", cfg.max_iters}};
  report.j["distribution"] = A.make_vector().distribution().describe();
  report.j["run"] = spmd::apps::run_json(start.run_id, start.path, start.step + 1, res.iterations, "iteration");
  report.j["check"] = {{"converged", res.converged},
                       {"reason", sv::to_string(res.reason)},
                       {"detail", res.detail},
                       {"iterations", res.iterations},
                       {"residual", res.residual},
                       {"solver_true_residual", res.true_residual},
                       {"replacements", res.replacements},
                       {"true_relative_residual", true_rel},
                       {"error_max", err_inf},
                       {"error_relative", err_rel},
                       {"x_sum", x_sum},
                       {"state_crc32", {{"x", crc}}},
                       {"finite", finite}};
  if (cfg.history) {  // ||r|| / ||b|| of every iteration run (the solver's residual)
    std::vector<double> rel(res.history);
    for (double& v : rel) v = bnorm > 0 ? v / bnorm : v;
    report.j["check"]["history"] = rel;
  }
  if (res.reason == sv::Reason::zero_rhs) app.say(comm, "cg_solver: b = 0, so x = 0 is the solution (zero_rhs)");
  if (!res.converged) {
    const std::string why = format(
        "no convergence: %s after %d iterations (||r||/||b|| %s, ||b - A x||/||b|| %s, --tol %s, --max-iters %d)%s%s",
        sv::to_string(res.reason), res.iterations,
        spmd::apps::readable(bnorm > 0 ? res.residual / bnorm : res.residual).c_str(),
        spmd::apps::readable(bnorm > 0 ? res.true_residual / bnorm : res.true_residual).c_str(),
        spmd::apps::readable(cfg.tol).c_str(), cfg.max_iters, res.detail.empty() ? "" : ": ", res.detail.c_str());
    if (comm.rank() == 0) std::fprintf(stderr, "cg_solver: %s\n", why.c_str());
    return report.finish(comm, spmd::apps::exit_not_converged, "not_converged", why);
  }
  if (!finite) return spmd::apps::fail_check(app, comm, report, "the solution or its residual holds non-finite values");
  if (cfg.check_error >= 0 && !(err_inf <= cfg.check_error))
    return spmd::apps::fail_check(
        app, comm, report,
        format("the max error %.3e exceeds --check-error %s", err_inf, spmd::apps::readable(cfg.check_error).c_str()));
  return report.finish(comm, spmd::apps::exit_ok, "ok");
}

template <class Op>
struct is_laplacian : std::false_type {};
template <class T, int N, class M>
struct is_laplacian<sv::Laplacian<T, N, M>> : std::true_type {};
template <class Op>
struct is_csr : std::false_type {};
template <class T, class M>
struct is_csr<spmd::sparse::CsrMatrix<T, M>> : std::true_type {};

template <class S>
struct Tag {
  using type = S;
};

/// Build the preconditioner object of --precond (timed: its setup), then solve with the
/// --method's solver. `symmetric`: the matrix is known to be symmetric (chebyshev's eigenvalue
/// estimate: Lanczos, else the power method). Collective.
template <class Op>
int run_with(const Op& A, bool symmetric, const Problem& pb, const Config& cfg, spmd::apps::App& app,
             const spmd::apps::CheckpointOptions& ckpt, const spmd::apps::Start& start,
             const spmd::apps::ProblemRecord& record, const spmd::Comm& comm) {
  sv::Preconditioner<typename Op::vector_type> M;
  Kokkos::fence();
  comm.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  if (cfg.precond == "chebyshev") {
    sv::ChebyshevOptions co;
    co.symmetric = symmetric;
    M = sv::chebyshev(A, co);
  } else if (cfg.precond == "ilu") {
    if constexpr (is_csr<Op>::value) M = sv::block_ilu(A);
  } else if (cfg.precond == "mg") {
    if constexpr (is_laplacian<Op>::value) M = sv::multigrid(A);
  }
  Kokkos::fence();
  comm.barrier();
  const double setup = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto go = [&](auto tag) {
    using Solver = typename decltype(tag)::type;
    return run<Solver>(A, M, setup, pb, cfg, app, ckpt, start, record, comm);
  };
  if (cfg.method == "pipelined") return go(Tag<sv::PipelinedCG<Op>>{});
  if (cfg.method == "gmres") return go(Tag<sv::GMRES<Op>>{});
  if (cfg.method == "fgmres") return go(Tag<sv::FGMRES<Op>>{});
  if (cfg.method == "bicgstab") return go(Tag<sv::BiCGStab<Op>>{});
  return go(Tag<sv::CG<Op>>{});
}

}  // namespace

int main(int argc, char** argv) {
  spmd::apps::App app("cg_solver",
                      "Krylov solvers (CG, pipelined CG, GMRES, FGMRES, BiCGStab) and preconditioners on a distributed "
                      "sparse system (spmd::solvers)",
                      argc, argv);
  spmd::Runtime rt(app.argc(), app.argv());
  spmd::Comm comm = rt.world();
  using spmd::apps::at_least;
  using spmd::apps::format;

  CLI::App& cli = app.cli();
  Config cfg;
  cli.add_option(
         "--problem", cfg.problem,
         "poisson2d, poisson3d, convdiff2d (upwind convection-diffusion, --peclet) or mm (Matrix Market, --file)")
      ->check(spmd::apps::one_of({"poisson2d", "poisson3d", "convdiff2d", "mm"}));
  cli.add_option("--n", cfg.n, "unknowns per axis (0: 2048 in 2-D, 128 in 3-D)")
      ->check(spmd::apps::in_range(0, double(index_t(1) << 30)));
  cli.add_option("--file", cfg.file, "Matrix Market file (--problem mm)")->check(spmd::apps::non_empty());
  cli.add_option("--operator", cfg.op, "csr (assembled CsrMatrix) or matrix-free (stencil on an N-d array)")
      ->check(spmd::apps::one_of({"csr", "matrix-free"}));
  cli.add_option("--tol", cfg.tol, "relative tolerance: stop when ||r|| <= tol ||b||")->check(spmd::apps::fraction());
  cli.add_option("--atol", cfg.atol, "absolute tolerance: or when ||r|| <= atol")->check(at_least(0));
  cli.add_option("--max-iters", cfg.max_iters, "iteration limit, counted from the start of the run")
      ->check(spmd::apps::in_range(0, INT_MAX));
  auto* method = cli.add_option("--method", cfg.method,
                                "cg, pipelined (symmetric matrices), gmres, fgmres or bicgstab (any matrix)")
                     ->check(spmd::apps::one_of({"cg", "pipelined", "gmres", "fgmres", "bicgstab"}));
  cli.add_flag("--pipelined", cfg.pipelined,
               "pipelined CG (one nonblocking all-reduce per iteration): --method pipelined")
      ->excludes(method);
  cli.add_option("--precond", cfg.precond,
                 "none, jacobi, chebyshev (polynomial), ilu (block Jacobi ILU(0), --operator csr) or mg (geometric "
                 "multigrid, --operator matrix-free)")
      ->check(spmd::apps::one_of({"none", "jacobi", "chebyshev", "ilu", "mg"}));
  cli.add_option("--gmres-restart", cfg.restart, "gmres, fgmres: iterations between restarts (SciPy's restart)")
      ->check(spmd::apps::in_range(1, 10000));
  cli.add_option("--peclet", cfg.peclet, "convdiff2d: the Peclet number (velocity (1, 1)/sqrt(2), unit square)")
      ->check(spmd::apps::in_range(0, 1e12));
  cli.add_flag("--history", cfg.history, "report ||r||/||b|| of every iteration (check.history in --json)");
  cli.add_option("--check-error", cfg.check_error,
                 "exit with status 3 if the max error vs the known solution exceeds this (< 0: no check)")
      ->check(spmd::apps::finite());
  cli.add_flag("--no-symmetry-check", cfg.no_symmetry_check,
               "do not check that a CSR matrix is symmetric before solving (checked by default)");
  cli.add_option("--symmetry-rtol", cfg.symmetry_rtol,
                 "the symmetry check accepts |a_ij - a_ji| <= this times max |a_ij|")
      ->check(at_least(0));
  cli.add_option("--replace-every", cfg.replace_every,
                 "pipelined CG: residual replacement every this many iterations (0: only at a claimed convergence)")
      ->check(spmd::apps::in_range(0, INT_MAX));
  cli.add_flag("--reproducible", cfg.reproducible,
               "bitwise-reproducible dot products and norms (spmd::reproducible): with the matrix-free operator the "
               "iterations and x are the same bits at any rank count");
  app.add_monitor(100, "iterations");
  spmd::apps::CheckpointOptions ckpt("cg_solver");
  ckpt.add_to(cli);

  return app.run(comm, [&] {
    // The matrix file is recorded (and compared through its contents) by its absolute path.
    if (!cfg.file.empty()) cfg.file = std::filesystem::absolute(cfg.file).lexically_normal().string();
    spmd::apps::ProblemRecord record(app);
    record.option("--problem", cfg.problem);
    record.option("--operator", cfg.op);
    record.option("--n", cfg.n);
    record.option("--file", cfg.file, false);
    record.option("--tol", cfg.tol);
    record.option("--atol", cfg.atol);
    record.option("--pipelined", cfg.pipelined);
    record.option("--method", cfg.method);
    record.option("--precond", cfg.precond);
    record.option("--gmres-restart", cfg.restart);
    record.option("--peclet", cfg.peclet);
    record.option("--symmetry-rtol", cfg.symmetry_rtol);
    record.option("--no-symmetry-check", cfg.no_symmetry_check);
    record.option("--replace-every", cfg.replace_every);
    record.option("--reproducible", cfg.reproducible);
    const spmd::apps::Start start = ckpt.start(comm, app, record, "--max-iters", cfg.max_iters);

    // --pipelined and --method pipelined are one method (recorded alike in checkpoints).
    if (cfg.pipelined) cfg.method = "pipelined";
    cfg.pipelined = cfg.method == "pipelined";
    if (cfg.problem == "mm" && cfg.file.empty()) throw spmd::Error::replicated("--problem mm needs --file");
    if (cfg.problem == "convdiff2d" && cfg.op != "csr")
      throw spmd::Error::replicated(
          "--problem convdiff2d needs --operator csr (the matrix-free operator is the Laplacian)");
    if (cfg.precond == "ilu" && cfg.op != "csr")
      throw spmd::Error::replicated(
          "--precond ilu needs --operator csr (block Jacobi ILU factors the matrix's diagonal blocks)");
    if (cfg.precond == "mg" && (cfg.op != "matrix-free" || cfg.problem == "mm" || cfg.problem == "convdiff2d"))
      throw spmd::Error::replicated(
          "--precond mg needs --operator matrix-free and --problem poisson2d or poisson3d (geometric "
          "multigrid on the grid)");
    if (cfg.precond == "ilu" && cfg.symmetric_method())
      throw spmd::Error::replicated("--precond ilu is not symmetric, which --method " + cfg.method +
                                    " needs: use --method gmres, fgmres or bicgstab");
    if (cfg.problem == "mm" && cfg.op != "csr")
      throw spmd::Error::replicated("--problem mm needs --operator csr (the matrix-free operator is the Laplacian)");
    if (cfg.problem != "mm" && !cfg.file.empty())
      throw spmd::Error::replicated("--file is for --problem mm (this run solves " + cfg.problem + ")");
    if (cfg.n == 0) cfg.n = cfg.problem == "poisson3d" ? 128 : 2048;
    const bool convdiff = cfg.problem == "convdiff2d";

    Problem pb{cfg.problem, cfg.op, cfg.problem == "mm" ? 0 : cfg.n, 0, 0, "", 0.0};
    const index_t n = cfg.n;
    if (cfg.problem != "mm") {
      // Refuse a problem too large for the memory before building anything (and before n^3
      // overflows): the vectors (app, solver, preconditioner: 16 per row at most) and the CSR
      // matrix (a SELL copy of its diagonal block too: twice 12 B per entry + 8 B per row).
      const int dim = cfg.problem == "poisson3d" ? 3 : 2;
      const double rows = std::pow(static_cast<double>(n), dim);
      // app and solver vectors (GMRES: the basis; FGMRES also the preconditioned one; multigrid:
      // 5 padded arrays per level, 4/3 (2-D) or 8/7 (3-D) of the grid over all levels)
      double vectors = 16;
      if (cfg.method == "gmres") vectors += cfg.restart + 3;
      if (cfg.method == "fgmres") vectors += 2 * cfg.restart + 3;
      if (cfg.precond == "mg") vectors += 5.0 * (dim == 2 ? 4.0 / 3 : 8.0 / 7);
      const double per_row = vectors * 8.0 + (cfg.op == "csr" ? 2 * (12.0 * (2 * dim + 1) + 8) : 0.0);
      spmd::apps::require_memory(
          comm, rows / comm.size() * per_row,
          format("%s with n %lld (%.4g unknowns)", cfg.problem.c_str(), static_cast<long long>(n), rows));
    } else {
      // The file's declared size, before it is read: a square matrix, and memory for what reading
      // and solving it takes (the same check as for the generated problems): per row the vectors
      // and row pointers as above, per stored entry (twice for a symmetric file) the CSR matrix
      // with its SELL copy (24 B) and the reader's routing buffers (48 B).
      const auto size = spmd::sparse::read_matrix_market_size(comm, cfg.file);
      if (size.rows != size.cols)
        throw spmd::Error::replicated(
            format("the matrix in '%s' is not square (%lld x %lld): every --method solves "
                   "square systems",
                   spmd::io::impl::printable(cfg.file, 200).c_str(), static_cast<long long>(size.rows),
                   static_cast<long long>(size.cols)));
      const double entries = static_cast<double>(size.entries) * (size.symmetric ? 2.0 : 1.0);
      spmd::apps::require_memory(
          comm, (static_cast<double>(size.rows) * (16 * 8.0 + 16) + entries * 72.0) / comm.size(),
          format("the %lld x %lld matrix of '%s' (%lld entries)", static_cast<long long>(size.rows),
                 static_cast<long long>(size.cols), spmd::io::impl::printable(cfg.file, 200).c_str(),
                 static_cast<long long>(size.entries)));
    }
    if (cfg.op == "matrix-free") {
      pb.op_bytes_per_row = 16.0;  // read x, write y
      if (cfg.problem == "poisson2d") {
        pb.rows = n * n;
        pb.nnz = 5 * n * n - 4 * n;
      } else {
        pb.rows = n * n * n;
        pb.nnz = 7 * n * n * n - 6 * n * n;
      }
      record.derived("rows", std::int64_t(pb.rows));
      record.derived("nnz", std::int64_t(pb.nnz));
      if (start.restarting()) record.check_derived(start.path, start.info.attributes);
      if (cfg.problem == "poisson2d")
        return run_with(sv::Laplacian<double, 2>(comm, spmd::Index<2>{n, n}), true, pb, cfg, app, ckpt, start, record,
                        comm);
      return run_with(sv::Laplacian<double, 3>(comm, spmd::Index<3>{n, n, n}), true, pb, cfg, app, ckpt, start, record,
                      comm);
    }
    pb.op_bytes_per_row = 20.0;  // CSR: 12 B per entry (value, column) + 20 B per row (offset, x, y)
    const auto A = cfg.problem == "poisson2d"   ? spmd::sparse::poisson2d<double>(comm, n, n)
                   : cfg.problem == "poisson3d" ? spmd::sparse::poisson3d<double>(comm, n, n, n)
                   : convdiff                   ? spmd::sparse::convection_diffusion2d<double>(comm, n, n, cfg.peclet)
                                                : spmd::sparse::read_matrix_market<double>(comm, cfg.file);
    pb.rows = A.rows();
    pb.nnz = A.nnz();
    pb.checksum = spmd::apps::matrix_checksum(A);
    record.derived("rows", std::int64_t(pb.rows));
    record.derived("nnz", std::int64_t(pb.nnz));
    record.derived("matrix_checksum", pb.checksum);
    if (start.restarting()) record.check_derived(start.path, start.info.attributes);
    bool symmetric = cfg.problem == "poisson2d" || cfg.problem == "poisson3d";
    if (cfg.symmetric_method() && !cfg.no_symmetry_check) {  // CG needs a symmetric matrix (one verdict everywhere)
      const auto asym = spmd::sparse::check_symmetric(A, cfg.symmetry_rtol);
      if (!asym.symmetric)
        throw spmd::Error::replicated(
            "the matrix '" + A.label() + "' is not symmetric: " + asym.describe() +
            " (CG needs a symmetric matrix: use --method gmres or bicgstab; --no-symmetry-check "
            "solves with CG anyway)");
      symmetric = true;
    }
    return run_with(A, symmetric, pb, cfg, app, ckpt, start, record, comm);
  });
}
