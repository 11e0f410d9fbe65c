// apps/swe: a 2-D shallow-water solver in Kurganov & Petrova's (2007) well-balanced
// positivity-preserving central-upwind scheme; its wet scheme is TorchSWE's
// (github.com/piyueh/TorchSWE), its dry-cell velocity (KP2007's desingularisation), reflecting walls
// and default CFL 0.25 are not (docs/swe.md says which is which). Written with spmd
// slices, fused expressions, spmd::where and reductions as a NumPy user would write it:
// perf/peers/numpy_swe.py is the NumPy program, and this file ports it statement by statement.
//
//   mpirun -n P ./swe [--n N] [--steps S] [--cfl C] [--theta T] [--problem gaussian|dambreak|lake]
//                     [--monitor K] [--json FILE] [--quiet] [--resources] [--grid PY,PX]
//                     [--check-mass RTOL] [--save FILE.h5]
//                     [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// The basin [0, 1]^2 holds n x n cells (--n: the cells, not the ghosts; dx = dy = 1 / n), closed by
// walls. Every array is (n + 4) x (n + 4): the cells at [2:-2, 2:-2] and two ghost layers, which
// mirror the cells (w and the tangential momentum copied, the normal momentum negated: the
// walls reflect). The scheme (docs/swe.md):
//
//   - conservative variables w = h + B, hu, hv; B (topography) at the x-faces (Bx), the y-faces
//     (By) and the cell centres (Bc); face quantities are stored in the cells' layout, the face
//     i - 1/2 (west of cell i) at column i (x) or row i (y), so every statement reads slices of
//     equal shape (no broadcasting);
//   - minmod-limited (theta) piecewise-linear reconstruction of w, hu, hv along each axis;
//   - face depths corrected for positivity (spmd::where), velocities desingularised for dry and
//     nearly dry cells (u = hu sqrt(2) h / sqrt(h^4 + max(h^4, dx^4)): spmd::maximum);
//   - central-upwind fluxes with one-sided local speeds (times 1 / (a+ - a-), 0 where both sides
//     are dry: spmd::where), the well-balanced source term;
//   - SSP-RK2 (Heun) with dt = cfl / max(max(a+, -a-) / dx, max(b+, -b-) / dy): two collective
//     max reductions at the first stage of each step.
//
// Distributed, each statement runs on the points a rank owns, so a statement that reads an
// array at a shifted position reads that array's halo: the state is exchanged after the walls are
// set (one layer: what the slopes read), and the minus-side face values and the fluxes along each
// axis before the statements that read them shifted (one layer along that axis): 5 exchanges of
// 3 arrays per stage. The halo is 3 wide, so that the outer ghost layer reads the third cell in
// place; when a block at a wall holds fewer than 4 rows or columns, the walls read cells of
// another rank and the state is exchanged (3 layers) before them too. Nothing in the time loop
// allocates, builds a plan or moves data but the halo exchanges and two max reductions per step.
// The operation order is NumPy's, so the values are NumPy's to roundoff (bit for bit on CPUs where
// libm's exp equals NumPy's: the initial hump), and the same bits at every rank count.
//
// Problems: gaussian (a Gaussian hump of water over a hill and a slope), dambreak (a circular
// column of water released onto a dry flat bed: dry and nearly dry cells), lake (a lake at rest
// over the hill: it must stay at rest, the well-balanced property).
//
// Prints the rate (cells x steps per second) and the check values: the mass (sum of h dx dy) and
// its relative change, the sums of w, hu, hv, the ranges of w and h, the largest |hu|, |hv|, the
// simulated time. Exit status 3 when a final field is not finite or the mass changed by more than
// --check-mass (relative). Checkpoints (HDF5 builds) hold w, hu, hv, the step and the simulated
// time; a restart ends bitwise equal to an uninterrupted run, on any rank count.
#include <spmd.hpp>

#include "app.hpp"
#include "checkpoint_options.hpp"
#include "report.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace {

using spmd::none;
using spmd::slice;
using Grid = spmd::Array<double, 2>;

constexpr double gravity = 9.81;

const spmd::Slice I = slice(2, -2);                        // the cells (along either axis)
const spmd::Slice F = slice(2, -1);                        // the faces i - 1/2 of cells 2 .. n + 2: wall to wall
const spmd::Slice C = slice(1, -1);                        // the cells and one ghost layer: the fluxes read their faces
const spmd::Slice LO = slice(0, -2), HI = slice(2, none);  // the neighbours i - 1, i + 1 of C
const spmd::Slice M1 = slice(1, -2), P0 = slice(2, -1);    // the cells west (i - 1) and east (i) of the faces F
const spmd::Slice E = slice(3, -1), W = slice(2, -2);      // the east and west faces of the cells I

/// Slices along x: the axis is the column, the rows are the cells.
struct X {
  static const char* name() { return "x"; }
  template <class S>
  static auto at(const Grid& q, const S& s) {
    return q(I, s);
  }
};
/// Slices along y: the axis is the row, the columns are the cells.
struct Y {
  static const char* name() { return "y"; }
  template <class S>
  static auto at(const Grid& q, const S& s) {
    return q(s, I);
  }
};

/// The problems of --problem.
const std::vector<std::string> problems = {"gaussian", "dambreak", "lake"};

/// The topography at points (x, y) (expressions): a hill and a gentle slope.
template <class XE, class YE>
auto hill_and_slope(const XE& x, const YE& y) {
  const auto r2 = (x - 0.6) * (x - 0.6) + (y - 0.45) * (y - 0.45);
  const auto hill = spmd::maximum(1.0 - 16.0 * r2, 0.0);
  return 0.5 * hill * hill + 0.1 * x;
}
/// dambreak's flat bed (0 * x, as NumPy's program writes it).
template <class XE, class YE>
auto flat(const XE& x, const YE&) {
  return 0.0 * x;
}

/// True when every rank that owns a ghost layer also owns the three cells next to the wall (the
/// blocks at the walls hold at least 4 rows or columns): then the walls read no halo. Local
/// (replicated data: the same verdict on every rank).
bool walls_are_local(const spmd::Distribution<2>& d) {
  for (int r = 0; r < d.comm().size(); ++r) {
    const spmd::Box<2> b = d.owned_by(r);
    for (int a = 0; a < 2; ++a)
      if (b.size() > 0 && (b.lo[a] == 0 || b.hi[a] == d.extent(a)) && b.extent(a) < 4) return false;
  }
  return true;
}

/// The arrays of one run and the halo plans: `walls` fills the whole face halo (3 wide: what the
/// outer ghost layer reads), `both` one layer along both axes, `along_x`, `along_y` one layer along
/// one axis.
struct State {
  Grid w, hu, hv;               // the state
  Grid w1, hu1, hv1;            // the first stage's state
  Grid dw, dhu, dhv;            // the right-hand side
  Grid sw, sn, st;              // limited slopes of w and the normal and tangential momentum
  Grid hE, hW, uE, uW, vE, vW;  // face depths and velocities of each cell (east/west, or north/south)
  Grid iE, iW;                  // desingularised 1 / h at the faces of each cell
  Grid ap, am, rd;              // one-sided local speeds at the faces, 1 / (a+ - a-)
  Grid Hw, Hn, Ht;              // fluxes of w and of the normal and tangential momentum
  Grid Bx, By, Bc;              // topography
  spmd::HaloExchange<double, 2> walls, both, along_y, along_x;
  bool walls_local;
  double dx, dy, eps;
  explicit State(const spmd::Distribution<2>& d, spmd::index_t n)
      : w(make(d, "w")),
        hu(make(d, "hu")),
        hv(make(d, "hv")),
        w1(make(d, "w1")),
        hu1(make(d, "hu1")),
        hv1(make(d, "hv1")),
        dw(make(d, "dw")),
        dhu(make(d, "dhu")),
        dhv(make(d, "dhv")),
        sw(make(d, "sw")),
        sn(make(d, "sn")),
        st(make(d, "st")),
        hE(make(d, "hE")),
        hW(make(d, "hW")),
        uE(make(d, "uE")),
        uW(make(d, "uW")),
        vE(make(d, "vE")),
        vW(make(d, "vW")),
        iE(make(d, "iE")),
        iW(make(d, "iW")),
        ap(make(d, "ap")),
        am(make(d, "am")),
        rd(make(d, "rd")),
        Hw(make(d, "Hw")),
        Hn(make(d, "Hn")),
        Ht(make(d, "Ht")),
        Bx(make(d, "Bx")),
        By(make(d, "By")),
        Bc(make(d, "Bc")),
        walls(d, spmd::Pattern::face),
        both(d, spmd::Pattern::face, {1, 1}),
        along_y(d, spmd::Pattern::face, {1, 0}),
        along_x(d, spmd::Pattern::face, {0, 1}),
        walls_local(walls_are_local(d)),
        dx(1.0 / static_cast<double>(n)),
        dy(1.0 / static_cast<double>(n)),
        eps(dx * dx * dx * dx) {}
  static constexpr int arrays = 29;
  spmd::HaloExchange<double, 2>& along(const X&) { return along_x; }
  spmd::HaloExchange<double, 2>& along(const Y&) { return along_y; }

 private:
  static Grid make(const spmd::Distribution<2>& d, const char* name) {
    return spmd::zeros<double>(d, spmd::label(std::string("spmd::swe::") + name));
  }
};

/// Closed-basin walls: the two ghost layers mirror the cells, times sx on the x-walls and sy on
/// the y-walls (-1 for the normal momentum). Each reads a plane 1 or 3 away: in the block or its
/// halo (3 wide). Collective.
void mirror_cells(const Grid& q, double sx, double sy) {
  static const spmd::Label name = spmd::label("swe::walls");
  spmd::assign(q(I, 1), sx * q(I, 2), name);
  spmd::assign(q(I, 0), sx * q(I, 3), name);
  spmd::assign(q(I, -2), sx * q(I, -3), name);
  spmd::assign(q(I, -1), sx * q(I, -4), name);
  spmd::assign(q(1, I), sy * q(2, I), name);
  spmd::assign(q(0, I), sy * q(3, I), name);
  spmd::assign(q(-2, I), sy * q(-3, I), name);
  spmd::assign(q(-1, I), sy * q(-4, I), name);
}

/// A face quantity mirrored about the walls (faces 2 and -2): faces 1, 0 and -1 take faces 3, 4
/// and -3 (face 4 is beyond the halo: the engine moves it; once, at the start). Collective.
template <class D>
void mirror_faces(const Grid& b, const D&) {
  static const spmd::Label name = spmd::label("swe::wall_faces");
  spmd::assign(D::at(b, 1), D::at(b, 3), name);
  spmd::assign(D::at(b, 0), D::at(b, 4), name);
  spmd::assign(D::at(b, -1), D::at(b, -3), name);
}

/// The minmod of three: the smallest in magnitude when all have one sign, else 0 (the smallest
/// when it is positive, plus the largest when it is negative: at most one term is nonzero).
template <class A, class B, class Cc>
auto minmod(const A& a, const B& b, const Cc& c) {
  return spmd::maximum(spmd::minimum(spmd::minimum(a, b), c), 0.0) +
         spmd::minimum(spmd::maximum(spmd::maximum(a, b), c), 0.0);
}

/// The desingularised 1 / h of KP2007 (2.17), sqrt(2) h / sqrt(h^4 + max(h^4, eps)): 0 where
/// h = 0; the velocity hq / h is hq times it.
template <class H>
auto inverse_depth(double eps, const H& h) {
  const auto h2 = h * h;
  return std::sqrt(2.0) * h / spmd::sqrt(h2 * h2 + spmd::maximum(h2 * h2, eps));
}

/// The kernel names of each direction's statements (docs/profiling.md).
struct Names {
  spmd::Label slope[3], depth_e, depth_w, inv_e, inv_w, vel[4], speed_p, speed_m, inv_speed, flux[3], rhs[3];
  explicit Names(const char* d) {
    const auto l = [&](const char* what) { return spmd::label(std::string("swe::") + what + "[" + d + "]"); };
    const char* q[3] = {"w", "normal", "tangential"};
    for (int k = 0; k < 3; ++k) {
      slope[k] = l((std::string("slope_") + q[k]).c_str());
      flux[k] = l((std::string("flux_") + q[k]).c_str());
      rhs[k] = l((std::string("rhs_") + q[k]).c_str());
    }
    depth_e = l("face_depth_plus");
    depth_w = l("face_depth_minus");
    inv_e = l("inverse_depth_plus");
    inv_w = l("inverse_depth_minus");
    inv_speed = l("inverse_speed_range");
    const char* v[4] = {"velocity_n_plus", "velocity_n_minus", "velocity_t_plus", "velocity_t_minus"};
    for (int k = 0; k < 4; ++k) vel[k] = l(v[k]);
    speed_p = l("speed_plus");
    speed_m = l("speed_minus");
  }
};
template <class D>
const Names& names() {
  static const Names n(D::name());
  return n;
}

/// The fluxes along direction D and their part of the right-hand side: dn, dt are the right-hand
/// sides of the normal and tangential momentum qn, qt; `first` assigns them (and dw), else adds
/// to them. Returns max(a+, -a-) / dh over the faces when `speed` (a collective reduction), else 0.
/// Collective.
template <class D>
double fluxes(State& s, const D& d, const Grid& w, const Grid& qn, const Grid& qt, const Grid& B, const Grid& dn,
              const Grid& dt, bool first, double theta, double dh, bool speed) {
  const Names& k = names<D>();
  const auto at = [](const Grid& q, const auto& sl) { return D::at(q, sl); };
  // Limited slopes of the cells C (the cells and one ghost layer).
  const Grid* qs[3] = {&w, &qn, &qt};
  const Grid* ss[3] = {&s.sw, &s.sn, &s.st};
  for (int c = 0; c < 3; ++c) {
    const Grid& q = *qs[c];
    spmd::assign(at(*ss[c], C),
                 minmod(theta * (at(q, C) - at(q, LO)), (at(q, HI) - at(q, LO)) / 2, theta * (at(q, HI) - at(q, C))),
                 k.slope[c]);
  }
  // Face depths of the cells C, corrected for positivity; east (+) and west (-) faces.
  const auto he = at(w, C) + at(s.sw, C) / 2 - at(B, HI);
  const auto hw = at(w, C) - at(s.sw, C) / 2 - at(B, C);
  const auto hc = at(w, C) - at(s.Bc, C);
  spmd::assign(at(s.hE, C), spmd::where(he < 0.0, 0.0, spmd::where(hw < 0.0, 2 * hc, he)), k.depth_e);
  spmd::assign(at(s.hW, C), spmd::where(hw < 0.0, 0.0, spmd::where(he < 0.0, 2 * hc, hw)), k.depth_w);
  // Face velocities, desingularised: the face momentum times the desingularised 1 / h.
  spmd::assign(at(s.iE, C), inverse_depth(s.eps, at(s.hE, C)), k.inv_e);
  spmd::assign(at(s.iW, C), inverse_depth(s.eps, at(s.hW, C)), k.inv_w);
  spmd::assign(at(s.uE, C), (at(qn, C) + at(s.sn, C) / 2) * at(s.iE, C), k.vel[0]);
  spmd::assign(at(s.uW, C), (at(qn, C) - at(s.sn, C) / 2) * at(s.iW, C), k.vel[1]);
  spmd::assign(at(s.vE, C), (at(qt, C) + at(s.st, C) / 2) * at(s.iE, C), k.vel[2]);
  spmd::assign(at(s.vW, C), (at(qt, C) - at(s.st, C) / 2) * at(s.iW, C), k.vel[3]);
  // The faces F: the minus side is the east face of cell i - 1 (read shifted: its halo), the plus
  // side the west face of cell i.
  s.along(d).exchange(s.hE, s.uE, s.vE);
  const auto hm = at(s.hE, M1), um = at(s.uE, M1), vm = at(s.vE, M1);
  const auto hp = at(s.hW, P0), up = at(s.uW, P0), vp = at(s.vW, P0);
  const double g = gravity;
  spmd::assign(at(s.ap, F), spmd::maximum(spmd::maximum(up + spmd::sqrt(g * hp), um + spmd::sqrt(g * hm)), 0.0),
               k.speed_p);
  spmd::assign(at(s.am, F), spmd::minimum(spmd::minimum(up - spmd::sqrt(g * hp), um - spmd::sqrt(g * hm)), 0.0),
               k.speed_m);
  const auto ap = at(s.ap, F), am = at(s.am, F);
  spmd::assign(at(s.rd, F), spmd::where(ap - am > 0.0, 1.0 / (ap - am), 0.0), k.inv_speed);  // 0: both sides dry
  const auto rd = at(s.rd, F);
  spmd::assign(at(s.Hw, F), (ap * (hm * um) - am * (hp * up) + ap * am * (hp - hm)) * rd, k.flux[0]);
  spmd::assign(at(s.Hn, F),
               (ap * (hm * um * um + 0.5 * g * hm * hm) - am * (hp * up * up + 0.5 * g * hp * hp) +
                ap * am * (hp * up - hm * um)) *
                   rd,
               k.flux[1]);
  spmd::assign(at(s.Ht, F), (ap * (hm * um * vm) - am * (hp * up * vp) + ap * am * (hp * vp - hm * vm)) * rd,
               k.flux[2]);
  const double fastest = speed ? spmd::max(spmd::maximum(ap, -am)) / dh : 0.0;
  // The right-hand side at the cells I: flux differences (the east face read shifted: its halo)
  // and the source term -g h dB/dx.
  s.along(d).exchange(s.Hw, s.Hn, s.Ht);
  const auto cells_dw = s.dw(I, I), cells_dn = dn(I, I), cells_dt = dt(I, I);
  const auto rw = -(at(s.Hw, E) - at(s.Hw, W)) / dh;
  const auto rn =
      -(at(s.Hn, E) - at(s.Hn, W)) / dh - (g / dh) * (at(B, E) - at(B, W)) * (0.5 * (s.hE(I, I) + s.hW(I, I)));
  const auto rt = -(at(s.Ht, E) - at(s.Ht, W)) / dh;
  if (first) {
    spmd::assign(cells_dw, rw, k.rhs[0]);
    spmd::assign(cells_dn, rn, k.rhs[1]);
    spmd::assign(cells_dt, rt, k.rhs[2]);
  } else {
    spmd::assign(cells_dw, cells_dw + rw, k.rhs[0]);
    spmd::assign(cells_dn, cells_dn + rn, k.rhs[1]);
    spmd::assign(cells_dt, cells_dt + rt, k.rhs[2]);
  }
  return fastest;
}

/// The right-hand side of the cells into s.dw, dhu, dhv after the walls; returns the largest
/// speed over cell size (max over the x- and y-faces) when `speed`. Collective.
double rhs(State& s, const Grid& w, const Grid& hu, const Grid& hv, double theta, bool speed) {
  if (!s.walls_local) s.walls.exchange(w, hu, hv);  // the walls read cells of another rank
  mirror_cells(w, 1.0, 1.0);
  mirror_cells(hu, -1.0, 1.0);
  mirror_cells(hv, 1.0, -1.0);
  s.both.exchange(w, hu, hv);  // the slopes read the neighbours: cells and ghosts
  const double sx = fluxes(s, X{}, w, hu, hv, s.Bx, s.dhu, s.dhv, true, theta, s.dx, speed);
  const double sy = fluxes(s, Y{}, w, hv, hu, s.By, s.dhv, s.dhu, false, theta, s.dy, speed);
  return std::max(sx, sy);
}

/// One SSP-RK2 step in place; returns dt. Collective.
double step(State& s, double cfl, double theta) {
  static const spmd::Label stage1 = spmd::label("swe::stage1"), stage2 = spmd::label("swe::stage2");
  const double speed = rhs(s, s.w, s.hu, s.hv, theta, true);
  if (speed == 0.0) throw spmd::Error::replicated("no wave moves: every cell is dry");
  const double dt = cfl / speed;
  const auto cells = [](const Grid& q) { return q(I, I); };
  spmd::assign(cells(s.w1), spmd::maximum(cells(s.w) + dt * cells(s.dw), cells(s.Bc)), stage1);
  spmd::assign(cells(s.hu1), cells(s.hu) + dt * cells(s.dhu), stage1);
  spmd::assign(cells(s.hv1), cells(s.hv) + dt * cells(s.dhv), stage1);
  rhs(s, s.w1, s.hu1, s.hv1, theta, false);
  spmd::assign(cells(s.w), spmd::maximum(0.5 * (cells(s.w) + cells(s.w1) + dt * cells(s.dw)), cells(s.Bc)), stage2);
  spmd::assign(cells(s.hu), 0.5 * (cells(s.hu) + cells(s.hu1) + dt * cells(s.dhu)), stage2);
  spmd::assign(cells(s.hv), 0.5 * (cells(s.hv) + cells(s.hv1) + dt * cells(s.dhv)), stage2);
  return dt;
}

/// The topography of `bottom` at the faces and centres, mirrored in the ghosts. Collective.
template <class Bottom>
void set_topography(State& s, const Bottom& bottom) {
  const auto shape = s.w.shape();
  // Vertex (i - 1/2, j - 1/2) of cell (j, i) is at x = (i - 2) dx, y = (j - 2) dy.
  const auto i = spmd::indices(shape, 1), j = spmd::indices(shape, 0);
  const auto xw = (i - 2) * s.dx, xe = (i - 1) * s.dx;
  const auto ys = (j - 2) * s.dy, yn = (j - 1) * s.dy;
  s.Bx = (bottom(xw, ys) + bottom(xw, yn)) / 2;
  s.By = (bottom(xw, ys) + bottom(xe, ys)) / 2;
  s.Bc = (bottom(xw, ys) + bottom(xe, ys) + bottom(xw, yn) + bottom(xe, yn)) / 4;
  s.walls.exchange(s.Bx, s.By, s.Bc);
  mirror_cells(s.Bc, 1.0, 1.0);
  mirror_faces(s.Bx, X{});
  mirror_faces(s.By, Y{});
  s.walls.exchange(s.Bx, s.By, s.Bc);  // the fluxes read B at the east faces: the halo
}

/// w, hu, hv at the start: cell centres (x, y) = ((i - 1.5) dx, (j - 1.5) dy). Collective.
void initial_state(State& s, const std::string& problem) {
  const auto shape = s.w.shape();
  const auto x = (spmd::indices(shape, 1) - 1.5) * s.dx, y = (spmd::indices(shape, 0) - 1.5) * s.dy;
  if (problem == "gaussian") {
    const auto r2 = (x - 0.35) * (x - 0.35) + (y - 0.3) * (y - 0.3);
    s.w = 1.0 + 0.2 * spmd::exp(-50.0 * r2);
  } else if (problem == "dambreak") {
    const auto r2 = (x - 0.4) * (x - 0.4) + (y - 0.45) * (y - 0.45);
    s.w = spmd::where(r2 < 0.04, 1.0, s.Bc);
  } else {
    s.w = 1.0;  // lake: at rest
  }
  s.w = spmd::maximum(s.w, s.Bc);
  s.hu = 0.0;
  s.hv = 0.0;
}

/// The check values of the state. Collective.
struct Check {
  double mass, sum_w, sum_hu, sum_hv, w_min, w_max, h_min, max_hu, max_hv;
};
double mass_of(const State& s, const Grid& w) {
  return spmd::sum(w(I, I) - s.Bc(I, I)) * s.dx * s.dy;
}
Check check_values(const State& s) {
  Check c;
  const auto cells = [](const Grid& q) { return q(I, I); };
  c.mass = mass_of(s, s.w);
  c.sum_w = spmd::sum(cells(s.w));
  c.sum_hu = spmd::sum(cells(s.hu));
  c.sum_hv = spmd::sum(cells(s.hv));
  c.w_min = spmd::min(cells(s.w));
  c.w_max = spmd::max(cells(s.w));
  c.h_min = spmd::min(cells(s.w) - cells(s.Bc));
  c.max_hu = spmd::norm_inf(cells(s.hu));
  c.max_hv = spmd::norm_inf(cells(s.hv));
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  spmd::apps::App app(
      "swe", "2-D shallow water (Kurganov-Petrova central-upwind scheme) with spmd slices and expressions", argc, argv);
  spmd::Runtime rt(app.argc(), app.argv());
  spmd::Comm comm = rt.world();
  using spmd::apps::format;
  using spmd::apps::in_range;

  spmd::index_t n = 256;
  int steps = 100;
  double cfl = 0.25, theta = 1.3, check_mass = 1e-9;
  std::string problem = "gaussian", save_path;
  std::vector<int> grid;
  CLI::App& cli = app.cli();
  cli.add_option("--n", n, "cells per side: the basin's n x n cells (the full grid; the arrays add two ghost layers)")
      ->check(in_range(2, 1 << 24));
  cli.add_option("--steps", steps, "time steps, counted from the start of the run (also when restarting)")
      ->check(in_range(0, INT_MAX / 2));
  cli.add_option("--cfl", cfl, "CFL number: dt = cfl / max(wave speed / cell size) (0.25: KP2007's positivity bound)")
      ->check(spmd::apps::positive())
      ->check(in_range(0, 1));
  cli.add_option("--theta", theta, "minmod limiter parameter (1: most dissipative, 2: least)")->check(in_range(1, 2));
  cli.add_option("--problem", problem,
                 "gaussian (a hump of water over a hill), dambreak (a column of water onto a dry bed), lake (at rest "
                 "over a hill: stays at rest)")
      ->check(spmd::apps::one_of(problems));
  spmd::apps::add_list(cli, "--grid", grid, {"PY", "PX"}, "process grid (default: automatic)", in_range(1, 1 << 20));
  cli.add_option("--check-mass", check_mass, "fail (exit 3) when the mass changes by more than this (relative)")
      ->check(spmd::apps::at_least(0));
  cli.add_option("--save", save_path, "write the final w, hu, hv (ghost layers included) to this HDF5 file")
      ->check(spmd::apps::non_empty());
  app.add_monitor(100, "steps");
  spmd::apps::CheckpointOptions ckpt("swe");
  ckpt.add_to(cli);

  return app.run(comm, [&] {
    spmd::apps::check_save(comm, save_path);
    spmd::apps::ProblemRecord record(app);
    record.option("--n", n);
    record.option("--problem", problem);
    record.option("--cfl", cfl);
    record.option("--theta", theta);
    const spmd::apps::Start start = ckpt.start(comm, app, record, "--steps", steps);

    const spmd::index_t m = n + 4;
    spmd::apps::check_grid(comm, "--grid", grid);
    const spmd::Distribution<2> dist(comm, {m, m}, spmd::halo(3), spmd::ProcessGrid{grid});
    const auto ext = dist.local_extents_with_halo();
    // The arrays of State (and, once, the moved faces of the walls: small).
    const double bytes = 8.0 * ext[0] * ext[1] * State::arrays;
    const std::string what = format("the %lld x %lld basin", static_cast<long long>(n), static_cast<long long>(n));
    spmd::apps::require_memory(comm, bytes, what);
    std::unique_ptr<State> state;
    spmd::apps::allocate_agreed(comm, bytes, what, [&] { state = std::make_unique<State>(dist, n); });
    State& s = *state;
    if (problem == "dambreak")
      set_topography(s, [](const auto& x, const auto& y) { return flat(x, y); });
    else
      set_topography(s, [](const auto& x, const auto& y) { return hill_and_slope(x, y); });
    initial_state(s, problem);
    const double mass0 = mass_of(s, s.w);
    double t = 0.0, dt = 0.0;
#if SPMD_HAVE_HDF5
    if (start.restarting()) {
      spmd::io::load_into(start.path, "w", s.w);
      spmd::io::load_into(start.path, "hu", s.hu);
      spmd::io::load_into(start.path, "hv", s.hv);
      const auto it = start.info.attributes.find("time");
      if (it == start.info.attributes.end() || !std::holds_alternative<double>(it->second))
        throw spmd::Error::replicated("restart: the checkpoint '" + start.path + "' has no real attribute 'time'");
      t = std::get<double>(it->second);
      if (!(std::isfinite(t) && t >= 0))
        throw spmd::Error::replicated("restart: the checkpoint '" + start.path + "' records the time " +
                                      spmd::apps::readable(t) + ", not a finite time >= 0");
    }
#endif
    app.say(comm, format("swe: %s, %lld x %lld cells on %d ranks (%s), steps %lld..%d, cfl %g, theta %g, backend %s",
                         problem.c_str(), static_cast<long long>(n), static_cast<long long>(n), comm.size(),
                         dist.describe().c_str(), static_cast<long long>(start.step + 1), steps, cfl, theta,
                         spmd::Runtime::backend().c_str()));
    if (start.restarting())
      app.say(comm, format("swe: restarted from %s (run %s) at t %.17g", start.path.c_str(), start.run_id.c_str(), t));

    spmd::apps::Report report(app, comm);
    spmd::apps::Progress progress(app, comm, "step", start.step + 1, steps);
    progress.start();
    for (std::int64_t k = start.step + 1; k <= steps; ++k) {
      dt = step(s, cfl, theta);
      t += dt;
      progress.after_step(k);  // the first step (its statements' plans and buffers) is a warm-up
#if SPMD_HAVE_HDF5
      if (ckpt.due(k)) ckpt.save(start, k, {{"w", s.w}, {"hu", s.hu}, {"hv", s.hv}}, record, {{"time", t}});
#endif
      if (progress.due(k)) progress.report(k, format("t %.6e  mass %.15e", t, mass_of(s, s.w)));
    }
    Kokkos::fence();
    const std::int64_t done = steps - start.step;
    report.set_timings(progress, progress.timed_seconds(), progress.timed_steps(done),
                       static_cast<double>(n) * static_cast<double>(n), "points/s", comm);
    const Check c = check_values(s);
    const double change = (c.mass - mass0) / mass0;
    const bool finite = std::isfinite(c.sum_w) && std::isfinite(c.sum_hu) && std::isfinite(c.sum_hv);
#if SPMD_HAVE_HDF5
    if (!save_path.empty())
      spmd::io::save(save_path, {{"w", s.w}, {"hu", s.hu}, {"hv", s.hv}},
                     {{"n", std::int64_t(n)}, {"steps", std::int64_t(steps)}, {"time", t}});
#endif
    app.say(comm, format("swe: %s, %.4e points/s (cells x steps)", spmd::apps::duration_str(report.seconds()).c_str(),
                         report.j["timings"]["rate"].get<double>()));
    app.say(comm, format("swe: check: t %.17g, mass %.17g (relative change %.3g), sum hu %.17g, sum hv %.17g, "
                         "max |hu| %.3g, max |hv| %.3g, w in [%.17g, %.17g]",
                         t, c.mass, change, c.sum_hu, c.sum_hv, c.max_hu, c.max_hv, c.w_min, c.w_max));

    report.j["problem"] = {{"name", problem}, {"n", n},         {"shape", {m, m}}, {"steps", steps},
                           {"cfl", cfl},      {"theta", theta}, {"g", gravity},    {"dx", s.dx}};
    report.j["distribution"] = dist.describe();
    report.j["run"] = spmd::apps::run_json(start.run_id, start.path, start.step + 1, steps, "step");
    report.j["check"] = {{"mass", c.mass},
                         {"mass_initial", mass0},
                         {"mass_relative_change", change},
                         {"sum_w", c.sum_w},
                         {"sum_hu", c.sum_hu},
                         {"sum_hv", c.sum_hv},
                         {"w_min", c.w_min},
                         {"w_max", c.w_max},
                         {"h_min", c.h_min},
                         {"max_abs_hu", c.max_hu},
                         {"max_abs_hv", c.max_hv},
                         {"time", t},
                         {"dt", dt},
                         {"state_crc32",
                          {{"w", spmd::apps::state_crc32(s.w)},
                           {"hu", spmd::apps::state_crc32(s.hu)},
                           {"hv", spmd::apps::state_crc32(s.hv)}}},
                         {"finite", finite}};
    if (!finite)
      return spmd::apps::fail_check(app, comm, report, "a final field holds non-finite values (the flow blew up)");
    if (!(std::fabs(change) <= check_mass))
      return spmd::apps::fail_check(
          app, comm, report,
          format("the mass changed by %.3g (relative), more than --check-mass %g", change, check_mass));
    return report.finish(comm, spmd::apps::exit_ok, "ok");
  });
}
