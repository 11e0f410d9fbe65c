// apps/stencil: cuNumeric's stencil example (examples/stencil.py) written with spmd slices and
// expressions. An (N+2) x (N+2) grid, boundaries -273.15 (left, right, bottom) and 40.0 (top),
// and S steps of
//
//   center = 0.2 * (center + north + east + west + south)     (NumPy semantics, in place)
//
// or, with --fast, the double buffer: next[1:-1, 1:-1] = 0.2 * (...u...); swap(u, next). Both give
// the same grid bit for bit, at any rank count (each point's update is the same arithmetic), and
// so does --overlap (the halo exchange travels while the points that read no halo are updated).
// The timer starts after the halo plans, their first exchange and the first step (when there are
// more): JSON's timings.steps counts the timed steps.
//
//   mpirun -n P ./stencil [--n 1000] [--steps 100] [--fast] [--overlap] [--monitor 100] [--json FILE] [--quiet]
//                         [--resources] [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// --n is the number of unknowns (interior points) per axis, as in every app (docs/apps.md).
// Every --monitor K steps rank 0 prints the sum of the grid (the check value), the elapsed time,
// the rate and the ETA; at the end the update rate (interior points per second) and the check
// value in full precision (also in --json). Checkpoints (builds with parallel HDF5) hold the
// grid, the step and the problem record (n); --restart continues from one up to --steps (counted
// from the start of the run), on any rank count; a restarted run ends bitwise equal to an
// uninterrupted one.
//
// Exit status (docs/apps.md#exit-status): 0; 3 when the final grid holds non-finite values (a
// restart from a checkpoint holding NaN, say); 1 on errors; 64 on bad arguments.
#include <spmd.hpp>

#include "app.hpp"
#include "checkpoint_options.hpp"
#include "report.hpp"

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

namespace {

using spmd::all;
using spmd::none;
using spmd::slice;

/// The boundaries of cuNumeric's grid: -273.15 left, right and bottom, 40.0 on top. Collective.
void set_boundaries(const spmd::Array<double, 2>& grid) {
  spmd::assign(grid(all, 0), -273.15, spmd::label("stencil::boundary_left"));
  spmd::assign(grid(all, -1), -273.15, spmd::label("stencil::boundary_right"));
  spmd::assign(grid(-1, all), -273.15, spmd::label("stencil::boundary_bottom"));
  spmd::assign(grid(0, all), 40.0, spmd::label("stencil::boundary_top"));
}

/// cuNumeric's update of the grid's interior: 0.2 * (center + north + east + west + south).
auto update_of(const spmd::Array<double, 2>& grid) {
  const auto in = slice(1, -1);
  return 0.2 * (grid(in, in) + grid(slice(0, -2), in) + grid(in, slice(2, none)) + grid(in, slice(0, -2)) +
                grid(slice(2, none), in));
}

/// One step: the halo exchange, then the interior in place (NumPy semantics: the statement reads
/// the old values) or, with --fast, into `next` and swap. With --overlap the exchange travels on
/// the library's side stream while the points that read no halo are updated, and the rest
/// follow its end (overlap.hpp): the same values bit for bit. Neighbour-collective.
void step(spmd::Array<double, 2>& grid, spmd::Array<double, 2>& next, bool fast, bool overlap) {
  const auto in = slice(1, -1);
  const auto dst = fast ? next(in, in) : grid(in, in);
  const spmd::Label name = spmd::label(fast ? "stencil::update" : "stencil::update_in_place");
  if (overlap) {
    auto pending = spmd::halo_begin_overlapped(grid, spmd::Pattern::face);
    spmd::assign(pending, dst, update_of(grid), name);
  } else {
    spmd::exchange_halo(grid, spmd::Pattern::face);
    spmd::assign(dst, update_of(grid), name);
  }
  if (fast) spmd::swap(grid, next);
}

}  // namespace

int main(int argc, char** argv) {
  spmd::apps::App app("stencil", "cuNumeric's Jacobi stencil with spmd slices and fused expressions", argc, argv);
  spmd::Runtime rt(app.argc(), app.argv());
  spmd::Comm comm = rt.world();
  using spmd::apps::format;

  spmd::index_t n = 1000;
  int steps = 100;
  bool fast = false;
  CLI::App& cli = app.cli();
  cli.add_option("--n", n, "unknowns (interior points) per axis; the grid is (N + 2) x (N + 2) with the boundary")
      ->check(spmd::apps::in_range(1, 1 << 20));
  cli.add_option("--steps", steps, "steps, counted from the start of the run (also when restarting)")
      ->check(spmd::apps::in_range(0, INT_MAX));
  app.add_alias("--iters", "--steps", steps);  // its name before the apps shared one vocabulary
  cli.add_flag("--fast", fast, "double buffer (next = f(u); swap) instead of the in-place update");
  bool overlap = false;
  cli.add_flag("--overlap", overlap,
               "update the points that read no halo while the exchange travels (spmd::assign(pending, ...))");
  app.add_monitor(100, "steps");
  spmd::apps::CheckpointOptions ckpt("stencil");
  ckpt.add_to(cli);

  return app.run(comm, [&] {
    spmd::apps::ProblemRecord record(app);
    record.option("--n", n);
    const spmd::apps::Start start = ckpt.start(comm, app, record, "--steps", steps);

    const spmd::index_t g = n + 2;
    const spmd::Distribution<2> dist(comm, {g, g}, spmd::halo(1));
    const auto ext = dist.local_extents_with_halo();
    // The grid and either the double buffer or the in-place update's temporary.
    const double bytes = 8.0 * 2.0 * ext[0] * ext[1];
    const std::string what = format("the %lld x %lld grid", static_cast<long long>(g), static_cast<long long>(g));
    spmd::apps::require_memory(comm, bytes, what);
    spmd::Array<double, 2> grid, next;
    spmd::apps::allocate_agreed(comm, bytes, what, [&] {
      grid = spmd::zeros<double>(dist, spmd::label("spmd::stencil::grid"));
      if (fast) next = spmd::zeros<double>(dist, spmd::label("spmd::stencil::next"));
    });
    set_boundaries(grid);
    if (fast) set_boundaries(next);  // the update never writes the boundaries: both buffers hold them
#if SPMD_HAVE_HDF5
    if (start.restarting()) spmd::io::load_into(start.path, "grid", grid);
#endif
    app.say(comm, format("stencil: %lld x %lld grid (n %lld) on %d ranks (%s), steps %lld..%d, %s, backend %s",
                         static_cast<long long>(g), static_cast<long long>(g), static_cast<long long>(n), comm.size(),
                         dist.describe().c_str(), static_cast<long long>(start.step + 1), steps,
                         fast ? "double buffer (--fast)" : "in place", spmd::Runtime::backend().c_str()));
    if (overlap) app.say(comm, "stencil: the halo exchange overlaps the interior update (--overlap)");
    if (start.restarting()) app.say(comm, "stencil: restarted from " + start.path + " (run " + start.run_id + ")");

    spmd::apps::Report report(app, comm);
    // Outside the timer: the halo plans of both buffers and their first exchange (which maps the
    // peers' buffers or connects NCCL); a halo exchange changes no owned value. The first step is
    // untimed too (the statement's buffers), when there are more.
    spmd::exchange_halo(grid, spmd::Pattern::face);
    if (fast) spmd::exchange_halo(next, spmd::Pattern::face);
    spmd::apps::Progress progress(app, comm, "step", start.step + 1, steps);
    progress.start();
    for (int s = static_cast<int>(start.step) + 1; s <= steps; ++s) {
      step(grid, next, fast, overlap);
      progress.after_step(s);  // the first step is a warm-up when there are more
#if SPMD_HAVE_HDF5
      if (ckpt.due(s)) ckpt.save(start, s, {{"grid", grid}}, record);
#endif
      if (progress.due(s)) progress.report(s, format("sum %.10e", spmd::sum(grid)));
    }
    const std::int64_t done = steps - start.step;
    report.set_timings(progress, progress.timed_seconds(), progress.timed_steps(done),
                       static_cast<double>(n) * static_cast<double>(n), "points/s", comm);
    const double check = spmd::sum(grid);
    // cuNumeric's own figure: the mean of the interior
    const double energy =
        spmd::sum(grid(slice(1, -1), slice(1, -1))) / (static_cast<double>(n) * static_cast<double>(n));
    const std::int64_t crc = spmd::apps::state_crc32(grid);
    const bool finite = std::isfinite(check) && std::isfinite(energy);
    app.say(comm, format("stencil: %s, %.4e points/s, check (sum of the grid) %.17g, average energy %.8g",
                         spmd::apps::duration_str(report.seconds()).c_str(), report.j["timings"]["rate"].get<double>(),
                         check, energy));

    report.j["problem"] = {{"n", n}, {"shape", {g, g}}, {"steps", steps}, {"fast", fast}};
    report.j["distribution"] = dist.describe();
    report.j["run"] = spmd::apps::run_json(start.run_id, start.path, start.step + 1, steps, "step");
    report.j["check"] = {
        {"sum", check}, {"average_energy", energy}, {"state_crc32", {{"grid", crc}}}, {"finite", finite}};
    if (!finite)
      return spmd::apps::fail_check(app, comm, report, "the final grid holds non-finite values (NaN or infinity)");
    return report.finish(comm, spmd::apps::exit_ok, "ok");
  });
}
