#!/usr/bin/env python3
"""Conjugate gradients on the 2-D Poisson matrix in CSR form: cuNumeric's examples/cg.py made
dense-free, written as a NumPy + SciPy user writes it.

It solves -Laplace(u) = 1 on the unit square (u = 0 on the boundary) on n x n interior points:
A is the 5-point matrix (4 on the diagonal, -1 per neighbour; sparse.poisson2d), b = h^2. Twice:
with cuNumeric's CG loop written out (`solve`) and with the library's solver
(`sparse.linalg.cg`, SciPy's signature), and prints both residuals.

The program is the NumPy/SciPy program: only the import line differs.

    import numpy as np, sparse_scipy as sparse                # serial: python cg.py -n 64
    import spmdarray as np, spmdarray.sparse as sparse        # mpiexec -n 4 python cg.py -n 64

sparse_scipy (next to this file) is scipy.sparse plus the one name SciPy lacks, poisson2d (built
with scipy.sparse.kron), and a cg that takes SciPy >= 1.12's rtol on older SciPy. With spmdarray
A's rows are distributed as the vectors' (every rank generates its own rows), `A.dot(p)` is the
library's overlapped SpMV, each update one fused pass, each dot product one allreduce.

The updates are in place (`x += alpha * p`, `p[:] = r + beta * p`), as allocation-conscious NumPy
code writes them: one fused pass each. `x = x + alpha * p` gives the same values with spmdarray
too, through more passes (a rebound lazy expression is evaluated when an operand is written or
the tree grows long: docs/python.md, "Expressions keep their values").
tests/python/test_examples.py runs both versions and compares them.
"""

import argparse
import time

import spmdarray as np, spmdarray.sparse as sparse  # noqa: E401


def problem(n):
    """A and b of -Laplace(u) = 1 on n x n interior points, h = 1 / (n + 1)."""
    h = 1.0 / (n + 1)
    A = sparse.poisson2d(n, n)
    b = np.full(n * n, h * h)
    return A, b


def solve(A, b, conv_iters, max_iters, conv_threshold):
    """cuNumeric's CG loop: checks ||r|| < conv_threshold every conv_iters iterations. Returns x
    and the iterations done (-1: not converged in max_iters)."""
    x = np.zeros_like(b)
    r = b.copy()
    r -= A.dot(x)
    p = r.copy()
    rsold = r.dot(r)
    converged = -1
    for i in range(max_iters):
        Ap = A.dot(p)
        alpha = rsold / p.dot(Ap)
        x += alpha * p
        r -= alpha * Ap
        rsnew = r.dot(r)
        if (i + 1) % conv_iters == 0 and np.sqrt(rsnew) < conv_threshold:
            converged = i + 1
            break
        beta = rsnew / rsold
        p[:] = r + beta * p
        rsold = rsnew
    return x, converged


def solve_library(A, b, rtol, max_iters):
    """The library's CG: scipy.sparse.linalg.cg's signature and (x, info)."""
    return sparse.linalg.cg(A, b, rtol=rtol, atol=0.0, maxiter=max_iters)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--num", type=int, default=64, help="interior points per side")
    parser.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance")
    parser.add_argument("--conv-iters", type=int, default=1, help="test convergence every this many iterations")
    parser.add_argument("--max-iters", type=int, default=None)
    args = parser.parse_args(argv)
    A, b = problem(args.num)
    max_iters = args.max_iters or 10 * args.num * args.num
    threshold = args.rtol * np.linalg.norm(b)

    start = time.perf_counter()
    x, iterations = solve(A, b, args.conv_iters, max_iters, threshold)
    seconds = time.perf_counter() - start
    residual = np.linalg.norm(b - A.dot(x)) / np.linalg.norm(b)
    print(f"cg loop: {args.num}^2 unknowns, nnz {A.nnz}: {iterations} iterations, ||b - Ax||/||b|| "
          f"{residual:.3e}, {seconds:.3f} s")

    start = time.perf_counter()
    y, info = solve_library(A, b, args.rtol, max_iters)
    seconds = time.perf_counter() - start
    residual_lib = np.linalg.norm(b - A.dot(y)) / np.linalg.norm(b)
    print(f"sparse.linalg.cg: info {info}, ||b - Ax||/||b|| {residual_lib:.3e}, {seconds:.3f} s")
    return iterations, residual, info, residual_lib


if __name__ == "__main__":
    main()
