#!/usr/bin/env python3
"""spmd::solvers' GMRES, FGMRES and BiCGStab against SciPy (scipy.sparse.linalg.gmres and bicgstab).

Each case is solved by both with the same matrix (written here as a Matrix Market file), the same
right side, restart, tolerances and iteration limit, from x = 0, and compared:
  * the verdict: converged on both sides, or on neither (SciPy's info == 0 with its true residual
    within 1.1 tol, against our SolveResult::converged, which the true residual decides too);
  * the iteration counts, within max(2, 3%) when both converge (see below for what is counted);
  * the solutions, in the residual norm: ||A (x_ours - x_scipy)|| <= 2.2 rtol ||b|| (each side's
    residual is within the tolerance, ours within 1.1 rtol), and their relative difference is
    printed.

What is counted. SciPy 1.10's gmres counts restart cycles in `maxiter` unless it is given a
callback with callback_type='legacy', which makes `maxiter` count inner iterations and calls the
callback once per inner iteration: that is what is counted here, as our iterations count Arnoldi
steps. SciPy's gmres preconditions on the LEFT (its inner test is on M r); ours on the right (the
true residual's recursion), so a preconditioned case is given to SciPy as the right-preconditioned
system (A M) u = b, x = M u (a LinearOperator), which is what our GMRES iterates. SciPy's bicgstab
(the Templates algorithm) preconditions on the right as ours does; its callback runs once per
iteration.

usage: krylov_scipy.py MPIEXEC DRIVER WORKDIR MAXRANKS [--table FILE]
Cases run at 1..MAXRANKS ranks (fewer cases at 3-4 ranks: more ranks than the CI machine's cores).
"""
import json
import math
import os
import subprocess
import sys

try:
    import numpy as np
    import scipy
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

# SciPy >= 1.12 names the relative tolerance rtol (1.14 removed tol); Debian 12's 1.10 has only tol.
import inspect  # noqa: E402

TOL = "rtol" if "rtol" in inspect.signature(spla.gmres).parameters else "tol"

mpiexec, driver, work, maxranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
table = sys.argv[sys.argv.index("--table") + 1] if "--table" in sys.argv else None
os.makedirs(work, exist_ok=True)


def convdiff(nx, ny, pe):
    """spmd::sparse::convection_diffusion2d (docs/api/sparse.md), built from its definition."""
    w = 1 / math.sqrt(2)
    c0, c1 = pe * w / (nx + 1), pe * w / (ny + 1)
    rows, cols, vals = [], [], []
    for i in range(nx):
        for j in range(ny):
            k = i * ny + j
            entries = [(k, 4 + c0 + c1)]
            if i > 0:
                entries.append((k - ny, -1 - c0))
            if j > 0:
                entries.append((k - 1, -1 - c1))
            if j + 1 < ny:
                entries.append((k + 1, -1.0))
            if i + 1 < nx:
                entries.append((k + ny, -1.0))
            for c, v in entries:
                rows.append(k)
                cols.append(c)
                vals.append(v)
    return sp.csr_matrix((vals, (rows, cols)), shape=(nx * ny, nx * ny))


def path_laplacian(n):
    """The path graph's Laplacian: singular, A 1 = 0."""
    d = np.full(n, 2.0)
    d[0] = d[-1] = 1.0
    return sp.diags([-np.ones(n - 1), d, -np.ones(n - 1)], [-1, 0, 1]).tocsr()


def write_mtx(path, a):
    a = a.tocoo()
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{a.shape[0]} {a.shape[1]} {a.nnz}\n")
        for r, c, v in zip(a.row, a.col, a.data):
            f.write(f"{r + 1} {c + 1} {float(v)!r}\n")


def rhs(n, seed):
    return np.random.default_rng(seed).uniform(-1, 1, n)


# ---- the cases: (name, matrix, right side, [(method, precond, restart, rtol, atol, maxiter)], ranks)
rng_scales = np.random.default_rng(5)
cd = convdiff(24, 20, 50.0)
cd_hard = convdiff(32, 30, 1000.0)
lap = convdiff(12, 10, 0.0)
indefinite = (lap - 0.3 * sp.identity(lap.shape[0])).tocsr()  # the smallest eigenvalue of lap is 0.15
path = path_laplacian(60)
scale = sp.diags(10.0 ** rng_scales.uniform(-6, 6, 16 * 16))
badly_scaled = (scale @ convdiff(16, 16, 20.0)).tocsr()  # rows scaled by 1e-6 .. 1e6
e0 = np.zeros(60)
e0[0] = 1.0
all_ranks = list(range(1, maxranks + 1))
few = [r for r in all_ranks if r <= 2]
cases = [
    ("convdiff_pe50", cd, rhs(cd.shape[0], 1),
     [("gmres", "none", 10, 1e-8, 0.0, 2000), ("gmres", "none", 30, 1e-8, 0.0, 2000),
      ("gmres", "jacobi", 10, 1e-8, 0.0, 2000), ("fgmres", "jacobi", 10, 1e-8, 0.0, 2000),
      ("bicgstab", "none", 0, 1e-8, 0.0, 2000), ("bicgstab", "jacobi", 0, 1e-8, 0.0, 2000)], all_ranks),
    ("convdiff_pe1000", cd_hard, rhs(cd_hard.shape[0], 2),
     [("gmres", "none", 20, 1e-7, 0.0, 3000), ("bicgstab", "none", 0, 1e-7, 0.0, 3000),
      ("bicgstab", "jacobi", 0, 0.0, 1e-6, 3000)], few),
    ("indefinite", indefinite, rhs(indefinite.shape[0], 3),
     [("gmres", "none", 150, 1e-8, 0.0, 600), ("gmres", "none", 10, 1e-8, 0.0, 300)], few),
    ("singular_consistent", path, path @ rhs(60, 4),
     [("gmres", "none", 80, 1e-8, 0.0, 500), ("bicgstab", "none", 0, 1e-8, 0.0, 500)], few),
    ("singular_inconsistent", path, e0,
     [("gmres", "none", 20, 1e-8, 0.0, 100), ("bicgstab", "none", 0, 1e-8, 0.0, 100)], few),
    ("badly_scaled", badly_scaled, rhs(badly_scaled.shape[0], 6),
     [("gmres", "none", 30, 1e-8, 0.0, 300), ("gmres", "jacobi", 30, 1e-8, 0.0, 300),
      ("bicgstab", "jacobi", 0, 1e-8, 0.0, 300)], few),
]


def scipy_solve(a, b, method, precond, restart, rtol, atol, maxiter):
    """(iterations, info, x) from SciPy, counted as the module docstring says."""
    n = a.shape[0]
    dinv = 1.0 / a.diagonal() if precond == "jacobi" else None
    its = [0]

    def count(*_):
        its[0] += 1
    if method in ("gmres", "fgmres"):
        op = a
        if dinv is not None:  # right preconditioning: (A D^-1) u = b, x = D^-1 u
            op = spla.LinearOperator((n, n), matvec=lambda v: a @ (dinv * v), dtype=float)
        u, info = spla.gmres(op, b, **{TOL: rtol}, atol=atol, restart=restart, maxiter=maxiter, callback=count,
                             callback_type="legacy")
        x = dinv * u if dinv is not None else u
    else:
        m = sp.diags(dinv) if dinv is not None else None
        x, info = spla.bicgstab(a, b, **{TOL: rtol}, atol=atol, maxiter=maxiter, M=m, callback=count)
    return its[0], info, x


# Write the matrices and right sides; compute SciPy's answers once.
lines, expect = [], {}
for name, a, b, runs, ranks in cases:
    mtx, rhs_path = os.path.join(work, name + ".mtx"), os.path.join(work, name + ".rhs")
    write_mtx(mtx, a)
    np.savetxt(rhs_path, b, fmt="%.17g")
    for (method, precond, restart, rtol, atol, maxiter) in runs:
        key = f"{name}/{method}/{precond}/{restart}/{rtol:g}/{atol:g}"
        expect[key] = (a, b, method, precond, restart, rtol, atol, scipy_solve(a, b, method, precond, restart, rtol, atol,
                                                                                maxiter), ranks)
        lines.append((ranks, f"{key} {method} {precond} {max(restart, 1)} {float(rtol)!r} {float(atol)!r} {maxiter} {mtx} {rhs_path}"))

failures, rows = [], []
for np_ in all_ranks:
    cases_file = os.path.join(work, f"cases_np{np_}.txt")
    with open(cases_file, "w") as f:
        for ranks, line in lines:
            if np_ in ranks:
                f.write(line + "\n")
    out = os.path.join(work, f"ours_np{np_}.json")
    cmd = [mpiexec, "-n", str(np_), driver, cases_file, out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false"))
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {r.returncode}:\n{r.stdout}\n{r.stderr}")
    for o in json.load(open(out)):
        a, b, method, precond, restart, rtol, atol, (s_its, s_info, s_x), _ = expect[o["name"]]
        x = np.array([np.nan if v is None else v for v in o["x"]])
        bn = np.linalg.norm(b)
        ours_rel = np.linalg.norm(b - a @ x) / bn
        scipy_rel = np.linalg.norm(b - a @ s_x) / bn
        diff_res = np.linalg.norm(a @ (x - s_x)) / bn
        diff_x = np.linalg.norm(x - s_x) / max(np.linalg.norm(s_x), 1e-300)
        tol = max(rtol, atol / bn)
        # SciPy's info == 0 is its recursive residual's verdict; its true residual decides here, as
        # ours does (SciPy 1.10's bicgstab reports info 0 on the badly scaled case with a true
        # residual 1000 times the tolerance).
        s_conv = s_info == 0 and scipy_rel <= 1.1 * tol * (1 + 1e-12)
        ok = o["converged"] == s_conv
        why = []
        if not ok:
            why.append(f"verdict: ours {o['reason']} ({o['detail']}), SciPy info {s_info}")
        if ok and s_conv:
            if abs(o["iterations"] - s_its) > max(2, 0.03 * s_its):
                why.append(f"iterations {o['iterations']} vs SciPy's {s_its}")
            if not diff_res <= 2.2 * tol:
                why.append(f"||A (x - x_scipy)|| / ||b|| = {diff_res:.3g} > 2.2 x {tol:g}")
            if not ours_rel <= 1.1 * tol * (1 + 1e-12):
                why.append(f"our true relative residual {ours_rel:.3g} above 1.1 x {tol:g}")
        if o["converged"] and not np.isfinite(x).all():
            why.append("x holds non-finite values")
        s_verdict = str(s_info) + ("" if s_conv or s_info != 0 else " (true residual above tol)")
        row = (o["name"], np_, o["iterations"], s_its, o["reason"], s_verdict, ours_rel, scipy_rel, diff_res, diff_x)
        rows.append(row)
        if why:
            failures.append(f"{o['name']} at {np_} ranks: " + "; ".join(why))

header = ("| case / method / precond / restart / rtol / atol | ranks | iterations ours / SciPy | verdict ours / SciPy info "
          "| true residual ours / SciPy | ‖A(x − x_SciPy)‖/‖b‖ | ‖x − x_SciPy‖/‖x_SciPy‖ |")
out_lines = [f"SciPy {scipy.__version__}, NumPy {np.__version__}", "", header, "|---|---|---|---|---|---|---|"]
for (name, np_, its, s_its, reason, s_info, orel, srel, dres, dx) in rows:
    out_lines.append(f"| {name} | {np_} | {its} / {s_its} | {reason} / {s_info} | {orel:.2e} / {srel:.2e} | {dres:.1e} "
                     f"| {dx:.1e} |")
print("\n".join(out_lines))
if table:
    with open(table, "w") as f:
        f.write("\n".join(out_lines) + "\n")
if failures:
    sys.exit("FAIL:\n  " + "\n  ".join(failures))
print(f"krylov_scipy: {len(rows)} solves agree with SciPy")
