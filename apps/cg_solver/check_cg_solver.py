#!/usr/bin/env python3
"""cg_solver end-to-end checks.

restart: for CG on the assembled poisson2d and for pipelined CG with Jacobi on the matrix-free
  poisson3d: an uninterrupted run at 2 ranks against a run that checkpoints every 20 iterations,
  restarted from iteration 20 at 2 ranks (the final x must be bitwise equal: crc32 of the whole
  vector, `state_crc32` in the JSON, and the same iteration count and sum) and at 3 ranks (equal to roundoff: the iteration
  count within one, x's sum and the error against the known solution to 1e-9), and with
  --restart latest.
mm: a symmetric Matrix Market file (a shifted 2-D Laplacian, lower triangle) solved at 2 ranks;
  b = A 1, so x must be 1 to the tolerance.

usage: check_cg_solver.py restart|mm MPIEXEC CG_SOLVER_EXE WORKDIR
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mode, mpiexec, exe, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(np, name, args):
    return apptest.run(mpiexec, exe, np, args, os.path.join(work, name + ".json"), timeout=250)


def close(a, b, tol):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


def check_restart(label, common):
    r = apptest.restart_runs(run, os.path.join(work, label), common, every=20, keep=10, latest_ranks=2, label=label)
    ref, ckp, same, other, latest = r.ref, r.ckp, r.same, r.other, r.latest
    assert ref["converged"] and ref["iterations"] > 30, ref
    assert same["first_iteration"] == 20 and other["first_iteration"] == 20, (same, other)
    assert latest["first_iteration"] == 20 * ((ref["iterations"] - 1) // 20), latest
    # Bitwise: the whole x (crc32) and its sum; and the same iteration count.
    apptest.check_same_state(ref, (("checkpointing", ckp), ("restart-np2", same), ("restart-latest", latest)),
                             "x_sum", rel=0.0)
    for name, r in (("checkpointing", ckp), ("restart-np2", same), ("restart-latest", latest)):
        if r["iterations"] != ref["iterations"]:
            sys.exit(f"FAIL: {label} {name}: {r['iterations']} iterations, uninterrupted {ref['iterations']}")
    if abs(other["iterations"] - ref["iterations"]) > 1 or not close(other["x_sum"], ref["x_sum"], 1e-9) \
            or not close(other["error_max"], ref["error_max"], 1e-3) or not other["converged"]:
        sys.exit(f"FAIL: {label} restart-np3: {other['iterations']} iterations, sum {other['x_sum']!r}, error "
                 f"{other['error_max']!r}; uninterrupted {ref['iterations']}, {ref['x_sum']!r}, {ref['error_max']!r}")
    print(f"{label}: restarts bitwise equal at 2 ranks (crc32 {ref['state_crc32']:#010x}, {ref['iterations']} "
          f"iterations); at 3 ranks sum {other['x_sum']!r} vs {ref['x_sum']!r}")


if mode == "restart":
    check_restart("csr-cg", ["--problem", "poisson2d", "--n", "40", "--tol", "1e-10"])
    check_restart("stencil-pcg", ["--problem", "poisson3d", "--n", "12", "--tol", "1e-10", "--operator",
                                  "matrix-free", "--pipelined", "--precond", "jacobi"])
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
        if not (r["converged"] and r["rows"] == n * n and r["error_max"] < 1e-8 and r["true_relative_residual"] < 1e-9):
            sys.exit(f"FAIL: mm {extra}: {r}")
    # A missing file is one clear error and a non-zero exit.
    p = subprocess.run([mpiexec, "-n", "2", exe, "--problem", "mm", "--file", os.path.join(work, "missing.mtx")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if p.returncode == 0 or "missing.mtx" not in p.stdout:
        sys.exit(f"FAIL: a missing file gave exit {p.returncode}: {p.stdout}")
    print("mm: converged to the vector of ones")
else:
    sys.exit(f"unknown mode {mode}")
