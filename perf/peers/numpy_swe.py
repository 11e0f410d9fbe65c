#!/usr/bin/env python3
"""A 2-D shallow-water solver in Kurganov-Petrova's central-upwind scheme (the wet scheme of TorchSWE,
github.com/piyueh/TorchSWE; the dry-cell velocity, the walls and the CFL 0.25 are not TorchSWE's:
docs/swe.md), with plain NumPy
on one core: the serial reference of apps/swe (apps/swe/check_swe.py) and its peer in
docs/swe.md. apps/swe/swe.cpp is this program ported statement by statement.

The scheme is Kurganov & Petrova (2007), "A second-order well-balanced positivity preserving
central-upwind scheme for the Saint-Venant system":

- conservative variables w = h + B (the water surface), hu, hv on a square closed basin
  [0, 1]^2 of n x n cells; B (topography) given at the cell faces (Bx at the x-faces, By at the
  y-faces, each the mean of the two vertex values of the face) and at the cell centres (Bc, the
  mean of the four vertex values);
- piecewise-linear reconstruction of w, hu, hv, slopes limited by the generalised minmod
  limiter with parameter theta (1 <= theta <= 2);
- face depths corrected for positivity (a face depth below 0 is set to 0 and the cell's other
  face to twice the cell's depth, which keeps the cell's mass);
- velocities desingularised for dry and nearly dry cells: u = (hu) sqrt(2) h / sqrt(h^4 +
  max(h^4, eps)), eps = dx^4 (the face momentum in the fluxes is then h u);
- central-upwind fluxes (times 1 / (a+ - a-), 0 where both sides are dry) with the one-sided local speeds a+ = max(u+ + sqrt(g h+), u- + sqrt(g h-),
  0), a- = min(u+ - sqrt(g h+), u- - sqrt(g h-), 0), the well-balanced source term
  -g h dB/dx with h the mean of the cell's two face depths;
- the second-order strong-stability-preserving Runge-Kutta step (SSP-RK2, Heun), with
  dt = cfl / max(max(a+, -a-) / dx over the x-faces, max(b+, -b-) / dy over the y-faces) taken at
  the first stage (cfl 0.25: KP2007's positivity bound);
- closed-basin walls: two ghost layers that mirror the interior, with the normal momentum
  negated (w and the tangential momentum copied).

Every array is (n + 4) x (n + 4): the n x n cells at [2:-2, 2:-2] and two ghost layers. Face
quantities live in the same layout, the face i - 1/2 (west of cell i) at column i (x) or row i
(y), so that every statement reads slices of equal shape. x ** 2 is written x * x (np.square).

Problems (--problem): gaussian (a Gaussian hump of water over uneven topography), dambreak (a
circular column of water released onto a dry flat bed: dry cells), lake (a lake at rest over
uneven topography: stays at rest, the well-balanced property).

Prints the rate (cells x steps per second, the timed steps alone) and the check values apps/swe
prints; --json writes the keys of apps/swe's report ("problem", "check", "timings") with the same
names.

usage: numpy_swe.py [--n N] [--steps S] [--cfl C] [--theta T] [--problem P] [--repeat R]
                    [--json FILE] [--save FILE.npz] [--xp numpy|cupy]
Run with /usr/bin/python3 (Debian's numpy); OMP_NUM_THREADS=1 keeps any BLAS to one core.
"""
import argparse
import contextlib
import json
import math
import time

import numpy as np

G = 9.81
I = slice(2, -2)  # the cells (along either axis)
F = slice(2, -1)  # the faces i - 1/2 of cells 2 .. n + 2: wall to wall
C = slice(1, -1)  # the cells whose faces the fluxes read: the cells and one ghost layer
LO, HI = slice(0, -2), slice(2, None)  # neighbours of C: i - 1, i + 1
M1, P0 = slice(1, -2), slice(2, -1)  # the cells west (i - 1) and east (i) of the faces F
E, W = slice(3, -1), slice(2, -2)  # the east (i + 1/2) and west (i - 1/2) faces of the cells I


class X:
    """Slices along x: the axis is the column, the rows are the cells."""

    @staticmethod
    def at(s):
        return (I, s)


class Y:
    @staticmethod
    def at(s):
        return (s, I)


def bottom(x, y, problem):
    """The topography at points (x, y): a hill and a gentle slope, or flat for dambreak."""
    if problem == "dambreak":
        return 0.0 * x
    r2 = (x - 0.6) * (x - 0.6) + (y - 0.45) * (y - 0.45)
    hill = np.maximum(1.0 - 16.0 * r2, 0.0)
    return 0.5 * hill * hill + 0.1 * x


class Grid:
    """The basin's n x n cells of size dx = dy = 1 / n, and the arrays of one run."""

    def __init__(self, n, problem):
        self.n, self.m = n, n + 4
        self.dx = self.dy = 1.0 / n
        self.eps = self.dx * self.dx * self.dx * self.dx
        m = self.m
        j, i = np.indices((m, m))
        # Vertex (i - 1/2, j - 1/2) of cell (j, i) is at x = (i - 2) dx, y = (j - 2) dy.
        xw, xe = (i - 2) * self.dx, (i - 1) * self.dx
        ys, yn = (j - 2) * self.dy, (j - 1) * self.dy
        self.Bx = (bottom(xw, ys, problem) + bottom(xw, yn, problem)) / 2
        self.By = (bottom(xw, ys, problem) + bottom(xe, ys, problem)) / 2
        self.Bc = (bottom(xw, ys, problem) + bottom(xe, ys, problem) + bottom(xw, yn, problem) +
                   bottom(xe, yn, problem)) / 4
        mirror_cells(self.Bc, 1.0, 1.0)
        mirror_faces(self.Bx, X)
        mirror_faces(self.By, Y)
        z = lambda: np.zeros((m, m))  # noqa: E731
        self.w1, self.hu1, self.hv1 = z(), z(), z()  # the first stage's state
        self.dw, self.dhu, self.dhv = z(), z(), z()  # the right-hand side
        self.sw, self.shu, self.shv = z(), z(), z()  # limited slopes (one direction at a time)
        self.hE, self.hW, self.uE, self.uW, self.vE, self.vW = z(), z(), z(), z(), z(), z()  # face values
        self.iE, self.iW = z(), z()  # desingularised 1 / h at the faces
        self.ap, self.am, self.rd = z(), z(), z()  # one-sided local speeds at the faces, 1 / (a+ - a-)
        self.Hw, self.Hn, self.Ht = z(), z(), z()  # fluxes of w, normal and tangential momentum


def initial_state(grid, problem):
    """w, hu, hv at the start: cell centres (x, y) = ((i - 1.5) dx, (j - 1.5) dy)."""
    m, dx, dy = grid.m, grid.dx, grid.dy
    j, i = np.indices((m, m))
    x, y = (i - 1.5) * dx, (j - 1.5) * dy
    if problem == "gaussian":
        r2 = (x - 0.35) * (x - 0.35) + (y - 0.3) * (y - 0.3)
        w = 1.0 + 0.2 * np.exp(-50.0 * r2)
    elif problem == "dambreak":
        r2 = (x - 0.4) * (x - 0.4) + (y - 0.45) * (y - 0.45)
        w = np.where(r2 < 0.04, 1.0, grid.Bc)
    elif problem == "lake":
        w = 1.0 + 0.0 * x
    else:
        raise ValueError(problem)
    w = np.maximum(w, grid.Bc)
    return w, np.zeros((m, m)), np.zeros((m, m))


def mirror_cells(q, sx, sy):
    """Closed-basin walls: the two ghost layers mirror the cells, times sx on the x-walls and sy
    on the y-walls (-1 for the normal momentum)."""
    q[I, 1] = sx * q[I, 2]
    q[I, 0] = sx * q[I, 3]
    q[I, -2] = sx * q[I, -3]
    q[I, -1] = sx * q[I, -4]
    q[1, I] = sy * q[2, I]
    q[0, I] = sy * q[3, I]
    q[-2, I] = sy * q[-3, I]
    q[-1, I] = sy * q[-4, I]


def mirror_faces(b, d):
    """A face quantity mirrored about the walls (faces 2 and -2): faces 1, 0 and -1 take faces 3,
    4 and -3."""
    b[d.at(1)] = b[d.at(3)]
    b[d.at(0)] = b[d.at(4)]
    b[d.at(-1)] = b[d.at(-3)]


def minmod(a, b, c):
    """The minmod of three: the smallest in magnitude when all have one sign, else 0 (the smallest
    when it is positive, plus the largest when it is negative: at most one term is nonzero)."""
    return np.maximum(np.minimum(np.minimum(a, b), c), 0.0) + np.minimum(np.maximum(np.maximum(a, b), c), 0.0)


def inverse_depth(grid, h):
    """The desingularised 1 / h of KP2007 (2.17), sqrt(2) h / sqrt(h^4 + max(h^4, eps)): 0 where
    h = 0; the velocity hq / h is hq times it."""
    h2 = h * h
    return math.sqrt(2.0) * h / np.sqrt(h2 * h2 + np.maximum(h2 * h2, grid.eps))


def fluxes(grid, d, w, qn, qt, B, dn, dt_, first, theta, dh):
    """The fluxes along direction d (X or Y) and their part of the right-hand side: dn, dt_ are
    the right-hand sides of the normal and tangential momentum qn, qt; `first` assigns them (and
    dw), else adds to them. Returns max(a+, -a-) / dh over the faces (the CFL bound)."""
    g = grid
    at = d.at
    # Limited slopes of the cells C (the cells and one ghost layer).
    for q, s in ((w, g.sw), (qn, g.shu), (qt, g.shv)):
        s[at(C)] = minmod(theta * (q[at(C)] - q[at(LO)]), (q[at(HI)] - q[at(LO)]) / 2, theta * (q[at(HI)] - q[at(C)]))
    # Face depths of the cells C, corrected for positivity; east (+) and west (-) faces.
    he = w[at(C)] + g.sw[at(C)] / 2 - B[at(HI)]
    hw = w[at(C)] - g.sw[at(C)] / 2 - B[at(C)]
    hc = w[at(C)] - g.Bc[at(C)]
    g.hE[at(C)] = np.where(he < 0, 0.0, np.where(hw < 0, 2 * hc, he))
    g.hW[at(C)] = np.where(hw < 0, 0.0, np.where(he < 0, 2 * hc, hw))
    # Face velocities, desingularised: the face momentum times the desingularised 1 / h.
    g.iE[at(C)] = inverse_depth(g, g.hE[at(C)])
    g.iW[at(C)] = inverse_depth(g, g.hW[at(C)])
    g.uE[at(C)] = (qn[at(C)] + g.shu[at(C)] / 2) * g.iE[at(C)]
    g.uW[at(C)] = (qn[at(C)] - g.shu[at(C)] / 2) * g.iW[at(C)]
    g.vE[at(C)] = (qt[at(C)] + g.shv[at(C)] / 2) * g.iE[at(C)]
    g.vW[at(C)] = (qt[at(C)] - g.shv[at(C)] / 2) * g.iW[at(C)]
    # The faces F: the minus side is the east face of cell i - 1, the plus side the west face of i.
    hm, um, vm = g.hE[at(M1)], g.uE[at(M1)], g.vE[at(M1)]
    hp, up, vp = g.hW[at(P0)], g.uW[at(P0)], g.vW[at(P0)]
    g.ap[at(F)] = np.maximum(np.maximum(up + np.sqrt(G * hp), um + np.sqrt(G * hm)), 0.0)
    g.am[at(F)] = np.minimum(np.minimum(up - np.sqrt(G * hp), um - np.sqrt(G * hm)), 0.0)
    ap, am = g.ap[at(F)], g.am[at(F)]
    with errstate_divide():  # 1 / 0 where both sides are dry: not taken
        g.rd[at(F)] = np.where(ap - am > 0, 1.0 / (ap - am), 0.0)
    rd = g.rd[at(F)]
    g.Hw[at(F)] = (ap * (hm * um) - am * (hp * up) + ap * am * (hp - hm)) * rd
    g.Hn[at(F)] = (ap * (hm * um * um + 0.5 * G * hm * hm) - am * (hp * up * up + 0.5 * G * hp * hp) +
                   ap * am * (hp * up - hm * um)) * rd
    g.Ht[at(F)] = (ap * (hm * um * vm) - am * (hp * up * vp) + ap * am * (hp * vp - hm * vm)) * rd
    # The right-hand side at the cells I: flux differences and the source term -g h dB/dx.
    cells = (I, I)
    rw = -(g.Hw[at(E)] - g.Hw[at(W)]) / dh
    rn = -(g.Hn[at(E)] - g.Hn[at(W)]) / dh - (G / dh) * (B[at(E)] - B[at(W)]) * (0.5 * (g.hE[cells] + g.hW[cells]))
    rt = -(g.Ht[at(E)] - g.Ht[at(W)]) / dh
    if first:
        g.dw[cells] = rw
        dn[cells] = rn
        dt_[cells] = rt
    else:
        g.dw[cells] += rw
        dn[cells] += rn
        dt_[cells] += rt
    return np.max(np.maximum(ap, -am)) / dh


def rhs(grid, w, hu, hv, theta):
    """The right-hand side of the cells into grid.dw, dhu, dhv, after the walls; returns the
    largest speed over cell size (max over the x- and y-faces)."""
    mirror_cells(w, 1.0, 1.0)
    mirror_cells(hu, -1.0, 1.0)
    mirror_cells(hv, 1.0, -1.0)
    sx = fluxes(grid, X, w, hu, hv, grid.Bx, grid.dhu, grid.dhv, True, theta, grid.dx)
    sy = fluxes(grid, Y, w, hv, hu, grid.By, grid.dhv, grid.dhu, False, theta, grid.dy)
    return max(sx, sy)


def step(grid, w, hu, hv, cfl, theta):
    """One SSP-RK2 step in place; returns dt."""
    g = grid
    speed = float(rhs(g, w, hu, hv, theta))
    if speed == 0:
        raise RuntimeError("no wave moves: every cell is dry")
    dt = cfl / speed
    cells = (I, I)
    g.w1[cells] = np.maximum(w[cells] + dt * g.dw[cells], g.Bc[cells])
    g.hu1[cells] = hu[cells] + dt * g.dhu[cells]
    g.hv1[cells] = hv[cells] + dt * g.dhv[cells]
    rhs(g, g.w1, g.hu1, g.hv1, theta)
    w[cells] = np.maximum(0.5 * (w[cells] + g.w1[cells] + dt * g.dw[cells]), g.Bc[cells])
    hu[cells] = 0.5 * (hu[cells] + g.hu1[cells] + dt * g.dhu[cells])
    hv[cells] = 0.5 * (hv[cells] + g.hv1[cells] + dt * g.dhv[cells])
    return dt


def errstate_divide():
    """NumPy's errstate(divide="ignore"); CuPy raises no floating-point errors and has none."""
    return np.errstate(divide="ignore") if hasattr(np, "errstate") else contextlib.nullcontext()


def synchronize():
    """Waits for the GPU under --xp cupy (its kernels are asynchronous); nothing under NumPy."""
    if hasattr(np, "cuda"):
        np.cuda.Device().synchronize()


def check_values(grid, w, hu, hv, w0):
    """apps/swe's check values of a state (w0: the initial w, for the mass)."""
    cells = (I, I)
    h = w[cells] - grid.Bc[cells]
    mass0 = float(np.sum(w0[cells] - grid.Bc[cells])) * grid.dx * grid.dy
    mass = float(np.sum(h)) * grid.dx * grid.dy
    return {"mass": mass, "mass_initial": mass0, "mass_relative_change": (mass - mass0) / mass0,
            "sum_w": float(np.sum(w[cells])), "sum_hu": float(np.sum(hu[cells])), "sum_hv": float(np.sum(hv[cells])),
            "w_min": float(np.min(w[cells])), "w_max": float(np.max(w[cells])), "h_min": float(np.min(h)),
            "max_abs_hu": float(np.max(np.abs(hu[cells]))), "max_abs_hv": float(np.max(np.abs(hv[cells])))}


def run(n, steps, problem, cfl=0.25, theta=1.3):
    """The grid, the final w, hu, hv and the time after `steps` steps, and the initial w."""
    g = Grid(n, problem)
    w, hu, hv = initial_state(g, problem)
    w0 = w.copy()
    t = 0.0
    for _ in range(steps):
        t += step(g, w, hu, hv, cfl, theta)
    return g, w, hu, hv, t, w0


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--n", type=int, default=256, help="cells per side (the basin's n x n cells, no ghosts)")
    a.add_argument("--steps", type=int, default=100, help="time steps")
    a.add_argument("--cfl", type=float, default=0.25, help="CFL number")
    a.add_argument("--theta", type=float, default=1.3, help="minmod limiter parameter, 1..2")
    a.add_argument("--problem", default="gaussian", choices=("gaussian", "dambreak", "lake"))
    a.add_argument("--repeat", type=int, default=1, help="timed runs; the median is reported")
    a.add_argument("--json", help="write the results to this file")
    a.add_argument("--save", help="write the final w, hu, hv (the cells, no ghosts) to this .npz file")
    a.add_argument("--xp", default="numpy", choices=("numpy", "cupy"),
                   help="the array module: cupy runs this program unchanged on a GPU (the CuPy peer)")
    o = a.parse_args()
    global np
    if o.xp == "cupy":
        import cupy as np  # noqa: F811 (every function here reads the module-level np)
    rates = []
    for _ in range(o.repeat):
        g = Grid(o.n, o.problem)
        w, hu, hv = initial_state(g, o.problem)
        w0 = w.copy()
        t, dt = 0.0, 0.0
        synchronize()
        t0 = time.perf_counter()
        for _ in range(o.steps):
            dt = step(g, w, hu, hv, o.cfl, o.theta)
            t += dt
        synchronize()
        seconds = time.perf_counter() - t0
        rates.append((o.n * o.n * o.steps / seconds if seconds > 0 else 0.0, seconds))
    check = check_values(g, w, hu, hv, w0)
    check.update({"time": t, "dt": dt, "finite": bool(np.all(np.isfinite(w)) and np.all(np.isfinite(hu)) and
                                                       np.all(np.isfinite(hv)))})
    rates.sort()
    rate, seconds = rates[len(rates) // 2]
    print(f"{o.xp} swe: {o.problem}, {o.n} x {o.n} cells, {o.steps} steps, t {t:.6g}: {rate:.4e} points/s "
          f"(median of {o.repeat}); mass {check['mass']!r} (relative change {check['mass_relative_change']:.3g}), "
          f"sum hu {check['sum_hu']!r}, sum hv {check['sum_hv']!r}")
    if o.save:
        np.savez(o.save, w=w[I, I], hu=hu[I, I], hv=hv[I, I])
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"app": o.xp + "_swe", o.xp: np.__version__,
                       "problem": {"name": o.problem, "n": o.n, "shape": [o.n + 4, o.n + 4], "steps": o.steps,
                                   "cfl": o.cfl, "theta": o.theta, "g": G, "dx": g.dx},
                       "timings": {"seconds": seconds, "steps": o.steps,
                                   "seconds_per_step": seconds / o.steps if o.steps else 0.0, "rate": rate,
                                   "rate_unit": "points/s", "repeat": o.repeat, "rates": [r for r, _ in rates]},
                       "check": check}, f, indent=2)


if __name__ == "__main__":
    main()
