#!/usr/bin/env python3
"""CFD Python step 12 (Barba & Forsyth, "12 steps to Navier-Stokes": channel flow, periodic in x)
as cuNumeric's weak-scaling benchmark (examples/cfd.py) runs it, with plain NumPy on one core: the
serial reference of apps/cfd (apps/cfd/check_cfd.py) and its peer in docs/performance.md.

A ny x nx grid over [0, 2] x [0, 2] (dx = 2 / (nx - 1), dy = 2 / (ny - 1)); u = v = 0, p = 1 at
the start; rho = 1, nu = 0.1, a constant force F = 1 along x, dt = 0.0009 dx dy / nu (cuNumeric's
defaults: nx = ny = 41, nit = 50 pressure iterations per step, 50 timed steps after 1 warm-up
step). Each step:
    un = u.copy(); vn = v.copy()
    b = build_up_b(...)                      # source term of the pressure equation
    p = pressure_poisson_periodic(...)       # nit Jacobi sweeps, dp/dy = 0 at the walls
    u, v updated from un, vn, p              # interior columns and the periodic columns 0, -1
    u = v = 0 on the walls y = 0 and y = 2
The columns x = 0 and x = 2 (0 and -1) are periodic: their x-neighbours are columns -1 and 1, and
-2 and 0. Every statement below is written once for a set of columns (c, its west w, its east e):
the interior (1:-1, 0:-2, 2:) and the two boundary columns (-1, -2, 0) and (0, -1, 1), which are
the NumPy original's three copies of each formula. `x ** 2` of an array is NumPy's square, x * x.

Prints the step rate (grid points x time steps per second, the timed steps alone; each step
includes its nit pressure sweeps) and the check values apps/cfd prints: the sums of the final
u, v, p, full precision.

usage: numpy_cfd.py [--nx NX] [--ny NY] [--nit NIT] [--steps S] [--warmup W] [--repeat R] [--json FILE]
Run with /usr/bin/python3 (Debian's numpy); OMP_NUM_THREADS=1 keeps any BLAS to one core.
"""
import argparse
import json
import time

import numpy as np

IN, LO, HI = slice(1, -1), slice(0, -2), slice(2, None)
# (columns, their west neighbours, their east neighbours): the interior, x = 2, x = 0
COLUMNS = ((slice(1, -1), slice(0, -2), slice(2, None)), (-1, -2, 0), (0, -1, 1))


class Physics:
    """cuNumeric's parameters for an nx x ny grid."""

    def __init__(self, nx, ny, dt=None):
        self.dx = 2 / (nx - 1)
        self.dy = 2 / (ny - 1)
        self.rho = 1
        self.nu = 0.1
        self.F = 1
        self.dt = 0.0009 * self.dx * self.dy / self.nu if dt is None else dt


def source_term(k, u, v, c, w, e):
    """build_up_b's right side at the interior rows of columns c."""
    return k.rho * (1 / k.dt * ((u[IN, e] - u[IN, w]) / (2 * k.dx) + (v[HI, c] - v[LO, c]) / (2 * k.dy)) -
                    ((u[IN, e] - u[IN, w]) / (2 * k.dx)) ** 2 -
                    2 * ((u[HI, c] - u[LO, c]) / (2 * k.dy) * (v[IN, e] - v[IN, w]) / (2 * k.dx)) -
                    ((v[HI, c] - v[LO, c]) / (2 * k.dy)) ** 2)


def build_up_b(k, u, v):
    b = np.zeros_like(u)
    for c, w, e in COLUMNS:
        b[IN, c] = source_term(k, u, v, c, w, e)
    return b


def pressure_update(k, pn, b, c, w, e):
    """One Jacobi sweep's new p at the interior rows of columns c."""
    return (((pn[IN, e] + pn[IN, w]) * k.dy**2 + (pn[HI, c] + pn[LO, c]) * k.dx**2) / (2 * (k.dx**2 + k.dy**2)) -
            k.dx**2 * k.dy**2 / (2 * (k.dx**2 + k.dy**2)) * b[IN, c])


def pressure_poisson_periodic(k, p, b, nit):
    for _ in range(nit):
        pn = p.copy()
        for c, w, e in COLUMNS:
            p[IN, c] = pressure_update(k, pn, b, c, w, e)
        p[-1, :] = p[-2, :]  # dp/dy = 0 at y = 2
        p[0, :] = p[1, :]  # dp/dy = 0 at y = 0
    return p


def momentum(k, f, un, vn, c, w, e, kp, dp):
    """The advanced f (un or vn) at the interior rows of columns c, before any force: advection
    by (un, vn), the pressure gradient kp * dp, diffusion."""
    return (f[IN, c] - un[IN, c] * k.dt / k.dx * (f[IN, c] - f[IN, w]) - vn[IN, c] * k.dt / k.dy * (f[IN, c] - f[LO, c]) -
            kp * dp + k.nu * (k.dt / k.dx**2 * (f[IN, e] - 2 * f[IN, c] + f[IN, w]) + k.dt / k.dy**2 *
                              (f[HI, c] - 2 * f[IN, c] + f[LO, c])))


def step(k, u, v, p, nit):
    """One time step; returns the new p (u and v are updated in place)."""
    un = u.copy()
    vn = v.copy()
    b = build_up_b(k, u, v)
    p = pressure_poisson_periodic(k, p, b, nit)
    for c, w, e in COLUMNS:
        u[IN, c] = momentum(k, un, un, vn, c, w, e, k.dt / (2 * k.rho * k.dx), p[IN, e] - p[IN, w]) + k.F * k.dt
        v[IN, c] = momentum(k, vn, un, vn, c, w, e, k.dt / (2 * k.rho * k.dy), p[HI, c] - p[LO, c])
    u[0, :] = 0  # walls
    u[-1, :] = 0
    v[0, :] = 0
    v[-1, :] = 0
    return p


def initialize(nx, ny):
    return np.zeros((ny, nx)), np.zeros((ny, nx)), np.ones((ny, nx))


def run(nx, ny, nit, steps, dt=None):
    """u, v, p after `steps` steps from the initial state."""
    k = Physics(nx, ny, dt)
    u, v, p = initialize(nx, ny)
    for _ in range(steps):
        p = step(k, u, v, p, nit)
    return u, v, p


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--nx", type=int, default=41, help="grid points along x (periodic)")
    a.add_argument("--ny", type=int, default=41, help="grid points along y (walls at both ends)")
    a.add_argument("--nit", type=int, default=50, help="pressure iterations per step")
    a.add_argument("--steps", type=int, default=50, help="timed steps")
    a.add_argument("--warmup", type=int, default=1, help="steps before the timer starts")
    a.add_argument("--repeat", type=int, default=3, help="timed runs; the median is reported")
    a.add_argument("--json", help="write the results to this file")
    o = a.parse_args()
    k = Physics(o.nx, o.ny)
    rates = []
    for _ in range(o.repeat):
        u, v, p = initialize(o.nx, o.ny)
        for _ in range(o.warmup):
            p = step(k, u, v, p, o.nit)
        t0 = time.perf_counter()
        for _ in range(o.steps):
            p = step(k, u, v, p, o.nit)
        dt = time.perf_counter() - t0
        rates.append(o.nx * o.ny * o.steps / dt)
    sums = {"sum_u": float(np.sum(u)), "sum_v": float(np.sum(v)), "sum_p": float(np.sum(p))}
    rates.sort()
    median = rates[len(rates) // 2]
    print(f"numpy cfd: {o.ny} x {o.nx} grid, nit {o.nit}, {o.warmup} + {o.steps} steps, median of {o.repeat}: "
          f"{median:.4e} points/s (min {rates[0]:.4e}, max {rates[-1]:.4e}); "
          f"sum u {sums['sum_u']!r}, sum v {sums['sum_v']!r}, sum p {sums['sum_p']!r}")
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"peer": "numpy", "numpy": np.__version__, "nx": o.nx, "ny": o.ny, "nit": o.nit, "steps": o.steps,
                       "warmup": o.warmup, "dt": k.dt, "repeat": o.repeat, "points_per_second": median,
                       "points_per_second_all": rates, **sums}, f, indent=2)


if __name__ == "__main__":
    main()
