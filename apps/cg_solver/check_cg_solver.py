#!/usr/bin/env python3
"""cg_solver end-to-end checks.

restart: for CG on the assembled poisson2d, for pipelined CG with Jacobi on the matrix-free
  poisson3d, for GMRES(8) with Jacobi on convdiff2d (checkpoints in the middle of a cycle: the
  Krylov basis is saved) and for BiCGStab with the Chebyshev preconditioner: an uninterrupted run at 2 ranks against a run that checkpoints every 20 iterations,
  restarted from iteration 20 at 2 ranks (the final x must be bitwise equal: crc32 of the whole
  vector, check.state_crc32 in the JSON, and the same iteration count and sum) and at 3 ranks (equal
  to roundoff: the iteration count within one, x's sum and the error against the known solution
  to 1e-9), and with --restart latest; the restarts give no option but --restart, and must take
  the problem, solver and tolerances from the checkpoint.
mm: a symmetric Matrix Market file (a shifted 2-D Laplacian, lower triangle) solved at 2 ranks;
  b = A 1, so x must be 1 to the tolerance. The same matrix as a general file with one entry
  changed is refused by CG (exit 1, one message naming the largest asymmetry and where, and
  --method gmres), runs with --no-symmetry-check, and is solved (x = 1) by --method gmres and
  --method bicgstab, which do not check symmetry. A graph Laplacian (row sums 0, so b = A 1 = 0) gives x = 0 with reason
  zero_rhs, 0 iterations, exit 0.

usage: check_cg_solver.py restart|mm MPIEXEC CG_SOLVER_EXE WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mode, mpiexec, exe, work = sys.argv[1:5]
apptest.fresh(work)


def run(np, name, args):
    return apptest.run(mpiexec, exe, np, args, os.path.join(work, name + ".json"), timeout=250)


def close(a, b, tol):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


def check_restart(label, common, err_rtol=1e-3):
    """err_rtol: how close the error against the known solution must be after the restart at 3 ranks
    (BiCGStab's last iterate, rebuilt preconditioner and all, differs there at the tolerance's level)."""
    r = apptest.restart_runs(run, os.path.join(work, label), common, every=20, keep=10, latest_ranks=2, label=label)
    ref, ckp, same, other, latest = r.ref, r.ckp, r.same, r.other, r.latest
    its = ref["check"]["iterations"]
    assert ref["check"]["converged"] and its > 30, ref["check"]
    assert same["run"]["first_step"] == 21 and other["run"]["first_step"] == 21, (same["run"], other["run"])
    assert latest["run"]["first_step"] == 20 * ((its - 1) // 20) + 1, latest["run"]
    # The problem, solver and tolerances came from the checkpoint.
    for key in ("name", "operator", "n", "rows", "nnz", "matrix_checksum", "solver", "precond", "rtol", "atol"):
        if same["problem"][key] != ref["problem"][key] or other["problem"][key] != ref["problem"][key]:
            sys.exit(f"FAIL: {label}: problem.{key} {same['problem'][key]!r} / {other['problem'][key]!r} after "
                     f"the restart, {ref['problem'][key]!r} before")
    # Bitwise: the whole x (crc32) and its sum; and the same iteration count.
    apptest.check_same_state(ref, (("checkpointing", ckp), ("restart-np2", same), ("restart-latest", latest)),
                             "x_sum", rel=0.0)
    for name, x in (("checkpointing", ckp), ("restart-np2", same), ("restart-latest", latest)):
        if x["check"]["iterations"] != its:
            sys.exit(f"FAIL: {label} {name}: {x['check']['iterations']} iterations, uninterrupted {its}")
    o, c = other["check"], ref["check"]
    if abs(o["iterations"] - its) > 1 or not close(o["x_sum"], c["x_sum"], 1e-9) \
            or not close(o["error_max"], c["error_max"], err_rtol) or not o["converged"]:
        sys.exit(f"FAIL: {label} restart-np3: {o['iterations']} iterations, sum {o['x_sum']!r}, error "
                 f"{o['error_max']!r}; uninterrupted {its}, {c['x_sum']!r}, {c['error_max']!r}")
    print(f"{label}: restarts bitwise equal at 2 ranks (crc32 {apptest.crc(ref)}, {its} "
          f"iterations); at 3 ranks sum {o['x_sum']!r} vs {c['x_sum']!r}")


if mode == "restart":
    check_restart("csr-cg", ["--problem", "poisson2d", "--n", "40", "--tol", "1e-10"])
    check_restart("stencil-pcg", ["--problem", "poisson3d", "--n", "12", "--tol", "1e-10", "--operator",
                                  "matrix-free", "--pipelined", "--precond", "jacobi"])
    check_restart("gmres", ["--problem", "convdiff2d", "--n", "24", "--peclet", "200", "--tol", "1e-10", "--method",
                            "gmres", "--gmres-restart", "8", "--precond", "jacobi"])
    # A Peclet number where BiCGStab with Chebyshev converges smoothly (48 iterations at 1-4 ranks, the
    # residual histories equal to 6 digits). At Peclet 500 the Chebyshev interval (real, from a power
    # estimate) misfits the operator's complex spectrum: the residual rose to 2e3 ||b|| before a late
    # convergence at 1-2 ranks, and the 3-rank run (another summation order) broke down at iteration
    # 23 - a chaotic iteration, where a restart at another rank count says nothing.
    check_restart("bicgstab-chebyshev", ["--problem", "convdiff2d", "--n", "64", "--peclet", "10", "--tol", "1e-12",
                                         "--method", "bicgstab", "--precond", "chebyshev"], err_rtol=0.5)
elif mode == "mm":
    # A = 2-D Laplacian on 15 x 15 plus 0.5 I, the lower triangle of a symmetric file.
    n = 15
    entries = []
    for i in range(n):
        for j in range(n):
            k = i * n + j + 1
            entries.append((k, k, 4.5))
            if i > 0:
                entries.append((k, k - n, -1.0))
            if j > 0:
                entries.append((k, k - 1, -1.0))
    path = os.path.join(work, "shifted.mtx")
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real symmetric\n% a shifted 2-D Laplacian\n")
        f.write(f"{n * n} {n * n} {len(entries)}\n")
        for r, c, v in entries:
            f.write(f"{r} {c} {v}\n")
    for extra in ([], ["--pipelined", "--precond", "jacobi"]):
        r = run(2, "mm" + "".join(extra), ["--problem", "mm", "--file", path, "--tol", "1e-10"] + extra)
        c = r["check"]
        if not (c["converged"] and r["problem"]["rows"] == n * n and c["error_max"] < 1e-8
                and c["true_relative_residual"] < 1e-9 and r["problem"]["file"] == os.path.abspath(path)):
            sys.exit(f"FAIL: mm {extra}: {r}")
    # The same matrix as a general file, a(8, 9) (1-based) changed from -1 to -0.25: not symmetric.
    general = os.path.join(work, "nonsymmetric.mtx")
    full = entries + [(c, r, -0.25 if (c, r) == (8, 9) else v) for r, c, v in entries if r != c]
    with open(general, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{n * n} {n * n} {len(full)}\n")
        for r, c, v in full:
            f.write(f"{r} {c} {v}\n")
    for np_ in (1, 2, 3):
        rc, out = apptest.launch(mpiexec, exe, np_, ["--problem", "mm", "--file", general], 60)
        want = "is not symmetric: the largest asymmetry is |a(7, 8) - a(8, 7)| = |-0.25 - -1| = 0.75"
        if rc != apptest.EXIT["error"] or out.count(want) != 1 or "use --method gmres" not in out:
            sys.exit(f"FAIL: a nonsymmetric matrix at {np_} ranks gave exit {rc} without the message '{want}' "
                     f"naming --method gmres: {out}")
    for method in ("gmres", "bicgstab"):
        r = run(2, "nonsymmetric-" + method, ["--problem", "mm", "--file", general, "--tol", "1e-10", "--method", method])
        c = r["check"]
        if not (c["converged"] and c["error_max"] < 1e-8 and r["problem"]["solver"] == method):
            sys.exit(f"FAIL: --method {method} on the nonsymmetric matrix: {c}")
    rc, out = apptest.launch(mpiexec, exe, 2, ["--problem", "mm", "--file", general, "--no-symmetry-check"], 60)
    if rc == apptest.EXIT["error"] or "not symmetric" in out:
        sys.exit(f"FAIL: --no-symmetry-check still checked (exit {rc})")
    # A graph Laplacian (a path of 10 nodes): b = A 1 = 0, so x = 0 (zero_rhs) at once.
    lap = os.path.join(work, "graph_laplacian.mtx")
    with open(lap, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real symmetric\n10 10 19\n")
        for k in range(1, 11):
            f.write(f"{k} {k} {1.0 if k in (1, 10) else 2.0}\n")
        for k in range(1, 10):
            f.write(f"{k + 1} {k} -1.0\n")
    r = run(2, "zero_rhs", ["--problem", "mm", "--file", lap])
    c = r["check"]
    if not (c["reason"] == "zero_rhs" and c["converged"] and c["iterations"] == 0 and c["x_sum"] == 0.0):
        sys.exit(f"FAIL: b = 0: {c}")
    # A missing file is one clear error and exit status 1.
    rc, out = apptest.launch(mpiexec, exe, 2, ["--problem", "mm", "--file", os.path.join(work, "missing.mtx")], 60)
    if rc != apptest.EXIT["error"] or out.count("missing.mtx") != 1:
        sys.exit(f"FAIL: a missing file gave exit {rc}: {out}")
    print("mm: converged to the vector of ones")
else:
    sys.exit(f"unknown mode {mode}")
