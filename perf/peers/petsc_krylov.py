#!/usr/bin/env python3
"""apps/cg_solver's GMRES, BiCGStab and multigrid-preconditioned CG problems, in PETSc (petsc4py):
the peer side of perf/peers/petsc_krylov.sh.

The same matrices as spmd::sparse (petsc_common.py: convection_diffusion2d with --peclet, or the
2-D / 3-D Dirichlet Laplacian), assembled as a MATMPIAIJ with PETSc's default (balanced block) row
ownership, the same right side b = A u* (u* the splitmix64 field of cg_solver), x0 = 0, rtol
--tol, atol 0, at most --max-iters iterations, and

  --ksp gmres    KSPGMRES(--restart) (PETSc's default Gram-Schmidt: classical, refinement only
                 when needed; -ksp_gmres_cgs_refinement_type refine_always is CGS2 as ours)
  --ksp bcgs     KSPBCGS
  --ksp cg       KSPCG (the matrix marked SPD)
  --pc none|jacobi|gamg   (gamg: PCGAMG with PETSc's defaults: smoothed aggregation, Chebyshev
                 smoothing; any -pc_gamg_* option on the command line goes to PETSc)

with right preconditioning and the unpreconditioned residual norm for GMRES and BiCGStab (as
ours: the stopping test is on ||b - A x||'s recursion, not on M^-1 r), PETSc's default for CG
(the preconditioned norm). Times KSPSetUp (the preconditioner's setup) and KSPSolve apart, on
rank 0 after a barrier.

  PETSC_DIR=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real \\
  mpiexec.openmpi --allow-run-as-root --oversubscribe -n 2 /usr/bin/python3 petsc_krylov.py \\
      --problem convdiff2d --n 512 --ksp gmres --restart 30 --tol 1e-8 [--json out.json]
"""
import json
import sys

import petsc4py

petsc4py.init([a for a in sys.argv[1:] if a.startswith("-") and not a.startswith("--")])
from petsc4py import PETSc  # noqa: E402

from petsc_common import arguments, destroy, known_rhs, stencil_matrix, true_relative_residual  # noqa: E402

p = arguments(512)
p.add_argument("--problem", choices=["convdiff2d", "poisson2d", "poisson3d"], default="convdiff2d")
p.add_argument("--peclet", type=float, default=100.0)
p.add_argument("--ksp", choices=["gmres", "bcgs", "cg"], default="gmres")
p.add_argument("--pc", choices=["none", "jacobi", "gamg"], default="none")
p.add_argument("--restart", type=int, default=30)
args, _ = p.parse_known_args()

comm = PETSc.COMM_WORLD
n = args.n
shape = (n, n, n) if args.problem == "poisson3d" else (n, n)
A, lo, hi = stencil_matrix(PETSc, comm, shape, args.peclet if args.problem == "convdiff2d" else None)
if args.problem != "convdiff2d":
    A.setOption(PETSc.Mat.Option.SPD, True)
ustar, b = known_rhs(A, lo, hi)
x = b.duplicate()
x.set(0.0)

ksp = PETSc.KSP().create(comm)
ksp.setOperators(A)
ksp.setType({"gmres": PETSc.KSP.Type.GMRES, "bcgs": PETSc.KSP.Type.BCGS, "cg": PETSc.KSP.Type.CG}[args.ksp])
if args.ksp == "gmres":
    ksp.setGMRESRestart(args.restart)
pc = ksp.getPC()
pc.setType({"none": PETSc.PC.Type.NONE, "jacobi": PETSc.PC.Type.JACOBI, "gamg": PETSc.PC.Type.GAMG}[args.pc])
if args.ksp != "cg":
    ksp.setPCSide(PETSc.PC.Side.RIGHT)
    ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
ksp.setTolerances(rtol=args.tol, atol=0.0, max_it=args.max_iters)
ksp.setInitialGuessNonzero(False)
ksp.setFromOptions()
comm.barrier()
t0 = PETSc.Log.getTime()
ksp.setUp()
comm.barrier()
t1 = PETSc.Log.getTime()
ksp.solve(b, x)
comm.barrier()
t2 = PETSc.Log.getTime()
its = ksp.getIterationNumber()
rel = true_relative_residual(A, b, x)
err = x.copy()
err.axpy(-1.0, ustar)
max_error = err.norm(PETSc.NormType.INFINITY)  # collective
if comm.getRank() == 0:
    setup, solve = t1 - t0, t2 - t1
    per = solve / its if its else 0.0
    what = f"KSP{args.ksp.upper()}" + (f"({args.restart})" if args.ksp == "gmres" else "") + f" + PC{args.pc.upper()}"
    print(f"petsc: {args.problem} n {n} ({A.getSize()[0]} unknowns), {comm.getSize()} ranks, {what}: "
          f"{its} iterations ({ksp.getConvergedReason()}), ||b - Ax||/||b|| {rel:.3e}, max error "
          f"{max_error:.3e}, setup {setup:.4f} s, solve {solve:.4f} s, "
          f"{1e3 * per:.4f} ms/iteration")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"peer": "petsc", "version": ".".join(map(str, PETSc.Sys.getVersion())),
                       "problem": args.problem, "n": n, "ranks": comm.getSize(), "ksp": args.ksp, "pc": args.pc,
                       "restart": args.restart, "iterations": its, "reason": int(ksp.getConvergedReason()),
                       "true_relative_residual": rel, "max_error": max_error, "setup_seconds": setup, "seconds": solve,
                       "seconds_per_iteration": per}, f)
destroy(PETSc, ksp, pc, A, x, b, ustar, err)
