// apps/spectral: 2-D incompressible Navier-Stokes in vorticity form on the periodic square
// [0, 2 pi)^2, pseudo-spectral (issue 27), on spmd::fft's distributed transforms.
//
//   mpirun -n P ./spectral [--n N] [--steps S] [--dt DT | --cfl C] [--nu NU] [--init taylor-green|random]
//                          [--viscous integrating-factor|explicit] [--fft-effort estimate|measure] [--tg-k K] [--seed
//                          S] [--kmin KMIN] [--kmax KMAX]
//                          [--amplitude A] [--check-error E] [--grid PY,PX] [--save FILE.h5]
//                          [--monitor K] [--json FILE] [--quiet] [--resources]
//                          [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// Equations (docs/spectral.md): w_t + u . grad w = nu lap w, with the stream function psi,
// -lap psi = w, u = d psi / dy, v = -d psi / dx (so w = dv/dx - du/dy). The grid is n x n,
// x = 2 pi i / n, y = 2 pi j / n; an array's element [j, i] is the point (x_i, y_j): axis 0 is
// y, axis 1 is x. The state is w_hat = rfft2(w) (n x (n/2 + 1): kx = 0..n/2 along axis 1, ky =
// fftfreq(n) n along axis 0), so psi_hat = w_hat / |k|^2 (0 at k = 0).
//
// Right side: N(w_hat) = -D * rfft2(u w_x + v w_y), with u, v, w_x, w_y = irfft2 of i ky psi_hat,
// -i kx psi_hat, i kx w_hat, i ky w_hat (four complex-to-real transforms and one real-to-complex
// per evaluation, all through two spmd::fft::Plans made once), and D the 2/3-rule mask: a mode is
// kept when 3 |kx| < n and 3 |ky| < n (integers: exactly the same test in NumPy).
//
// Time stepping: the classic four-stage Runge-Kutta method (RK4), with the viscous term
//   --viscous integrating-factor (default): treated exactly, E = exp(-nu |k|^2 dt) (IFRK4):
//     a = N(w); w1 = E2 (w + dt/2 a); b = N(w1); w2 = E2 w + dt/2 b; c = N(w2);
//     w3 = E w + dt E2 c; d = N(w3); w <- E w + dt/6 (E a + 2 E2 (b + c) + d)   (E2 = E(dt/2))
//     No viscous stability limit; the advective one remains (dt max|u| k_max of order 2.8).
//   --viscous explicit: RK4 on F(w) = N(w) - nu |k|^2 w. Stable for the viscous term while
//     nu k2max dt <= 2.785 (RK4's interval on the negative real axis), k2max the largest |k|^2
//     among the kept modes; a larger dt is refused.
// dt is --dt, or (--dt 0, the default) --cfl times dx / max(|u| + |v|) of the initial field.
//
// Initial conditions:
//   --init taylor-green: w = 2 K cos(K x) cos(K y) (psi = cos(K x) cos(K y) / K, max |u| = 1),
//     K = --tg-k. The nonlinear term vanishes identically, so w(t) = w(0) exp(-2 nu K^2 t): the
//     app reports the max error against it and the decay rate measured from the enstrophy.
//   --init random: r = spmd::random::uniform (seed --seed, stream 0: the same numbers at any rank
//     count and process grid), w_hat = rfft2(r) on the band KMIN <= |k| <= KMAX (--kmin, --kmax), scaled
//     so that the rms vorticity is --amplitude.
//
// Energy E = 1/2 <u^2 + v^2> and enstrophy Z = 1/2 <w^2> (means over the grid) are computed from
// the half spectrum (Parseval, the columns kx = 1..n/2-1 counted twice): no transform.
//
// Checkpoints (HDF5 builds) hold w_hat (complex), the step, t and dt; --restart continues the run
// they belong to (docs/checkpointing.md#apps), the same bits at the same rank count.
//
// Exit status (docs/apps.md#exit-status): 0; 3 when a final field holds non-finite values or the
// Taylor-Green error exceeds --check-error; 1 on errors; 64 on bad arguments.
#include <spmd.hpp>

#include "app.hpp"
#include "checkpoint_options.hpp"
#include "report.hpp"

#include <climits>
#include <cstdlib>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

using Z = Kokkos::complex<double>;
using Real = spmd::Array<double, 2>;
using Cplx = spmd::Array<Z, 2>;
using spmd::index_t;

constexpr double two_pi = 6.283185307179586476925286766559;
/// RK4's stability interval on the negative real axis: |R(z)| <= 1 for z in [-2.785, 0].
constexpr double rk4_real_limit = 2.785;

/// The wavenumber arrays on the spectral distribution (global index [j, i]: ky = fftfreq(n)[j] n,
/// kx = i), the mask and the half-spectrum weights. Local kernels.
struct Wavenumbers {
  Real kx, ky, k2inv, dealias, weight, lin;
};

/// Fill the wavenumber arrays for an n x n grid with viscosity nu. Local.
void make_wavenumbers(Wavenumbers& k, index_t n, double nu) {
  auto kx = k.kx.accessor();
  auto ky = k.ky.accessor();
  auto k2inv = k.k2inv.accessor();
  auto dealias = k.dealias.accessor();
  auto weight = k.weight.accessor();
  auto lin = k.lin.accessor();
  spmd::for_each(
      k.kx,
      KOKKOS_LAMBDA(index_t j, index_t i) {
        const index_t jy = j < (n + 1) / 2 ? j : j - n;  // numpy.fft.fftfreq(n) * n
        const double x = static_cast<double>(i), y = static_cast<double>(jy);
        const double k2 = x * x + y * y;
        kx(j, i) = x;
        ky(j, i) = y;
        k2inv(j, i) = k2 > 0 ? 1.0 / k2 : 0.0;
        const index_t ax = i < 0 ? -i : i, ay = jy < 0 ? -jy : jy;
        dealias(j, i) = (3 * ax < n && 3 * ay < n) ? 1.0 : 0.0;
        weight(j, i) = (i == 0 || 2 * i == n) ? 1.0 : 2.0;
        lin(j, i) = nu * k2;
      },
      spmd::label("spectral::wavenumbers"));
}

/// w = 2 K cos(K x) cos(K y) on the n x n grid (x = 2 pi i / n along axis 1). Local.
void taylor_green(const Real& w, index_t n, int kk) {
  const double h = two_pi / static_cast<double>(n), K = kk;
  const auto x = h * spmd::indices(w.shape(), 1), y = h * spmd::indices(w.shape(), 0);
  spmd::assign(w, (2.0 * K) * spmd::cos(K * x) * spmd::cos(K * y), spmd::label("spectral::taylor_green"));
}

/// The run's arrays and plans: physical fields on `phys`, spectra on the plans' spectral
/// distribution.
struct Solver {
  spmd::fft::Plan<double, Z, 2> r2c;
  spmd::fft::Plan<Z, double, 2> c2r;
  Wavenumbers k;
  Cplx w, ws, acc, f, scratch;  // state, stage input, RK4 sum, right side, transform input
  Real u, v, wx, wy;            // physical fields
  Real E, E2;                   // integrating factors exp(-nu k^2 dt), exp(-nu k^2 dt / 2)
  index_t n;
  double dt;
  bool explicit_viscous;

  Solver(const spmd::fft::Plan<double, Z, 2>& fwd, const spmd::fft::Plan<Z, double, 2>& bwd, index_t n_)
      : r2c(fwd), c2r(bwd), n(n_), dt(0), explicit_viscous(false) {
    const auto& S = r2c.output_distribution();
    const auto& P = r2c.input_distribution();
    auto real_s = [&](const char* l) { return spmd::zeros<double>(S, spmd::label(l)); };
    auto cplx_s = [&](const char* l) { return spmd::zeros<Z>(S, spmd::label(l)); };
    auto real_p = [&](const char* l) { return spmd::zeros<double>(P, spmd::label(l)); };
    k = Wavenumbers{real_s("spmd::spectral::kx"),     real_s("spmd::spectral::ky"),
                    real_s("spmd::spectral::k2inv"),  real_s("spmd::spectral::dealias"),
                    real_s("spmd::spectral::weight"), real_s("spmd::spectral::lin")};
    w = cplx_s("spmd::spectral::w_hat");
    ws = cplx_s("spmd::spectral::w_stage");
    acc = cplx_s("spmd::spectral::rk_sum");
    f = cplx_s("spmd::spectral::rhs");
    scratch = cplx_s("spmd::spectral::scratch");
    E = real_s("spmd::spectral::E");
    E2 = real_s("spmd::spectral::E2");
    u = real_p("spmd::spectral::u");
    v = real_p("spmd::spectral::v");
    wx = real_p("spmd::spectral::w_x");
    wy = real_p("spmd::spectral::w_y");
  }

  /// u and v of the spectrum y (into this->u, this->v). Collective.
  void velocity(const Cplx& y) {
    const Z I(0.0, 1.0);
    spmd::assign(scratch, I * k.ky * k.k2inv * y, spmd::label("spectral::u_hat"));
    c2r.execute(u, scratch);
    spmd::assign(scratch, -I * k.kx * k.k2inv * y, spmd::label("spectral::v_hat"));
    c2r.execute(v, scratch);
  }

  /// f = N(y) = -D rfft2(u w_x + v w_y). Collective.
  void nonlinear(const Cplx& y) {
    const Z I(0.0, 1.0);
    velocity(y);
    spmd::assign(scratch, I * k.kx * y, spmd::label("spectral::wx_hat"));
    c2r.execute(wx, scratch);
    spmd::assign(scratch, I * k.ky * y, spmd::label("spectral::wy_hat"));
    c2r.execute(wy, scratch);
    spmd::assign(wx, u * wx + v * wy, spmd::label("spectral::advection"));
    r2c.execute(f, wx);
    spmd::assign(f, -k.dealias * f, spmd::label("spectral::dealias"));
  }

  /// One RK4 step of dt. Collective.
  void step() {
    const double h = dt / 2;
    if (explicit_viscous) {
      nonlinear(w);
      spmd::assign(acc, f - k.lin * w, spmd::label("spectral::rk4_1"));
      spmd::assign(ws, w + h * acc, spmd::label("spectral::rk4_1"));
      nonlinear(ws);
      spmd::assign(acc, acc + 2.0 * (f - k.lin * ws), spmd::label("spectral::rk4_2"));
      spmd::assign(ws, w + h * (f - k.lin * ws), spmd::label("spectral::rk4_2"));
      nonlinear(ws);
      spmd::assign(acc, acc + 2.0 * (f - k.lin * ws), spmd::label("spectral::rk4_3"));
      spmd::assign(ws, w + dt * (f - k.lin * ws), spmd::label("spectral::rk4_3"));
      nonlinear(ws);
      spmd::assign(w, w + (dt / 6) * (acc + (f - k.lin * ws)), spmd::label("spectral::rk4_4"));
    } else {
      nonlinear(w);
      spmd::assign(acc, E * f, spmd::label("spectral::ifrk4_1"));
      spmd::assign(ws, E2 * (w + h * f), spmd::label("spectral::ifrk4_1"));
      nonlinear(ws);
      spmd::assign(acc, acc + 2.0 * E2 * f, spmd::label("spectral::ifrk4_2"));
      spmd::assign(ws, E2 * w + h * f, spmd::label("spectral::ifrk4_2"));
      nonlinear(ws);
      spmd::assign(acc, acc + 2.0 * E2 * f, spmd::label("spectral::ifrk4_3"));
      spmd::assign(ws, E * w + dt * E2 * f, spmd::label("spectral::ifrk4_3"));
      nonlinear(ws);
      spmd::assign(w, E * w + (dt / 6) * (acc + f), spmd::label("spectral::ifrk4_4"));
    }
  }

  /// The grid mean of filter |w|^2 over the physical field w whose half spectrum is y (Parseval:
  /// sum_x |w|^2 = sum_k |w_hat|^2 / n^2, the columns 1..n/2-1 of the half spectrum counted
  /// twice), summed exactly (spmd::reproducible: the same bits at every rank count, so that the
  /// random initial field, scaled by it, is too). Collective.
  template <class Filter>
  double mean_square(const Cplx& y, const Filter& filter) const {
    const double n2 = static_cast<double>(n) * static_cast<double>(n);
    return spmd::sum(spmd::reproducible,
                     k.weight * filter * (spmd::real(y) * spmd::real(y) + spmd::imag(y) * spmd::imag(y))) /
           (n2 * n2);
  }
  double enstrophy() const { return 0.5 * mean_square(w, 1.0); }
  double energy() const { return 0.5 * mean_square(w, k.k2inv); }
};

/// Why the options that must agree with --n do not ("" when they do). Local.
std::string problem_check(index_t n, const std::string& init, int tg_k, int kmin, int kmax) {
  using spmd::apps::format;
  const auto nn = static_cast<long long>(n);
  if (n % 2 != 0) return format("--n %lld: the grid must have an even number of points per axis", nn);
  if (init == "taylor-green" && 3 * static_cast<index_t>(tg_k) >= n)
    return format("--tg-k %d: the Taylor-Green mode must survive the 2/3 rule (3 K < n = %lld)", tg_k, nn);
  if (init == "random" && (kmin > kmax || 3 * static_cast<index_t>(kmax) >= n))
    return format("--kmin %d --kmax %d: the random field needs KMIN <= KMAX and 3 KMAX < n = %lld", kmin, kmax, nn);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  spmd::apps::App app("spectral",
                      "2-D incompressible Navier-Stokes (vorticity), pseudo-spectral on the periodic square, "
                      "RK4 with the 2/3 rule",
                      argc, argv);
  spmd::Runtime rt(app.argc(), app.argv());
  spmd::Comm comm = rt.world();
  using spmd::apps::format;
  using spmd::apps::in_range;

  index_t n = 128;
  int steps = 100, tg_k = 1;
  double dt_opt = 0.0, cfl = 0.5, nu = 1e-3, amplitude = 1.0, check_error = -1.0;
  std::int64_t seed = 1;
  std::string init = "taylor-green", viscous = "integrating-factor", save_path, fft_effort = "estimate";
  int kmin = 1, kmax = 6;
  std::vector<int> grid;
  CLI::App& cli = app.cli();
  cli.add_option("--n", n, "grid points per axis (even)")
      ->check(in_range(8, 1 << 24))
      ->check(spmd::apps::validator(
          [](const std::string& s) -> std::string {
            return std::strtoll(s.c_str(), nullptr, 10) % 2 == 0 ? "" : "value " + s + " is odd (n must be even)";
          },
          "even", "EVEN"));
  cli.add_option("--steps", steps, "time steps, counted from the start of the run (also when restarting)")
      ->check(in_range(0, INT_MAX));
  cli.add_option("--dt", dt_opt, "time step (0: --cfl times dx / max(|u| + |v|) of the initial field)")
      ->check(in_range(0, 1e6));
  cli.add_option("--cfl", cfl, "CFL number of the automatic time step (--dt 0)")
      ->check(spmd::apps::positive())
      ->check(in_range(0, 10));
  cli.add_option("--nu", nu, "kinematic viscosity")->check(in_range(0, 1e6));
  cli.add_option("--init", init, "initial condition")->check(spmd::apps::one_of({"taylor-green", "random"}));
  cli.add_option("--viscous", viscous, "viscous term: exactly by an integrating factor, or explicitly in RK4")
      ->check(spmd::apps::one_of({"integrating-factor", "explicit"}));
  cli.add_option("--fft-effort", fft_effort,
                 "FFTW planning: estimate (the same bits on every run, rank count and restart) or measure "
                 "(FFTW_MEASURE: faster, up to 3x here, but the last bits may differ from run to run)")
      ->check(spmd::apps::one_of({"estimate", "measure"}));
  cli.add_option("--tg-k", tg_k, "Taylor-Green wavenumber K (3 K < n)")->check(in_range(1, 1 << 22));
  cli.add_option("--seed", seed, "random initial field: the seed")->check(in_range(0, 4.6e18));
  cli.add_option("--kmin", kmin, "random initial field: the smallest wavenumber |k| it holds")
      ->check(in_range(1, 1 << 22));
  cli.add_option("--kmax", kmax, "random initial field: the largest wavenumber |k| it holds (3 KMAX < n)")
      ->check(in_range(1, 1 << 22));
  cli.add_option("--amplitude", amplitude, "random initial field: its rms vorticity")
      ->check(spmd::apps::positive())
      ->check(in_range(0, 1e12));
  cli.add_option("--check-error", check_error,
                 "taylor-green: exit with status 3 if the final max error vs the exact solution exceeds this (< 0: "
                 "no check)")
      ->check(spmd::apps::finite());
  spmd::apps::add_list(cli, "--grid", grid, {"PY", "PX"}, "process grid (default: automatic)", in_range(1, 1 << 20));
  cli.add_option("--save", save_path, "write the final vorticity w and w_hat to this HDF5 file (HDF5 builds)")
      ->check(spmd::apps::non_empty());
  app.add_monitor(10, "steps");
  // Options that must agree with --n: a usage error (64) on the command line. (Values a restart
  // takes from a checkpoint are checked again in the body.)
  cli.callback([&] {
    if (const std::string why = problem_check(n, init, tg_k, kmin, kmax); !why.empty()) throw CLI::ValidationError(why);
  });
  spmd::apps::CheckpointOptions ckpt("spectral");
  ckpt.add_to(cli);

  return app.run(comm, [&] {
    spmd::apps::check_save(comm, save_path);
    spmd::apps::ProblemRecord record(app);
    record.option("--n", n);
    record.option("--nu", nu);
    record.option("--dt", dt_opt);
    record.option("--cfl", cfl);
    record.option("--init", init);
    record.option("--viscous", viscous);
    record.option("--tg-k", tg_k);
    record.option("--seed", seed);
    record.option("--amplitude", amplitude);
    record.option("--kmin", kmin);
    record.option("--kmax", kmax);
    const spmd::apps::Start start = ckpt.start(comm, app, record, "--steps", steps);
    const bool tg = init == "taylor-green";
    // Again with the values a restart took from its checkpoint.
    if (const std::string why = problem_check(n, init, tg_k, kmin, kmax); !why.empty())
      throw spmd::Error::replicated("restart: " + why);

    spmd::apps::check_grid(comm, "--grid", grid);
    const spmd::Distribution<2> dist(comm, {n, n}, spmd::ProcessGrid{grid});
    const index_t m = n / 2 + 1;
    const double np = static_cast<double>(comm.size());
    // 4 physical fields, 5 complex spectra and 8 real spectral arrays, and the plans' stage
    // buffers (about two complex spectra per plan) per rank.
    const double bytes = (8.0 * 4 * n * n + (16.0 * 9 + 8.0 * 8) * n * m) / np;
    const std::string what = format("the %lld x %lld grid", static_cast<long long>(n), static_cast<long long>(n));
    spmd::apps::require_memory(comm, bytes, what);

    std::unique_ptr<Solver> sp;
    spmd::apps::allocate_agreed(comm, bytes, what, [&] {
      // Plans with the spectrum left where the forward transform ends (one transpose fewer each
      // way), when the inverse then ends on the physical grid; else both restored.
      using spmd::fft::Direction;
      using spmd::fft::Norm;
      using spmd::fft::Output;
      const auto effort = fft_effort == "measure" ? spmd::fft::Effort::measure : spmd::fft::Effort::estimate;
      spmd::fft::Plan<double, Z, 2> fwd(dist, Direction::forward, {}, {}, Norm::backward, Output::transposed,
                                        spmd::fft::Effort::estimate);
      spmd::fft::Plan<Z, double, 2> bwd(fwd.output_distribution(), Direction::backward, {n, n}, {}, Norm::backward,
                                        Output::transposed, spmd::fft::Effort::estimate);
      if (bwd.output_distribution() != dist) {
        fwd = spmd::fft::Plan<double, Z, 2>(dist, Direction::forward, {}, {}, Norm::backward, Output::restored, effort);
        bwd = spmd::fft::Plan<Z, double, 2>(fwd.output_distribution(), Direction::backward, {n, n}, {}, Norm::backward,
                                            Output::restored, effort);
      } else if (effort == spmd::fft::Effort::measure) {
        fwd.measure();
        bwd.measure();
      }
      sp = std::make_unique<Solver>(fwd, bwd, n);
    });
    Solver& s = *sp;
    s.explicit_viscous = viscous == "explicit";
    make_wavenumbers(s.k, n, nu);

    // The initial field (also when restarting: the automatic dt of a new run needs it).
    if (tg) {
      taylor_green(s.u, n, tg_k);
      s.r2c.execute(s.w, s.u);
    } else {
      spmd::random::uniform(s.u, spmd::random::Generator{static_cast<std::uint64_t>(seed)});
      s.r2c.execute(s.w, s.u);
      const double k2lo = double(kmin) * kmin, k2hi = double(kmax) * kmax;
      const auto k2 = s.k.kx * s.k.kx + s.k.ky * s.k.ky;
      spmd::assign(s.w, spmd::where(k2 >= k2lo && k2 <= k2hi, 1.0, 0.0) * s.w, spmd::label("spectral::band"));
      const double rms = std::sqrt(s.mean_square(s.w, 1.0));
      if (!(rms > 0))
        throw spmd::Error::replicated(format("--kmin %d --kmax %d: no mode of the %lld x %lld grid", kmin, kmax,
                                             static_cast<long long>(n), static_cast<long long>(n)));
      spmd::assign(s.w, (amplitude / rms) * s.w, spmd::label("spectral::scale"));
    }
    const double enstrophy0 = s.enstrophy();
    double dt = dt_opt;
    if (start.restarting()) {
#if SPMD_HAVE_HDF5
      const auto it = start.info.attributes.find("dt");
      if (it == start.info.attributes.end() || !std::holds_alternative<double>(it->second))
        throw spmd::Error::replicated("restart: the checkpoint '" + start.path + "' records no dt");
      dt = std::get<double>(it->second);
      spmd::io::load_into(start.path, "w_hat", s.w);
#endif
    } else if (dt == 0) {
      s.velocity(s.w);
      const double umax = spmd::max(spmd::abs(s.u) + spmd::abs(s.v));
      dt = umax > 0 ? cfl * (two_pi / static_cast<double>(n)) / umax : 0.0;
      if (!(dt > 0)) throw spmd::Error::replicated("--dt 0: the initial field is at rest; give --dt");
    }
    s.dt = dt;
    // The viscous stability limit of explicit RK4 over the kept modes.
    const double kept = std::floor(static_cast<double>(n - 1) / 3.0), k2max = 2 * kept * kept;
    if (s.explicit_viscous && nu * k2max * dt > rk4_real_limit)
      throw spmd::Error::replicated(
          format("--viscous explicit: dt %.6g exceeds the viscous stability limit %.6g of RK4 (nu k2max dt <= %.4g, "
                 "k2max %g the largest |k|^2 the 2/3 rule keeps); use a smaller --dt or --viscous integrating-factor",
                 dt, rk4_real_limit / (nu * k2max), rk4_real_limit, k2max));
    spmd::assign(s.E, spmd::exp(-dt * s.k.lin), spmd::label("spectral::E"));
    spmd::assign(s.E2, spmd::exp(-(dt / 2) * s.k.lin), spmd::label("spectral::E2"));

    app.say(comm, format("spectral: %lld x %lld grid on %d ranks (%s), %s init, nu %.4g, dt %.6g, steps %lld..%d, "
                         "RK4 (%s viscous term), backend %s",
                         static_cast<long long>(n), static_cast<long long>(n), comm.size(), dist.describe().c_str(),
                         init.c_str(), nu, dt, static_cast<long long>(start.step + 1), steps,
                         s.explicit_viscous ? "explicit" : "integrating-factor", spmd::Runtime::backend().c_str()));
    app.say(comm, "spectral: r2c " + s.r2c.describe() + "; c2r " + s.c2r.describe());
    if (start.restarting()) app.say(comm, "spectral: restarted from " + start.path + " (run " + start.run_id + ")");

    spmd::apps::Report report(app, comm);
    spmd::apps::Progress progress(app, comm, "step", start.step + 1, steps);
    progress.start();
    for (int st = static_cast<int>(start.step) + 1; st <= steps; ++st) {
      s.step();
      progress.after_step(st);
#if SPMD_HAVE_HDF5
      if (ckpt.due(st)) ckpt.save(start, st, {{"w_hat", s.w}}, record, {{"time", st * dt}, {"dt", dt}});
#endif
      if (progress.due(st))
        progress.report(st, format("t %.4e  energy %.6e  enstrophy %.6e", st * dt, s.energy(), s.enstrophy()));
    }
    const std::int64_t done = steps - start.step;
    // One step: 4 evaluations of 4 c2r and 1 r2c transforms of n^2 points.
    report.set_timings(progress, progress.timed_seconds(), progress.timed_steps(done),
                       static_cast<double>(n) * static_cast<double>(n), "point-updates/s", comm);

    const double t = steps * dt;
    const double energy = s.energy(), enstrophy = s.enstrophy();
    s.c2r.execute(s.wy, s.w);  // the final vorticity in physical space
    const double wmax = spmd::norm_inf(s.wy);
    double max_error = -1, rate = -1, rate_exact = -1;
    if (tg) {
      taylor_green(s.wx, n, tg_k);
      const double decay = std::exp(-2.0 * nu * tg_k * tg_k * t);
      max_error = spmd::max(spmd::abs(s.wy - decay * s.wx));
      rate_exact = 2.0 * nu * tg_k * tg_k;
      rate = t > 0 ? -std::log(enstrophy / enstrophy0) / (2 * t) : 0.0;  // Z ~ exp(-2 rate t)
    }
    const std::int64_t crc_w = spmd::apps::state_crc32(s.w), crc_omega = spmd::apps::state_crc32(s.wy);
    const bool finite = std::isfinite(energy) && std::isfinite(enstrophy) && std::isfinite(wmax);
#if SPMD_HAVE_HDF5
    if (!save_path.empty())
      spmd::io::save(save_path, {{"w", s.wy}, {"w_hat", s.w}},
                     {{"n", std::int64_t(n)}, {"steps", std::int64_t(steps)}, {"time", t}, {"dt", dt}});
#endif
    app.say(comm,
            format("spectral: %s, %.4e point-updates/s (grid points x steps)",
                   spmd::apps::duration_str(report.seconds()).c_str(), report.j["timings"]["rate"].get<double>()));
    app.say(comm, format("spectral: t %.6g  energy %.17g  enstrophy %.17g  max|w| %.6g", t, energy, enstrophy, wmax));
    if (tg)
      app.say(comm, format("spectral: taylor-green: max error vs exact %.3e; decay rate from the enstrophy %.12g "
                           "(exact 2 nu K^2 = %.12g)",
                           max_error, rate, rate_exact));

    report.j["problem"] = {{"n", n},
                           {"shape", {n, n}},
                           {"spectrum_shape", {n, m}},
                           {"steps", steps},
                           {"dt", dt},
                           {"nu", nu},
                           {"init", init},
                           {"viscous", viscous},
                           {"tg_k", tg_k},
                           {"seed", seed},
                           {"kmin", kmin},
                           {"kmax", kmax},
                           {"amplitude", amplitude},
                           {"plans", s.r2c.describe() + " ; " + s.c2r.describe()}};
    report.j["distribution"] = dist.describe();
    report.j["run"] = spmd::apps::run_json(start.run_id, start.path, start.step + 1, steps, "step");
    report.j["check"] = {{"time", t},
                         {"energy", energy},
                         {"enstrophy", enstrophy},
                         {"enstrophy_initial", enstrophy0},
                         {"max_abs_w", wmax},
                         {"state_crc32", {{"w_hat", crc_w}, {"w", crc_omega}}},
                         {"finite", finite}};
    if (tg) {
      report.j["check"]["max_error"] = max_error;
      report.j["check"]["decay_rate"] = rate;
      report.j["check"]["decay_rate_exact"] = rate_exact;
    }
    if (!finite)
      return spmd::apps::fail_check(app, comm, report, "a final field holds non-finite values (the flow blew up)");
    if (tg && check_error >= 0 && !(max_error <= check_error))
      return spmd::apps::fail_check(
          app, comm, report,
          format("the max error %.3e exceeds --check-error %s", max_error, spmd::apps::readable(check_error).c_str()));
    return report.finish(comm, spmd::apps::exit_ok, "ok");
  });
}
