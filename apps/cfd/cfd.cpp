// apps/cfd: CFD Python step 12 (Barba & Forsyth, "12 steps to Navier-Stokes": channel flow,
// Navier-Stokes with pressure-Poisson iterations, periodic in x) as cuNumeric's weak-scaling
// benchmark (examples/cfd.py) runs it, written with spmd slices and fused expressions.
//
//   mpirun -n P ./cfd [--nx NX] [--ny NY] [--steps S] [--nit NIT] [--warmup W] [--monitor K]
//                     [--json FILE] [--quiet] [--resources] [--grid PY,PX] [--moved-columns] [--overlap]
//                     [--perturb A] [--save FILE.h5]
//                     [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// The grid is sized by --nx and --ny, the grid points as in cuNumeric's script (walls and the
// periodic column included); cfd has no --n (docs/apps.md#vocabulary).
//
// Matched to cuNumeric's script: a ny x nx grid over [0, 2]^2 (dx = 2 / (nx - 1), dy likewise),
// nx = ny = 41, nit = 50 pressure iterations per step, 50 timed steps (--steps) after 1 warm-up
// step (--warmup), rho = 1, nu = 0.1, F = 1, dt = 0.0009 dx dy / nu, u = v = 0 and p = 1 at the
// start, then per step
//
//   un = u.copy(); vn = v.copy()
//   b = build_up_b(rho, dt, dx, dy, u, v)              b[1:-1, c] for the interior columns and the
//                                                      periodic columns -1 and 0
//   p = pressure_poisson_periodic(p, dx, dy, b)        nit sweeps: pn = p.copy(); p[1:-1, c] from
//                                                      pn and b; p[-1, :] = p[-2, :]; p[0, :] = p[1, :]
//   u[1:-1, c], v[1:-1, c] from un, vn, p (+ F dt for u)
//   u[0, :] = u[-1, :] = v[0, :] = v[-1, :] = 0        the walls y = 0 and y = 2
//
// Each formula is written once for a set of columns c with west and east neighbours w, e: the
// interior (1:-1 with 0:-2 and 2:) and the periodic columns x = 2 (-1 with -2 and 0) and x = 0
// (0 with -1 and 1), which are the NumPy original's three copies of each statement. The operation
// order is NumPy's (x**2 of an array is x * x, as np.square), so each value is NumPy's bit for bit
// on CPUs, and the same at every rank count. Two deviations that change no value:
//   - `pn = p.copy()` is spmd::swap(p, pn) (the double buffer): every element of p is rewritten
//     in the sweep, so the copy only keeps the old values, and the swap keeps them without
//     moving any data. un, vn are real copies (spmd::copy; once per step, beside nit sweeps);
//   - b is one array made once (its rows 0 and -1 are never written: the zeros of zeros_like).
//
// The periodic columns read far-apart columns: b[1:-1, -1] reads u[1:-1, 0]; p[1:-1, 0] reads
// pn[1:-1, -1]. By default the arrays are periodic along x with a halo of 1, and the expression
// engine reads such a column from the periodic halo (a shift of nx - 1 along a periodic axis is a
// shift of -1: a halo read), which the halo exchange a stencil needs anyway fills. With
// --moved-columns the arrays are not periodic and the engine moves each such column into a
// temporary (a cached RegionPlan: one more message per moved column and per sweep when the
// process grid splits x, 14 temporaries the size of the grid). Both give the same values bit for
// bit. The periodic halo is the faster (docs/performance.md#cfd): per sweep it saves two plan
// executions (and their messages), per step ten.
//
// Halo exchanges (faces) per step: u and v (one exchange), pn and p in each sweep (p because
// the walls read rows 1 and -2, which another rank may own), p once more for the u, v update:
// 2 nit + 2. Nothing in the time loop allocates or builds a plan after the first step. With
// --overlap each sweep's pn exchange travels while the interior columns are updated (the points
// that read no halo; overlap.hpp), the same values bit for bit.
//
// Prints the step rate, grid points x steps per second (nx ny S / time, the timed steps alone;
// each step includes its nit pressure sweeps, so sweep points per second are nit times that),
// and the check values: the sums of the final u, v and p (%.17g); --json writes both. From rest
// (cuNumeric's start) the flow stays uniform along x, so v stays 0 and p stays 1; --perturb A
// starts from u, v = A times fixed integer patterns instead, so that v, p and every column
// differ (the tests use it). --save writes the final u, v, p to an HDF5 file (HDF5 builds).
// Every --monitor K steps rank 0 prints the sums of u and p, the elapsed time, the rate and the
// ETA.
//
// Checkpoints (HDF5 builds) hold u, v and p (un, vn, pn and b are rebuilt by every step before
// they are read), the step (warm-up steps included) and the problem record (nx, ny, nit,
// perturb; warmup is recorded and taken from the checkpoint when not given); --restart continues
// up to --warmup + --steps and ends bitwise equal to an uninterrupted run, on any rank count or
// process grid.
//
// Exit status (docs/apps.md#exit-status): 0; 3 when a final field holds non-finite values (the
// flow blew up: too large a --perturb); 1 on errors; 64 on bad arguments.
#include <spmd.hpp>

#include "app.hpp"
#include "checkpoint_options.hpp"
#include "report.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <climits>
#include <string>
#include <memory>
#include <vector>

namespace {

using spmd::all;
using spmd::none;
using spmd::slice;
using Grid = spmd::Array<double, 2>;

/// cuNumeric's physical parameters for an nx x ny grid.
struct Physics {
  double dx, dy, rho = 1.0, nu = 0.1, F = 1.0, dt;
  Physics(spmd::index_t nx, spmd::index_t ny)
      : dx(2.0 / static_cast<double>(nx - 1)), dy(2.0 / static_cast<double>(ny - 1)), dt(0.0009 * dx * dy / nu) {}
};

/// Columns c and their x-neighbours w (west) and e (east): slices for the interior, integers for
/// one periodic boundary column; `set` numbers the three sets (0: interior, 1: x = 2, 2: x = 0).
template <class Col>
struct Columns {
  Col c, w, e;
  int set;
};

/// f(columns) for the interior columns, x = 2 (-1) and x = 0 (0), in the NumPy original's order.
template <class F>
void for_each_column_set(const F& f) {
  f(Columns<spmd::Slice>{slice(1, -1), slice(0, -2), slice(2, none), 0});
  f(Columns<int>{-1, -2, 0, 1});
  f(Columns<int>{0, -1, 1, 2});
}

/// The kernel name of each statement (per column set), so that a profile (--spmd-log-view's
/// regions, Kokkos Tools' kernel timer) tells the statements apart (docs/profiling.md).
struct StatementNames {
  std::array<spmd::Label, 3> b, p, u, v;
  spmd::Label p_top, p_bottom, walls;
  StatementNames() : p_top{"cfd::pressure_wall[y=2]"}, p_bottom{"cfd::pressure_wall[y=0]"}, walls{"cfd::walls"} {
    const char* sets[3] = {"", "[x=2]", "[x=0]"};
    for (int i = 0; i < 3; ++i) {
      b[i] = spmd::label(std::string("cfd::build_up_b") + sets[i]);
      p[i] = spmd::label(std::string("cfd::pressure") + sets[i]);
      u[i] = spmd::label(std::string("cfd::u_momentum") + sets[i]);
      v[i] = spmd::label(std::string("cfd::v_momentum") + sets[i]);
    }
  }
};
const StatementNames& names() {
  static const StatementNames n;
  return n;
}

/// NumPy's x**2 of an array: np.square, x * x.
template <class E>
auto square(const E& x) {
  return x * x;
}

const spmd::Slice in = slice(1, -1), lo = slice(0, -2), hi = slice(2, none);  // rows: interior, below, above

/// build_up_b's right side at the interior rows of columns x.
template <class Col>
auto source_term(const Physics& k, const Grid& u, const Grid& v, const Columns<Col>& x) {
  return k.rho * (1 / k.dt * ((u(in, x.e) - u(in, x.w)) / (2 * k.dx) + (v(hi, x.c) - v(lo, x.c)) / (2 * k.dy)) -
                  square((u(in, x.e) - u(in, x.w)) / (2 * k.dx)) -
                  2 * ((u(hi, x.c) - u(lo, x.c)) / (2 * k.dy) * (v(in, x.e) - v(in, x.w)) / (2 * k.dx)) -
                  square((v(hi, x.c) - v(lo, x.c)) / (2 * k.dy)));
}

/// One pressure sweep's new p at the interior rows of columns x.
template <class Col>
auto pressure_update(const Physics& k, const Grid& pn, const Grid& b, const Columns<Col>& x) {
  const double dx2 = std::pow(k.dx, 2), dy2 = std::pow(k.dy, 2);  // Python's dx**2
  return ((pn(in, x.e) + pn(in, x.w)) * dy2 + (pn(hi, x.c) + pn(lo, x.c)) * dx2) / (2 * (dx2 + dy2)) -
         dx2 * dy2 / (2 * (dx2 + dy2)) * b(in, x.c);
}

/// The advanced f (un or vn) at the interior rows of columns x, before any force: advection by
/// (un, vn), the pressure gradient kp * dp, diffusion.
template <class Col, class DP>
auto momentum(const Physics& k, const Grid& f, const Grid& un, const Grid& vn, const Columns<Col>& x, double kp,
              const DP& dp) {
  return f(in, x.c) - un(in, x.c) * k.dt / k.dx * (f(in, x.c) - f(in, x.w)) -
         vn(in, x.c) * k.dt / k.dy * (f(in, x.c) - f(lo, x.c)) - kp * dp +
         k.nu * (k.dt / std::pow(k.dx, 2) * (f(in, x.e) - 2 * f(in, x.c) + f(in, x.w)) +
                 k.dt / std::pow(k.dy, 2) * (f(hi, x.c) - 2 * f(in, x.c) + f(lo, x.c)));
}

/// The fields and the halo plans of one run: `halo` fills both axes, `rows` the halo along y
/// alone (what the wall conditions read).
struct State {
  Grid u, v, p, un, vn, pn, b;
  spmd::HaloExchange<double, 2> halo, rows;
  explicit State(const spmd::Distribution<2>& d)
      : u(spmd::zeros<double>(d, spmd::label("spmd::cfd::u"))),
        v(spmd::zeros<double>(d, spmd::label("spmd::cfd::v"))),
        p(spmd::ones<double>(d, spmd::label("spmd::cfd::p"))),
        un(spmd::zeros<double>(d, spmd::label("spmd::cfd::un"))),
        vn(spmd::zeros<double>(d, spmd::label("spmd::cfd::vn"))),
        pn(spmd::ones<double>(d, spmd::label("spmd::cfd::pn"))),
        b(spmd::zeros<double>(d, spmd::label("spmd::cfd::b"))),
        halo(d, spmd::Pattern::face),
        rows(d, spmd::Pattern::face, {1, 0}) {}
};

/// u, v = A times fixed integer patterns (exact in double, the same in NumPy):
/// u[j, i] = A ((3 i + 5 j) % 7 - 3) / 7, v[j, i] = A ((2 i + 7 j) % 5 - 2) / 5. Local.
void perturb(const Grid& u, const Grid& v, const double amplitude) {
  auto a = u.accessor();
  auto c = v.accessor();
  spmd::for_each(
      u,
      KOKKOS_LAMBDA(spmd::index_t j, spmd::index_t i) {
        a(j, i) = amplitude * static_cast<double>((3 * i + 5 * j) % 7 - 3) / 7.0;
        c(j, i) = amplitude * static_cast<double>((2 * i + 7 * j) % 5 - 2) / 5.0;
      },
      spmd::label("cfd::perturb"));
}

/// b = build_up_b(rho, dt, dx, dy, u, v); u and v halos exchanged. Collective.
void build_up_b(State& s, const Physics& k) {
  for_each_column_set(
      [&](const auto& x) { spmd::assign(s.b(in, x.c), source_term(k, s.u, s.v, x), names().b[x.set]); });
}

/// nit pressure sweeps. With `overlap` pn's exchange travels on the library's side stream while
/// the interior columns are updated (the points of them that read no halo first; overlap.hpp),
/// and the periodic columns follow its end: the same values bit for bit. Neighbour-collective.
void pressure_poisson_periodic(State& s, const Physics& k, int nit, bool overlap) {
  for (int q = 0; q < nit; ++q) {
    spmd::swap(s.p, s.pn);  // pn = p.copy(): p is rewritten below
    if (overlap)
      spmd::begin_overlapped(Kokkos::DefaultExecutionSpace(), s.halo, s.pn);
    else
      s.halo.exchange(s.pn);
    for_each_column_set([&](const auto& x) {
      if (overlap && x.set == 0)  // the first set: the interior columns
        spmd::assign(s.halo, s.p(in, x.c), pressure_update(k, s.pn, s.b, x), names().p[x.set]);
      else
        spmd::assign(s.p(in, x.c), pressure_update(k, s.pn, s.b, x), names().p[x.set]);
    });
    s.rows.exchange(s.p);                                      // rows -2 and 1 may live on other ranks
    spmd::assign(s.p(-1, all), s.p(-2, all), names().p_top);   // dp/dy = 0 at y = 2
    spmd::assign(s.p(0, all), s.p(1, all), names().p_bottom);  // dp/dy = 0 at y = 0
  }
}

/// One time step (`overlap`: the pressure sweeps' exchanges overlap their interior). Collective.
void step(State& s, const Physics& k, int nit, bool overlap) {
  s.halo.exchange(s.u, s.v);
  spmd::copyto(s.un, s.u);  // un = u.copy(), halo included
  spmd::copyto(s.vn, s.v);
  build_up_b(s, k);
  pressure_poisson_periodic(s, k, nit, overlap);
  s.halo.exchange(s.p);
  const double kpx = k.dt / (2 * k.rho * k.dx), kpy = k.dt / (2 * k.rho * k.dy);
  for_each_column_set([&](const auto& x) {
    spmd::assign(s.u(in, x.c), momentum(k, s.un, s.un, s.vn, x, kpx, s.p(in, x.e) - s.p(in, x.w)) + k.F * k.dt,
                 names().u[x.set]);
    spmd::assign(s.v(in, x.c), momentum(k, s.vn, s.un, s.vn, x, kpy, s.p(hi, x.c) - s.p(lo, x.c)), names().v[x.set]);
  });
  for (const Grid* f : {&s.u, &s.v})  // walls
    for (int row : {0, -1}) spmd::assign((*f)(row, all), 0.0, names().walls);
}

}  // namespace

int main(int argc, char** argv) {
  spmd::apps::App app("cfd",
                      "CFD Python step 12 (channel flow) as cuNumeric's benchmark, with spmd slices and expressions",
                      argc, argv);
  spmd::Runtime rt(app.argc(), app.argv());
  spmd::Comm comm = rt.world();
  using spmd::apps::format;
  using spmd::apps::in_range;

  spmd::index_t nx = 41, ny = 41;
  int steps = 50, warmup = 1, nit = 50;
  std::vector<int> grid;
  bool moved = false;
  double amplitude = 0.0;
  std::string save_path;
  CLI::App& cli = app.cli();
  cli.add_option("--nx", nx, "grid points along x (periodic)")->check(in_range(3, 1 << 24));
  cli.add_option("--ny", ny, "grid points along y (walls at both ends)")->check(in_range(3, 1 << 24));
  cli.add_option("--steps", steps, "timed time steps (nt), after the warm-up ones")->check(in_range(0, INT_MAX / 2));
  cli.add_option("--warmup", warmup, "time steps before the timer starts")->check(in_range(0, INT_MAX / 2));
  cli.add_option("--nit", nit, "pressure iterations per step")->check(in_range(0, INT_MAX));
  spmd::apps::add_list(cli, "--grid", grid, {"PY", "PX"}, "process grid (default: automatic)", in_range(1, 1 << 20));
  cli.add_flag("--moved-columns", moved, "no periodic halo: the engine moves the periodic columns' operands");
  bool overlap = false;
  cli.add_flag("--overlap", overlap, "pressure sweeps: update the interior while pn's halo exchange travels");
  cli.add_option("--perturb", amplitude, "start from u, v = A times fixed patterns (0: from rest, as cuNumeric)")
      ->check(spmd::apps::finite());
  cli.add_option("--save", save_path, "write the final u, v, p to this HDF5 file (HDF5 builds)")
      ->check(spmd::apps::non_empty());
  app.add_monitor(10, "steps");
  spmd::apps::CheckpointOptions ckpt("cfd");
  ckpt.add_to(cli);

  return app.run(comm, [&] {
    spmd::apps::check_save(comm, save_path);
    spmd::apps::ProblemRecord record(app);
    record.option("--nx", nx);
    record.option("--ny", ny);
    record.option("--nit", nit);
    record.option("--perturb", amplitude);
    record.option("--warmup", warmup, false);
    const spmd::apps::Start start = ckpt.start(comm, app, record, "--steps", steps, warmup);
    const std::int64_t total = std::int64_t(warmup) + steps;

    spmd::apps::check_grid(comm, "--grid", grid);
    const spmd::Distribution<2> dist(comm, {ny, nx}, spmd::halo(1), spmd::periodic({false, !moved}),
                                     spmd::ProcessGrid{grid});
    const auto ext = dist.local_extents_with_halo();
    // u, v, p, un, vn, pn, b, and with --moved-columns up to 14 moved-column temporaries.
    const double bytes = 8.0 * ext[0] * ext[1] * (moved ? 21.0 : 7.0);
    const std::string what = format("the %lld x %lld grid", static_cast<long long>(ny), static_cast<long long>(nx));
    spmd::apps::require_memory(comm, bytes, what);
    const Physics k(nx, ny);
    std::unique_ptr<State> state;
    spmd::apps::allocate_agreed(comm, bytes, what, [&] { state = std::make_unique<State>(dist); });
    State& s = *state;
    if (amplitude != 0.0) perturb(s.u, s.v, amplitude);
#if SPMD_HAVE_HDF5
    if (start.restarting()) {
      spmd::io::load_into(start.path, "u", s.u);
      spmd::io::load_into(start.path, "v", s.v);
      spmd::io::load_into(start.path, "p", s.p);
    }
#endif
    app.say(comm, format("cfd: %lld x %lld grid (ny x nx) on %d ranks (%s), nit %d, steps %lld..%lld (%d warm-up), "
                         "dt %.6g, %s, backend %s",
                         static_cast<long long>(ny), static_cast<long long>(nx), comm.size(), dist.describe().c_str(),
                         nit, static_cast<long long>(start.step + 1), static_cast<long long>(total), warmup, k.dt,
                         moved ? "moved periodic columns" : "periodic halo", spmd::Runtime::backend().c_str()));
    if (start.restarting()) app.say(comm, "cfd: restarted from " + start.path + " (run " + start.run_id + ")");

    spmd::apps::Report report(app, comm);
    spmd::apps::Progress progress(app, comm, "step", start.step + 1, total);
    progress.start();
    double timed_from = progress.elapsed();  // the clock of the timed steps starts after the warm-up
    for (std::int64_t n = start.step + 1; n <= total; ++n) {
      if (n == warmup + 1) {
        Kokkos::fence();
        comm.barrier();
        timed_from = progress.elapsed();
      }
      step(s, k, nit, overlap);
#if SPMD_HAVE_HDF5
      if (ckpt.due(n)) ckpt.save(start, n, {{"u", s.u}, {"v", s.v}, {"p", s.p}}, record);
#endif
      if (progress.due(n)) progress.report(n, format("sum u %.6e  sum p %.6e", spmd::sum(s.u), spmd::sum(s.p)));
    }
    Kokkos::fence();
    const std::int64_t timed = total - std::max<std::int64_t>(start.step, warmup);
    report.set_timings(progress, progress.elapsed() - timed_from, std::max<std::int64_t>(timed, 0),
                       static_cast<double>(nx) * static_cast<double>(ny), "points/s", comm);
    const double sum_u = spmd::sum(s.u), sum_v = spmd::sum(s.v), sum_p = spmd::sum(s.p);
    const std::int64_t crc_u = spmd::apps::state_crc32(s.u), crc_v = spmd::apps::state_crc32(s.v),
                       crc_p = spmd::apps::state_crc32(s.p);
    const bool finite = std::isfinite(sum_u) && std::isfinite(sum_v) && std::isfinite(sum_p);
#if SPMD_HAVE_HDF5
    if (!save_path.empty())
      spmd::io::save(save_path, {{"u", s.u}, {"v", s.v}, {"p", s.p}},
                     {{"nx", std::int64_t(nx)}, {"ny", std::int64_t(ny)}, {"steps", total}});
#endif
    const double rate = report.j["timings"]["rate"].get<double>();
    app.say(comm, format("cfd: %s, %.4e points/s (grid points x steps; %.4e pressure-sweep points/s)",
                         spmd::apps::duration_str(report.seconds()).c_str(), rate, rate * nit));
    app.say(comm, format("cfd: check: sum u %.17g, sum v %.17g, sum p %.17g", sum_u, sum_v, sum_p));

    report.j["problem"] = {{"nx", nx},
                           {"ny", ny},
                           {"shape", {ny, nx}},
                           {"nit", nit},
                           {"steps", steps},
                           {"warmup", warmup},
                           {"dt", k.dt},
                           {"perturb", amplitude},
                           {"periodic_halo", !moved}};
    report.j["distribution"] = dist.describe();
    report.j["run"] = spmd::apps::run_json(start.run_id, start.path, start.step + 1, total, "step");
    report.j["check"] = {{"sum_u", sum_u},
                         {"sum_v", sum_v},
                         {"sum_p", sum_p},
                         {"state_crc32", {{"u", crc_u}, {"v", crc_v}, {"p", crc_p}}},
                         {"finite", finite}};
    if (!finite)
      return spmd::apps::fail_check(app, comm, report, "a final field holds non-finite values (the flow blew up)");
    return report.finish(comm, spmd::apps::exit_ok, "ok");
  });
}
