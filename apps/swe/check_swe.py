#!/usr/bin/env python3
"""swe check: the app at 1..MAXRANKS ranks (several process grids) against the NumPy program
(perf/peers/numpy_swe.py, run serially here), and the scheme's two invariants checked from
first principles:

Each problem runs for 200 steps at 1 and 2 ranks and for 100 steps at 1, 3 and 4 ranks.

- against NumPy: with HDF5 (--save, read with h5py) every final cell of w, hu, hv within
  TOL = 1e-12 of NumPy's, relative to the field's largest magnitude (the operations are NumPy's in
  NumPy's order; only libm's exp, used once for the initial hump, may differ by an ulp from
  NumPy's, and the minmod limiter and the wave speeds are continuous, so such a difference stays
  at roundoff); without HDF5 the sums of w, hu, hv to TOL times the sums of |x| (the lake's hu
  and hv, roundoff about zero, to n^2 STILL_TOL), the simulated time to TOL;
- bitwise the same final state at every rank count and process grid (check.state_crc32, HDF5);
- mass: the closed basin conserves sum(h) dx dy; the script computes the initial mass itself
  (math.fsum of NumPy's initial state) and requires |mass - mass0| <= MASS_TOL mass0 for the
  app's reported mass and (HDF5) for math.fsum of the saved final state;
- lake at rest over uneven topography (the well-balanced property): after STEPS steps the water
  stays still, max |hu|, |hv| <= STILL_TOL, and flat, max |w - 1| <= STILL_TOL.

The problems: gaussian (a hump over a hill and a slope), dambreak (onto a dry bed: dry and
nearly dry cells, the desingularised velocity and the positivity fix), lake. The grids of 3
and 4 ranks are uneven; with n = 8 over 4 ranks along one axis (blocks of 3 rows or columns) the
outer ghost layer of each wall mirrors a cell of the next rank, read from the halo.

usage: check_swe.py MPIEXEC SWE_EXE WORKDIR MAXRANKS [HDF5]
"""
import math
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "perf", "peers"))
sys.path.insert(0, os.path.join(here, "..", "common"))
import apptest  # noqa: E402
import numpy_swe  # noqa: E402

mpiexec, exe, work, maxranks, hdf5 = apptest.check_args()
if hdf5:
    import h5py

N, STEPS, CFL, THETA = 20, 200, 0.25, 1.3
TOL, MASS_TOL, STILL_TOL = 1e-12, 1e-13, 1e-12
I = (slice(2, -2), slice(2, -2))


def run(np_, problem, extra, save, n, steps):
    name = f"{problem}-n{n}-s{steps}-np{np_}{''.join(extra).replace('-', '_').replace(',', 'x')}"
    args = ["--n", n, "--steps", steps, "--problem", problem, "--cfl", CFL, "--theta", THETA, "--monitor", 0] + extra
    h5 = os.path.join(work, name + ".h5") if save else None
    r = apptest.run(mpiexec, exe, np_, args + (["--save", h5] if h5 else []), os.path.join(work, name + ".json"))
    pb = r["problem"]
    if (pb["n"], pb["steps"], pb["name"], pb["shape"], r["ranks"]) != (n, steps, problem, [n + 4, n + 4], np_):
        sys.exit(f"FAIL: unexpected JSON {r}")
    return r, h5


def check_problem(problem, runs, n=N, steps=STEPS):
    grid, w, hu, hv, t, w0 = numpy_swe.run(n, steps, problem, CFL, THETA)
    ref = {"w": w[I], "hu": hu[I], "hv": hv[I]}
    mass0 = math.fsum((w0[I] - grid.Bc[I]).ravel()) * grid.dx * grid.dy
    print(f"numpy {problem}: {n} x {n} cells, {steps} steps, t {t!r}, mass0 {mass0!r}", flush=True)
    if problem == "lake":
        # The reference itself must stay at rest: the scheme is well balanced.
        still = max(float(np.max(np.abs(hu[I]))), float(np.max(np.abs(hv[I]))), float(np.max(np.abs(w[I] - 1.0))))
        if still > STILL_TOL:
            sys.exit(f"FAIL: numpy's lake moved by {still!r}")
    crcs = set()
    for np_, extra in runs:
        if np_ > maxranks:
            continue
        r, h5 = run(np_, problem, extra, hdf5, n, steps)
        c = r["check"]
        if abs(c["time"] - t) > TOL * t:
            sys.exit(f"FAIL: {np_} ranks {extra}: time {c['time']!r} vs numpy {t!r}")
        for f in ("w", "hu", "hv"):
            scale = float(np.sum(np.abs(ref[f])))
            tol = TOL * max(scale, 1e-300)
            if problem == "lake" and f != "w":
                # The lake's momentum is roundoff (checked below: max |hu|, |hv| <= STILL_TOL), and
                # roundoff is not NumPy's where a GPU compiler contracts a * b + c into an fma.
                tol = STILL_TOL * n * n
            if abs(c["sum_" + f] - float(np.sum(ref[f]))) > tol:
                sys.exit(f"FAIL: {np_} ranks {extra}: sum {f} {c['sum_' + f]!r} vs numpy {float(np.sum(ref[f]))!r}")
        if abs(c["mass"] - mass0) > MASS_TOL * mass0 or abs(c["mass_initial"] - mass0) > MASS_TOL * mass0:
            sys.exit(f"FAIL: {np_} ranks {extra}: mass {c['mass']!r} (initial {c['mass_initial']!r}), "
                     f"expected {mass0!r} to {MASS_TOL} relative")
        if problem == "lake":
            still = max(c["max_abs_hu"], c["max_abs_hv"], abs(c["w_min"] - 1.0), abs(c["w_max"] - 1.0))
            if still > STILL_TOL:
                sys.exit(f"FAIL: {np_} ranks {extra}: the lake at rest moved: {c}")
        crcs.add(tuple(sorted(apptest.crc(r).items())))
        if h5:
            with h5py.File(h5, "r") as f5:
                got = {f: f5[f][...][I] for f in ref}
            for f, x in ref.items():
                d = float(np.max(np.abs(got[f] - x)))
                scale = float(np.max(np.abs(x)))
                if d > TOL * max(scale, 1e-300) and not (problem == "lake" and f != "w" and d <= STILL_TOL):
                    sys.exit(f"FAIL: {np_} ranks {extra}: {f} differs from numpy by up to {d!r} (max |x| {scale!r})")
                print(f"  {f}: max |ours - numpy| = {d!r}{' (bitwise equal)' if d == 0 else ''}")
            mass = math.fsum((got["w"] - grid.Bc[I]).ravel()) * grid.dx * grid.dy
            if abs(mass - mass0) > MASS_TOL * mass0:
                sys.exit(f"FAIL: {np_} ranks {extra}: the saved state's mass {mass!r} vs the initial {mass0!r}")
            if problem == "lake":
                still = max(float(np.max(np.abs(got["hu"]))), float(np.max(np.abs(got["hv"]))),
                            float(np.max(np.abs(got["w"] - 1.0))))
                if still > STILL_TOL:
                    sys.exit(f"FAIL: {np_} ranks {extra}: the saved lake moved by {still!r}")
                print(f"  lake: max |hu|, |hv|, |w - 1| = {still!r}")
            print(f"  mass (fsum of the saved state) {mass!r}: relative change {(mass - mass0) / mass0:.3g}")
    if hdf5 and len(crcs) != 1:
        sys.exit(f"FAIL: {problem}: the final states differ across rank counts or grids (crc32 {crcs})")
    print(f"swe {problem}: equal to numpy to {TOL}; mass conserved to {MASS_TOL}; the same state at every rank "
          f"count (crc32 {crcs.pop()})", flush=True)


# Each problem for 200 steps at 1 and 2 ranks, and for 100 at 1, 3 and 4 ranks (the 3- and
# 4-rank runs are the slow ones on 2 busy cores: a message round per halo exchange, 10 per step).
for steps, runs in ((200, {"gaussian": [(2, [])], "dambreak": [(2, ["--grid", "2,1"])], "lake": [(2, ["--grid", "1,2"])]}),
                    (100, {"gaussian": [(3, ["--grid", "1,3"]), (4, [])], "dambreak": [(4, ["--grid", "1,4"])],
                           "lake": [(3, ["--grid", "3,1"])]})):
    for problem, more in runs.items():
        check_problem(problem, [(1, [])] + more, steps=steps)
# Blocks of 3 rows or columns (12 = 8 cells + 4 ghosts over 4 ranks): each wall's outer ghost
# layer mirrors a cell of the next rank, read from the halo.
check_problem("gaussian", [(1, []), (4, ["--grid", "1,4"]), (4, ["--grid", "4,1"])], n=8, steps=100)
print("swe: all checks passed")
