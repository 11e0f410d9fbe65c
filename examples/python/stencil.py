#!/usr/bin/env python3
"""The 2-D Jacobi stencil of cuNumeric's examples/stencil.py, written as a NumPy user writes it.

A padded (n + 2) x (n + 2) grid with fixed boundary values; every iteration replaces each
interior point by the average of itself and its four neighbours (the 5-point stencil), computed
from the old values (NumPy's semantics: the right side is evaluated before it is assigned).

The program is the NumPy program: only the import line differs.

    import numpy as np       # serial NumPy:  python stencil.py -n 1000 -i 100
    import spmdarray as np   # MPI ranks:     mpiexec -n 4 python stencil.py -n 1000 -i 100

With spmdarray every rank runs this same program on its block of the grid (each prints the same
line); each assignment is one fused kernel, `np.sum` a collective with the same value everywhere.
tests/python/test_examples.py runs both versions and compares them.
"""

import argparse
import time

import spmdarray as np


def initialize(n):
    """The padded grid: boundary rows and columns fixed, interior zero."""
    grid = np.zeros((n + 2, n + 2))
    grid[:, 0] = -273.15
    grid[:, -1] = -273.15
    grid[-1, :] = -273.15
    grid[0, :] = 40.0
    return grid


def run(grid, iterations):
    """Jacobi iterations in place on grid's interior; returns the interior's mean."""
    center = grid[1:-1, 1:-1]
    north = grid[0:-2, 1:-1]
    east = grid[1:-1, 2:]
    west = grid[1:-1, 0:-2]
    south = grid[2:, 1:-1]
    for _ in range(iterations):
        average = center + north + east + west + south
        work = 0.2 * average
        center[:] = work
    total = np.sum(center)
    return total / (center.shape[0] * center.shape[1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--num", type=int, default=100, help="interior points per side")
    parser.add_argument("-i", "--iterations", type=int, default=100)
    args = parser.parse_args(argv)
    grid = initialize(args.num)
    start = time.perf_counter()
    mean = run(grid, args.iterations)
    seconds = time.perf_counter() - start
    print(f"stencil: {args.num} x {args.num}, {args.iterations} iterations: mean {mean:.12g}, {seconds:.3f} s "
          f"({args.num * args.num * args.iterations / seconds / 1e6:.1f} Mpoints/s)")
    return mean


if __name__ == "__main__":
    main()
