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
import json
import sys

import petsc4py

petsc4py.init([a for a in sys.argv[1:] if a.startswith("-") and not a.startswith("--")])
from petsc4py import PETSc  # noqa: E402

from petsc_common import arguments, destroy, known_rhs, stencil_matrix, true_relative_residual  # noqa: E402

p = arguments(1024)
args, _ = p.parse_known_args()

comm = PETSc.COMM_WORLD
n = args.n
N = n * n
A, lo, hi = stencil_matrix(PETSc, comm, (n, n))  # sparse::poisson2d, PETSc's default row blocks
ustar, b = known_rhs(A, lo, hi)
x = b.duplicate()
x.set(0.0)

ksp = PETSc.KSP().create(comm)
ksp.setOperators(A)
ksp.setType(PETSc.KSP.Type.CG)
pc = ksp.getPC()
pc.setType(PETSc.PC.Type.NONE)
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
rel = true_relative_residual(A, b, x)
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
destroy(PETSc, ksp, pc, A, x, b, ustar)
