#!/usr/bin/env python3
"""The poisson2d CG of apps/cg_solver, in PETSc (petsc4py): the peer side of perf/peers/petsc_cg.sh.

The same matrix as spmd::sparse::poisson2d (the unscaled 5-point Dirichlet Laplacian on n x n
interior unknowns, unknown k = i n + j, diagonal 4, off-diagonal -1) assembled as a MATMPIAIJ with
PETSc's default (balanced block) row ownership, the same right side b = A u* (u* the splitmix64
field of cg_solver), x0 = 0, KSPCG with PCNONE, rtol --tol, atol 0, at most --max-iters
iterations. Prints the time per iteration of KSPSolve (after KSPSetUp) on rank 0.

  PETSC_DIR=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real \\
  mpiexec.openmpi --allow-run-as-root --oversubscribe -n 2 /usr/bin/python3 petsc_cg.py --n 1024 \\
      --tol 1e-12 --max-iters 300 [--json out.json]
"""
import argparse
import json
import sys

import numpy as np
import petsc4py

petsc4py.init([a for a in sys.argv[1:] if a.startswith("-") and not a.startswith("--")])
from petsc4py import PETSc  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=1024)
p.add_argument("--tol", type=float, default=1e-8)
p.add_argument("--max-iters", type=int, default=5000)
p.add_argument("--json", default="")
args, _ = p.parse_known_args()

comm = PETSc.COMM_WORLD
n = args.n
N = n * n
lo, hi = PETSc.Vec().createMPI(N, comm=comm).getOwnershipRange()  # PETSc's default row blocks
k = np.arange(lo, hi, dtype=np.int64)
i, j = k // n, k % n
# Row k: columns k - n, k - 1, k, k + 1, k + n where inside the grid, in increasing order.
offsets = (-n, -1, 0, 1, n)
inside = np.stack([i > 0, j > 0, np.ones_like(i, dtype=bool), j + 1 < n, i + 1 < n], axis=1)
cols = (k[:, None] + np.array(offsets, dtype=np.int64)[None, :])[inside]
vals = np.where(np.broadcast_to(np.array(offsets) == 0, inside.shape)[inside], 4.0, -1.0)
indptr = np.concatenate([[0], np.cumsum(inside.sum(axis=1))])
A = PETSc.Mat().createAIJ([(hi - lo, N), (hi - lo, N)], csr=(indptr.astype(PETSc.IntType),
                          cols.astype(PETSc.IntType), vals.astype(PETSc.ScalarType)), comm=comm)
A.assemble()


def splitmix(k):
    """cg_solver's known solution: a value in [-1, 1) from the unknown's index (uint64 arithmetic)."""
    with np.errstate(over="ignore"):
        z = k.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 4503599627370496.0) - 1.0


ustar, b = A.createVecs()
ustar.setArray(splitmix(np.arange(lo, hi)))
A.mult(ustar, b)
x = b.duplicate()
x.set(0.0)

ksp = PETSc.KSP().create(comm)
ksp.setOperators(A)
ksp.setType(PETSc.KSP.Type.CG)
ksp.getPC().setType(PETSc.PC.Type.NONE)
ksp.setTolerances(rtol=args.tol, atol=0.0, max_it=args.max_iters)
ksp.setInitialGuessNonzero(False)
ksp.setFromOptions()
ksp.setUp()
comm.barrier()
t0 = PETSc.Log.getTime()
ksp.solve(b, x)
comm.barrier()
elapsed = PETSc.Log.getTime() - t0
its = ksp.getIterationNumber()
r = b.duplicate()
A.mult(x, r)
r.aypx(-1.0, b)  # r = b - A x
rel = r.norm() / b.norm()
if comm.getRank() == 0:
    per = elapsed / its if its else 0.0
    print(f"petsc: poisson2d n {n} ({N} unknowns), {comm.getSize()} ranks, KSPCG + PCNONE: "
          f"{its} iterations ({ksp.getConvergedReason()}), ||b - Ax||/||b|| {rel:.3e}, "
          f"{elapsed:.4f} s, {1e3 * per:.4f} ms/iteration")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peer": "petsc", "version": ".".join(map(str, PETSc.Sys.getVersion())), "n": n,
                       "ranks": comm.getSize(), "iterations": its, "reason": int(ksp.getConvergedReason()),
                       "true_relative_residual": rel, "seconds": elapsed, "seconds_per_iteration": per}, f)
