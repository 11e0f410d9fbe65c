#!/usr/bin/env python3
"""Channel flow, step 12 of Barba & Forsyth's "12 steps to Navier-Stokes", as cuNumeric's
examples/cfd.py runs it, written as a NumPy user writes it.

A ny x nx grid over [0, 2] x [0, 2], periodic in x, walls at y = 0 and y = 2; u = v = 0 and p = 1 at
the start, rho = 1, nu = 0.1, a constant force F = 1 along x, dt = 0.0009 dx dy / nu. Each step
builds the pressure equation's source b from u and v, relaxes p with nit Jacobi sweeps (dp/dy = 0
at the walls), then advances u and v (advection, pressure gradient, diffusion, the force). Every
formula is written once for a set of columns (c, its west neighbours w, its east neighbours e):
the interior columns (1:-1, 0:-2, 2:) and the two periodic boundary columns x = 2 (-1, -2, 0) and
x = 0 (0, -1, 1), the notebook's three copies of each formula.

The program is the NumPy program: only the import line differs.

    import numpy as np       # serial NumPy:  python cfd.py --nx 41 --ny 41 --steps 50
    import spmdarray as np   # MPI ranks:     mpiexec -n 4 python cfd.py --nx 4096 --ny 4096

With spmdarray every rank runs this same program on its block of the grids (each prints the same
line); each assignment is one fused kernel, `np.sum` a collective with the same value everywhere.
tests/python/test_examples.py runs both versions and compares them.
"""

import argparse
import time

import spmdarray as np

IN, LO, HI = slice(1, -1), slice(0, -2), slice(2, None)  # the interior rows, their south and north rows
COLUMNS = ((slice(1, -1), slice(0, -2), slice(2, None)), (-1, -2, 0), (0, -1, 1))


def build_up_b(rho, dt, dx, dy, u, v):
    """The source term of the pressure equation at the interior rows."""
    b = np.zeros_like(u)
    for c, w, e in COLUMNS:
        b[IN, c] = rho * (1 / dt * ((u[IN, e] - u[IN, w]) / (2 * dx) + (v[HI, c] - v[LO, c]) / (2 * dy)) -
                          ((u[IN, e] - u[IN, w]) / (2 * dx))**2 -
                          2 * ((u[HI, c] - u[LO, c]) / (2 * dy) * (v[IN, e] - v[IN, w]) / (2 * dx)) -
                          ((v[HI, c] - v[LO, c]) / (2 * dy))**2)
    return b


def pressure_poisson_periodic(p, dx, dy, b, nit):
    """nit Jacobi sweeps of the pressure equation; dp/dy = 0 at the walls."""
    for _ in range(nit):
        pn = p.copy()
        for c, w, e in COLUMNS:
            p[IN, c] = (((pn[IN, e] + pn[IN, w]) * dy**2 + (pn[HI, c] + pn[LO, c]) * dx**2) / (2 * (dx**2 + dy**2)) -
                        dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[IN, c])
        p[-1, :] = p[-2, :]  # dp/dy = 0 at y = 2
        p[0, :] = p[1, :]  # dp/dy = 0 at y = 0
    return p


def step(u, v, p, nit, rho, nu, F, dt, dx, dy):
    """One time step: returns the new u, v, p."""
    un = u.copy()
    vn = v.copy()
    b = build_up_b(rho, dt, dx, dy, u, v)
    p = pressure_poisson_periodic(p, dx, dy, b, nit)
    for c, w, e in COLUMNS:
        u[IN, c] = (un[IN, c] - un[IN, c] * dt / dx * (un[IN, c] - un[IN, w]) -
                    vn[IN, c] * dt / dy * (un[IN, c] - un[LO, c]) - dt / (2 * rho * dx) * (p[IN, e] - p[IN, w]) +
                    nu * (dt / dx**2 * (un[IN, e] - 2 * un[IN, c] + un[IN, w]) +
                          dt / dy**2 * (un[HI, c] - 2 * un[IN, c] + un[LO, c])) + F * dt)
        v[IN, c] = (vn[IN, c] - un[IN, c] * dt / dx * (vn[IN, c] - vn[IN, w]) -
                    vn[IN, c] * dt / dy * (vn[IN, c] - vn[LO, c]) - dt / (2 * rho * dy) * (p[HI, c] - p[LO, c]) +
                    nu * (dt / dx**2 * (vn[IN, e] - 2 * vn[IN, c] + vn[IN, w]) +
                          dt / dy**2 * (vn[HI, c] - 2 * vn[IN, c] + vn[LO, c])))
    u[0, :] = 0  # the walls
    u[-1, :] = 0
    v[0, :] = 0
    v[-1, :] = 0
    return u, v, p


def run(nx, ny, nit, steps):
    """u, v, p after `steps` steps from the start."""
    dx, dy = 2 / (nx - 1), 2 / (ny - 1)
    rho, nu, F = 1, 0.1, 1
    dt = 0.0009 * dx * dy / nu
    u, v, p = np.zeros((ny, nx)), np.zeros((ny, nx)), np.ones((ny, nx))
    for _ in range(steps):
        u, v, p = step(u, v, p, nit, rho, nu, F, dt, dx, dy)
    return u, v, p


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nx", type=int, default=41, help="grid points along x (periodic)")
    parser.add_argument("--ny", type=int, default=41, help="grid points along y (walls at both ends)")
    parser.add_argument("--nit", type=int, default=50, help="pressure iterations a step")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    u, v, p = run(args.nx, args.ny, args.nit, args.steps)
    sums = float(np.sum(u)), float(np.sum(v)), float(np.sum(p))
    seconds = time.perf_counter() - start
    print(f"cfd: {args.ny} x {args.nx}, nit {args.nit}, {args.steps} steps: sum u {sums[0]:.12g}, "
          f"sum v {sums[1]:.12g}, sum p {sums[2]:.12g}, {seconds:.3f} s "
          f"({args.nx * args.ny * args.steps / seconds / 1e6:.2f} M point-steps/s)")
    return sums


if __name__ == "__main__":
    main()
