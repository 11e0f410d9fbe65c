#!/usr/bin/env python3
"""NumPy's NaN, ddof and signed-zero rules: the library against NumPy itself.

    numpy_edges.py MPIEXEC NUMPY_EDGES_DRIVER WORKDIR RANKS [--preflags=P]

Runs NUMPY_EDGES_DRIVER (tests/numpy_edges_driver.cpp) at each rank count of RANKS (e.g. 1,2;
test_numpy_edges covers 1-4 ranks against serial references, so CI runs this at 1 and 2 ranks:
an oversubscribed 3-rank run costs tens of seconds on a loaded 2-core machine); each run writes
one line per case (operands and result as bits). For every line this script computes the same
with NumPy and compares: min / max / norm_inf: NaN where NumPy's is NaN, else the same value
(the sign of a +0/-0 tie and which NaN are not specified for reductions); argmin / argmax: the
same index; var / std: inf, NaN and the sign as NumPy, finite values to rounding; minimum /
maximum: the same bits. Exit 77 (skipped) without NumPy.
"""
import argparse
import os
import shutil
import subprocess
import sys
import warnings

try:
    import numpy as np
except ImportError:
    print("numpy_edges: NumPy not found: skipped")
    sys.exit(77)

UINT = {"float64": np.uint64, "float32": np.uint32}


def parse(tok, dtype):
    if tok == "-":
        return None
    if dtype in UINT:
        return np.array([int(h, 16) for h in tok.split(",")], dtype=UINT[dtype]).view(dtype)
    return np.array([int(x) for x in tok.split(",")], dtype=np.int64)


def numpy_result(op, a, b, axis, ddof):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op in ("minimum", "maximum"):
            return getattr(np, op)(a, b).ravel()
        if op == "norm_inf":
            return np.array([np.linalg.norm(a.ravel(), np.inf)], dtype=a.dtype)
        if op in ("var", "std"):
            return np.atleast_1d(getattr(np, op)(a, axis=axis, ddof=ddof)).ravel()
        return np.atleast_1d(getattr(np, op)(a, axis=axis)).ravel()


def same(op, dtype, got, want):
    if got.shape != want.shape:
        return False
    if op in ("argmin", "argmax") or dtype not in UINT:
        return bool(np.all(got == want.astype(got.dtype)))
    if op in ("minimum", "maximum"):  # bit for bit
        return bool(np.all(got.view(UINT[dtype]) == want.astype(dtype).view(UINT[dtype])))
    gn, wn = np.isnan(got), np.isnan(want)
    if not np.array_equal(gn, wn):
        return False
    g, w = got[~gn].astype(np.float64), want[~wn].astype(np.float64)
    if op in ("var", "std"):
        rtol = 1e-12 if dtype == "float64" else 1e-5
        fin = np.isfinite(w)
        return bool(np.all(g[~fin] == w[~fin]) and np.all(np.abs(g[fin] - w[fin]) <= rtol * np.maximum(1, np.abs(w[fin]))))
    return bool(np.all(g == w))


def check(path, ranks):
    bad = n = 0
    with open(path) as f:
        for line in f:
            name, dtype, op, axis, ddof, shape, ta, tb, tr = line.split()
            rows, cols = (int(x) for x in shape.split("x"))
            a = parse(ta, dtype).reshape(rows, cols)
            b = parse(tb, dtype)
            b = None if b is None else b.reshape(rows, cols)
            got = parse(tr, dtype) if op not in ("argmin", "argmax") else parse(tr, "int64")
            want = numpy_result(op, a, b, None if axis == "-" else int(axis), int(ddof))
            n += 1
            if not same(op, dtype, got, want):
                bad += 1
                print("numpy_edges: MISMATCH at %d ranks: %s %s %s axis %s ddof %s\n  got  %s\n  numpy %s"
                      % (ranks, name, dtype, op, axis, ddof, got, want))
    return n, bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpiexec")
    ap.add_argument("exe")
    ap.add_argument("workdir")
    ap.add_argument("ranks")
    ap.add_argument("--preflags", default="")
    a = ap.parse_args()
    pre = [f for f in a.preflags.split(";") if f]
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    total = failed = 0
    counts = [int(r) for r in a.ranks.split(",")]
    for ranks in counts:
        out = os.path.join(a.workdir, "np%d.txt" % ranks)
        cmd = [a.mpiexec, "-n", str(ranks)] + pre + [a.exe, out]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        if p.returncode != 0:
            sys.stdout.write(p.stdout)
            print("numpy_edges: FAILED: %s exited with %d" % (" ".join(cmd), p.returncode))
            return 1
        n, bad = check(out, ranks)
        total += n
        failed += bad
    print("numpy_edges: %d results at %s ranks against NumPy %s: %s"
          % (total, a.ranks, np.__version__, "all agree" if failed == 0 else "%d differ" % failed))
    return 0 if failed == 0 and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
