// apps/heat: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square, explicit
// (forward Euler, 5-point Laplacian), with zero Dirichlet boundaries and the initial state
// sin(pi x) sin(pi y), whose exact solution is exp(-2 pi^2 alpha t) sin(pi x) sin(pi y).
//
//   mpirun -n N ./heat --n 1024 --steps 500 [--every 100] [--alpha 1] [--json out.json]
//                      [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// Checkpoints (builds with parallel HDF5) hold the grid u and the step; --restart continues from
// one up to --steps (the total step count), on any rank count, with n and alpha taken from the
// file. A restarted run ends bitwise equal to an uninterrupted one (the update is pointwise).
//
// Each step: halo exchange (faces), one for_each kernel over the interior writing the other
// buffer, swap. Every --every steps rank 0 prints the largest change of the last step (the
// residual of the steady problem) and the error against the exact solution.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spmd.hpp>

#include "app_cli.hpp"
#include "checkpoint_options.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <utility>

namespace {
constexpr double pi = 3.14159265358979323846;

// Largest |error| of w against the exact solution at time t: a kernel into `diff`, then norm_inf.
// (A named function: CUDA does not allow a KOKKOS_LAMBDA inside another lambda.)
double max_error(const spmd::Array<double, 2>& w, const spmd::Array<double, 2>& diff, double h, double alpha,
                 double t) {
  const double decay = std::exp(-2.0 * pi * pi * alpha * t);
  auto a = w.accessor();
  auto e = diff.accessor();
  spmd::for_each(
      diff, KOKKOS_LAMBDA(spmd::index_t i, spmd::index_t j) {
        e(i, j) = a(i, j) - decay * spmd::math::sin(pi * i * h) * spmd::math::sin(pi * j * h);
      });
  return spmd::norm_inf(diff);
}
}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm comm = rt.world();

  CLI::App cli{"2-D explicit heat equation on a distributed spmd::Array"};
  spmd::index_t n = 1024;
  int steps = 500, every = 100;
  double alpha = 1.0, check_error = -1.0;
  std::string json_path;
  cli.add_option("--n", n, "grid points per axis (boundary included)")->check(CLI::Range(3, 1 << 20));
  cli.add_option("--steps", steps, "time steps")->check(CLI::NonNegativeNumber);
  cli.add_option("--every", every, "report every K steps (0: only at the end)")->check(CLI::NonNegativeNumber);
  cli.add_option("--alpha", alpha, "diffusivity")->check(CLI::PositiveNumber);
  cli.add_option("--json", json_path, "write the results to this JSON file (rank 0)");
  cli.add_option("--check-error", check_error, "exit non-zero if the final error exceeds this");
  spmd::apps::CheckpointOptions ckpt("heat");
  ckpt.add_to(cli);
  // A later value of an option wins (scripts/demo.sh passes defaults before the user's options).
  if (const int code = spmd::apps::parse(cli, comm, argc, argv); code >= 0) return code;

  ckpt.require_hdf5("heat");
  int first_step = 1;
#if SPMD_HAVE_HDF5
  std::string restart_path;
  if (ckpt.restarting()) {
    restart_path = ckpt.restart_file(comm);
    const spmd::io::FileInfo info = spmd::io::inspect(restart_path, comm);
    n = ckpt.int_attribute(info, "n");
    alpha = ckpt.real_attribute(info, "alpha");
    first_step = static_cast<int>(ckpt.int_attribute(info, "step")) + 1;
    if (comm.rank() == 0)
      std::printf("heat: restarting from %s at step %d (n %lld, alpha %g)\n", restart_path.c_str(), first_step - 1,
                  static_cast<long long>(n), alpha);
  }
#endif
  const double h = 1.0 / static_cast<double>(n - 1);
  const double dt = 0.2 * h * h / alpha;  // stable: dt <= h^2 / (4 alpha)
  const double r = alpha * dt / (h * h);

  spmd::Distribution<2> dist(comm, {n, n}, spmd::halo(1));
  auto u = spmd::zeros<double>(dist, spmd::label("spmd::heat::u"));
  auto v = spmd::zeros<double>(dist, spmd::label("spmd::heat::v"));
  auto diff = spmd::zeros<double>(dist.with_halo({0, 0}), spmd::label("spmd::heat::diff"));
  {
    auto a = u.accessor();
    spmd::for_each(
        u, spmd::Box<2>{{1, 1}, {n - 1, n - 1}}, KOKKOS_LAMBDA(spmd::index_t i, spmd::index_t j) {
          a(i, j) = spmd::math::sin(pi * i * h) * spmd::math::sin(pi * j * h);
        });
  }
  const spmd::Box<2> interior{{1, 1}, {n - 1, n - 1}};
#if SPMD_HAVE_HDF5
  if (!restart_path.empty()) spmd::io::load_into(restart_path, "u", u);
  const auto series = ckpt.series(comm);
#endif

  if (comm.rank() == 0)
    std::printf("heat: %lld x %lld grid on %d ranks (%s), %d steps, dt %.3e, backend %s\n", static_cast<long long>(n),
                static_cast<long long>(n), comm.size(), dist.describe().c_str(), steps, dt,
                spmd::Runtime::backend().c_str());

  Kokkos::fence();
  const double t0 = MPI_Wtime();
  double change = 0.0;
  for (int step = first_step; step <= steps; ++step) {
    u.exchange_halo(spmd::Pattern::face);
    auto a = u.accessor();
    auto b = v.accessor();
    spmd::for_each(
        v, interior, KOKKOS_LAMBDA(spmd::index_t i, spmd::index_t j) {
          b(i, j) = a(i, j) + r * (a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1) - 4.0 * a(i, j));
        });
    const bool report = (every > 0 && step % every == 0) || step == steps;
    if (report) {
      spmd::transform(
          diff, KOKKOS_LAMBDA(double x, double y) { return x - y; }, v, u);
      change = spmd::norm_inf(diff);
    }
    std::swap(u, v);
#if SPMD_HAVE_HDF5
    if (ckpt.due(step)) series.save(step, {{"u", u}}, {{"time", step * dt}, {"n", std::int64_t(n)}, {"alpha", alpha}});
#endif
    if (report && every > 0 && comm.rank() == 0) {
      std::printf("  step %6d  t %.5e  max change %.3e\n", step, step * dt, change);
      std::fflush(stdout);
    }
  }
  Kokkos::fence();
  const double elapsed = comm.allreduce(MPI_Wtime() - t0, spmd::Op::max);
  const double err = max_error(u, diff, h, alpha, steps * dt);
  const double total = spmd::sum(u);
  const double points = static_cast<double>(n - 2) * static_cast<double>(n - 2) * (steps - first_step + 1);
  const std::int64_t state_crc32 = spmd::apps::state_crc32(u);
  if (comm.rank() == 0) {
    std::printf("heat: final t %.5e  max error vs exact %.3e  sum %.17g  %.3f s  %.3e point-updates/s\n", steps * dt,
                err, total, elapsed, elapsed > 0 ? points / elapsed : 0.0);
    if (!json_path.empty()) {
      nlohmann::json j = {{"app", "heat"},
                          {"n", n},
                          {"steps", steps},
                          {"first_step", first_step},
                          {"state_crc32", state_crc32},
                          {"ranks", comm.size()},
                          {"dt", dt},
                          {"final_time", steps * dt},
                          {"max_error", err},
                          {"sum", total},
                          {"max_change", change},
                          {"seconds", elapsed},
                          {"point_updates_per_second", elapsed > 0 ? points / elapsed : 0.0}};
      std::ofstream(json_path) << j.dump(2) << "\n";
    }
  }
  if (check_error >= 0 && !(err <= check_error)) {
    if (comm.rank() == 0) std::fprintf(stderr, "heat: error %.3e exceeds --check-error %.3e\n", err, check_error);
    return 1;
  }
  return 0;
}
