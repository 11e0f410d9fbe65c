// apps/heat: the 2-D heat equation u_t = alpha (u_xx + u_yy) on the unit square, explicit
// (forward Euler, 5-point Laplacian), with zero Dirichlet boundaries and the initial state
// sin(pi x) sin(pi y), whose exact solution is exp(-2 pi^2 alpha t) sin(pi x) sin(pi y).
//
//   mpirun -n N ./heat [--n 1022] [--steps 500] [--alpha 1] [--monitor 100] [--check-error E]
//                      [--json FILE] [--quiet] [--resources]
//                      [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// --n is the number of unknowns (interior points) per axis, as in every app (docs/apps.md): the
// grid is (n + 2) x (n + 2) with its boundary, spacing h = 1 / (n + 1), time step
// dt = 0.2 h^2 / alpha. Each step: halo exchange (faces), one for_each kernel over the interior
// writing the other buffer, swap. Every --monitor K steps rank 0 prints the largest change of
// the step (the residual of the steady problem), the elapsed time, the rate and the ETA.
//
// Checkpoints (builds with parallel HDF5) hold the grid u, the step and the problem record
// (n, alpha); --restart continues from one up to --steps (counted from the start of the run), on
// any rank count, and ends bitwise equal to an uninterrupted run (the update is pointwise).
//
// Exit status (docs/apps.md#exit-status): 0; 3 when the final grid holds non-finite values or
// the error exceeds --check-error; 1 on errors; 64 on bad arguments.
#include <spmd.hpp>

#include "app.hpp"
#include "checkpoint_options.hpp"
#include "report.hpp"

#include <climits>
#include <cmath>
#include <cstdio>

namespace {
constexpr double pi = 3.14159265358979323846;
using spmd::index_t;

// Largest |error| of w against the exact solution at time t: a kernel into `diff`, then norm_inf.
// (A named function: CUDA does not allow a KOKKOS_LAMBDA inside another lambda.)
double max_error(const spmd::Array<double, 2>& w, const spmd::Array<double, 2>& diff, double h, double alpha,
                 double t) {
  const double decay = std::exp(-2.0 * pi * pi * alpha * t);
  auto a = w.accessor();
  auto e = diff.accessor();
  spmd::for_each(
      diff,
      KOKKOS_LAMBDA(index_t i, index_t j) {
        e(i, j) = a(i, j) - decay * spmd::math::sin(pi * i * h) * spmd::math::sin(pi * j * h);
      },
      spmd::label("heat::error"));
  return spmd::norm_inf(diff);
}

void initial_state(const spmd::Array<double, 2>& u, index_t g, double h) {
  auto a = u.accessor();
  spmd::for_each(
      u, spmd::Box<2>{{1, 1}, {g - 1, g - 1}},
      KOKKOS_LAMBDA(index_t i, index_t j) { a(i, j) = spmd::math::sin(pi * i * h) * spmd::math::sin(pi * j * h); },
      spmd::label("heat::initial_state"));
}

/// One step: v's interior from u (u's halo exchanged first). Neighbour-collective.
void step(const spmd::Array<double, 2>& u, const spmd::Array<double, 2>& v, index_t g, double r) {
  spmd::exchange_halo(u, spmd::Pattern::face);
  auto a = u.accessor();
  auto b = v.accessor();
  spmd::for_each(
      v, spmd::Box<2>{{1, 1}, {g - 1, g - 1}},
      KOKKOS_LAMBDA(index_t i, index_t j) {
        b(i, j) = a(i, j) + r * (a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1) - 4.0 * a(i, j));
      },
      spmd::label("heat::step"));
}

struct Minus {
  KOKKOS_INLINE_FUNCTION double operator()(double x, double y) const { return x - y; }
};

}  // namespace

int main(int argc, char** argv) {
  spmd::apps::App app("heat", "2-D explicit heat equation on a distributed spmd::Array", argc, argv);
  spmd::Runtime rt(app.argc(), app.argv());
  spmd::Comm comm = rt.world();
  using spmd::apps::format;

  index_t n = 1022;
  int steps = 500;
  double alpha = 1.0, check_error = -1.0;
  CLI::App& cli = app.cli();
  cli.add_option("--n", n, "unknowns (interior points) per axis; the grid is (N + 2) x (N + 2) with the boundary")
      ->check(spmd::apps::in_range(1, 1 << 20));
  cli.add_option("--steps", steps, "time steps, counted from the start of the run (also when restarting)")
      ->check(spmd::apps::in_range(0, INT_MAX));
  cli.add_option("--alpha", alpha, "diffusivity")->check(spmd::apps::positive())->check(spmd::apps::in_range(0, 1e12));
  cli.add_option("--check-error", check_error,
                 "exit with status 3 if the final max error vs the exact solution exceeds this (< 0: no check)")
      ->check(spmd::apps::finite());
  app.add_monitor(100, "steps", "--every");
  spmd::apps::CheckpointOptions ckpt("heat");
  ckpt.add_to(cli);

  return app.run(comm, [&] {
    spmd::apps::ProblemRecord record(app);
    record.option("--n", n);
    record.option("--alpha", alpha);
    const spmd::apps::Start start = ckpt.start(comm, app, record, "--steps", steps);

    const index_t g = n + 2;
    const double h = 1.0 / static_cast<double>(n + 1);
    const double dt = 0.2 * h * h / alpha;  // stable: dt <= h^2 / (4 alpha)
    const double r = alpha * dt / (h * h);
    const spmd::Distribution<2> dist(comm, {g, g}, spmd::halo(1));
    const auto ext = dist.local_extents_with_halo();
    const double bytes = 8.0 * (2.0 * ext[0] * ext[1] + double(dist.owned().size()));
    const std::string what = format("the %lld x %lld grid", static_cast<long long>(g), static_cast<long long>(g));
    spmd::apps::require_memory(comm, bytes, what);
    spmd::Array<double, 2> u, v, diff;
    spmd::apps::allocate_agreed(comm, bytes, what, [&] {
      u = spmd::zeros<double>(dist, spmd::label("spmd::heat::u"));
      v = spmd::zeros<double>(dist, spmd::label("spmd::heat::v"));
      diff = spmd::zeros<double>(dist.with_halo({0, 0}), spmd::label("spmd::heat::diff"));
    });
    initial_state(u, g, h);
#if SPMD_HAVE_HDF5
    if (start.restarting()) spmd::io::load_into(start.path, "u", u);
#endif
    app.say(comm, format("heat: %lld x %lld grid (n %lld unknowns per axis) on %d ranks (%s), steps %lld..%d, dt %.3e, "
                         "backend %s",
                         static_cast<long long>(g), static_cast<long long>(g), static_cast<long long>(n), comm.size(),
                         dist.describe().c_str(), static_cast<long long>(start.step + 1), steps, dt,
                         spmd::Runtime::backend().c_str()));
    if (start.restarting()) app.say(comm, "heat: restarted from " + start.path + " (run " + start.run_id + ")");

    spmd::apps::Report report(app, comm);
    // Outside the timer: both buffers' halo plans and their first exchange (no owned value
    // changes), then the first step when there are more.
    spmd::exchange_halo(u, spmd::Pattern::face);
    spmd::exchange_halo(v, spmd::Pattern::face);
    spmd::apps::Progress progress(app, comm, "step", start.step + 1, steps);
    progress.start();
    double change = 0.0;
    for (int s = static_cast<int>(start.step) + 1; s <= steps; ++s) {
      step(u, v, g, r);
      progress.after_step(s);  // the first step is a warm-up when there are more
      const bool due = progress.due(s);
      if (due || s == steps) {
        spmd::transform(diff, Minus{}, v, u, spmd::label("heat::change"));
        change = spmd::norm_inf(diff);
      }
      spmd::swap(u, v);
#if SPMD_HAVE_HDF5
      if (ckpt.due(s)) ckpt.save(start, s, {{"u", u}}, record, {{"time", s * dt}});
#endif
      if (due) progress.report(s, format("t %.4e  max change %.3e", s * dt, change));
    }
    const std::int64_t done = steps - start.step;
    report.set_timings(progress, progress.timed_seconds(), progress.timed_steps(done),
                       static_cast<double>(n) * static_cast<double>(n), "point-updates/s", comm);
    const double err = max_error(u, diff, h, alpha, steps * dt);
    const double total = spmd::sum(u);
    const std::int64_t crc = spmd::apps::state_crc32(u);
    const bool finite = std::isfinite(err) && std::isfinite(total) && std::isfinite(change);
    app.say(comm, format("heat: final t %.5e  max error vs exact %.3e  sum %.17g  %s  %.3e point-updates/s", steps * dt,
                         err, total, spmd::apps::duration_str(report.seconds()).c_str(),
                         report.j["timings"]["rate"].get<double>()));

    report.j["problem"] = {{"n", n}, {"shape", {g, g}}, {"alpha", alpha}, {"dt", dt}, {"steps", steps}};
    report.j["distribution"] = dist.describe();
    report.j["run"] = spmd::apps::run_json(start.run_id, start.path, start.step + 1, steps, "step");
    report.j["check"] = {{"sum", total},
                         {"max_error", err},
                         {"max_change", change},
                         {"final_time", steps * dt},
                         {"state_crc32", {{"u", crc}}},
                         {"finite", finite}};
    if (!finite)
      return spmd::apps::fail_check(app, comm, report, "the final grid holds non-finite values (NaN or infinity)");
    if (check_error >= 0 && !(err <= check_error))
      return spmd::apps::fail_check(
          app, comm, report,
          format("the max error %.3e exceeds --check-error %s", err, spmd::apps::readable(check_error).c_str()));
    return report.finish(comm, spmd::apps::exit_ok, "ok");
  });
}
