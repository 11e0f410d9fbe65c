#!/usr/bin/env python3
"""cuNumeric's stencil example (examples/stencil.py) with plain NumPy on one core: the peer the
spmdarray stencil is measured against (perf/bench_stencil.cpp, apps/stencil).

An (N+2) x (N+2) grid, boundaries -273.15 (left, right, bottom) and 40.0 (top), and I iterations of
    average = center + north + east + west + south
    work = 0.2 * average
    center[:] = work
Prints the update rate (interior points per second, the iterations alone timed) and the check
value apps/stencil prints: the sum of the final grid (boundaries included), full precision.

usage: numpy_stencil.py [--n N] [--iters I] [--repeat R] [--json FILE]
Run with /usr/bin/python3 (Debian's numpy); OMP_NUM_THREADS=1 keeps any BLAS to one core.
"""
import argparse
import json
import time

import numpy as np


def initialize(n):
    grid = np.zeros((n + 2, n + 2))
    grid[:, 0] = -273.15
    grid[:, -1] = -273.15
    grid[-1, :] = -273.15
    grid[0, :] = 40.0
    return grid


def run(grid, iters):
    center = grid[1:-1, 1:-1]
    north = grid[0:-2, 1:-1]
    east = grid[1:-1, 2:]
    west = grid[1:-1, 0:-2]
    south = grid[2:, 1:-1]
    for _ in range(iters):
        average = center + north + east + west + south
        work = 0.2 * average
        center[:] = work
    return grid


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=4094, help="interior points per axis (the grid is n + 2 square)")
    p.add_argument("--iters", type=int, default=10, help="iterations per timed run")
    p.add_argument("--repeat", type=int, default=5, help="timed runs; the median is reported")
    p.add_argument("--json", help="write the results to this file")
    a = p.parse_args()
    rates, check = [], None
    for _ in range(a.repeat):
        grid = initialize(a.n)
        t0 = time.perf_counter()
        run(grid, a.iters)
        dt = time.perf_counter() - t0
        rates.append(a.n * a.n * a.iters / dt)
        check = float(np.sum(grid))
    rates.sort()
    median = rates[len(rates) // 2]
    print(f"numpy stencil: {a.n + 2} x {a.n + 2} grid, {a.iters} iterations, median of {a.repeat}: "
          f"{median:.4e} points/s (min {rates[0]:.4e}, max {rates[-1]:.4e}); check {check!r}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"peer": "numpy", "numpy": np.__version__, "n": a.n, "iters": a.iters, "repeat": a.repeat,
                       "points_per_second": median, "points_per_second_all": rates, "check": check}, f, indent=2)


if __name__ == "__main__":
    main()
