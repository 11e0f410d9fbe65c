#!/usr/bin/env python3
"""cfd check: the app at 1..MAXRANKS ranks on small grids, on several process grids, with the
periodic halo and with --moved-columns, against NumPy's step 12 (perf/peers/numpy_cfd.py) run
serially here.

- The check values (sums of the final u, v, p) must equal NumPy's to roundoff:
  |ours - numpy| <= 1e-12 * sum(|x|) of NumPy's field. On CPUs each element is NumPy's bit for
  bit (the same operations in the same order); only the order of the sum differs, and two
  orders of a sum of n terms differ by at most 2 (n - 1) u sum(|x|) (u = 2^-53), 8.7e-14 sum(|x|)
  for the 391 points here; 1e-12 leaves room for builds that contract a * b + c into FMAs. The scale is
  sum(|x|), not |sum(x)|: the sum of v cancels (0.0036 against a sum(|v|) of 6.9 on 23 x 17).
- The final fields must be the same bit for bit at every rank count, process grid and form
  (CRC-32 of u, v, p; builds with HDF5, where the app computes it).
- Element by element (builds with HDF5, HDF5 = 1: --save, read with h5py):
  max |ours - numpy| <= 1e-12 max |x|.

The grids are uneven over 3 and 4 ranks; on the 7 x 5 grid single rows and columns sit alone on
a rank, so the wall conditions (p[-1, :] = p[-2, :]) and the periodic columns read through halos
filled from other ranks. Runs start from --perturb 0.1 (so that v, p and every column differ),
and once from rest, as cuNumeric does (then v = 0 and p = 1 throughout). --overlap (the pressure
sweeps' exchanges overlapping their interior) runs at MAXRANKS in both forms: the same fields.

usage: check_cfd.py MPIEXEC CFD_EXE WORKDIR MAXRANKS [HDF5]
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "perf", "peers"))
sys.path.insert(0, os.path.join(here, "..", "common"))
import apptest  # noqa: E402
import numpy_cfd  # noqa: E402

mpiexec, exe, work, maxranks, hdf5 = apptest.check_args()
if hdf5:
    import h5py

NIT, WARMUP, STEPS, AMPLITUDE, TOL = 5, 1, 7, 0.1, 1e-12


def reference(nx, ny, amplitude):
    """NumPy's u, v, p after WARMUP + STEPS steps (the app's --perturb start when amplitude != 0)."""
    k = numpy_cfd.Physics(nx, ny)
    u, v, p = numpy_cfd.initialize(nx, ny)
    j, i = np.indices((ny, nx))
    u[:] = amplitude * ((3 * i + 5 * j) % 7 - 3) / 7
    v[:] = amplitude * ((2 * i + 7 * j) % 5 - 2) / 5
    for _ in range(WARMUP + STEPS):
        p = numpy_cfd.step(k, u, v, p, NIT)
    return {"u": u, "v": v, "p": p}


def run(np_, nx, ny, amplitude, extra, save):
    name = f"{nx}x{ny}-np{np_}{''.join(extra).replace('-', '_').replace(',', 'x')}-a{amplitude}"
    args = ["--nx", str(nx), "--ny", str(ny), "--nit", str(NIT), "--warmup", str(WARMUP), "--steps", str(STEPS),
            "--perturb", str(amplitude)] + extra
    h5 = os.path.join(work, name + ".h5") if save else None
    r = apptest.run(mpiexec, exe, np_, args + (["--save", h5] if h5 else []), os.path.join(work, name + ".json"))
    pb = r["problem"]
    if (pb["nx"], pb["ny"], pb["nit"], pb["warmup"], pb["steps"], r["ranks"]) != (nx, ny, NIT, WARMUP, STEPS, np_):
        sys.exit(f"FAIL: unexpected JSON {r}")
    return r, h5


def check_case(nx, ny, amplitude, runs):
    ref = reference(nx, ny, amplitude)
    sums = {f: float(np.sum(x)) for f, x in ref.items()}
    scale = {f: float(np.sum(np.abs(x))) for f, x in ref.items()}
    print(f"numpy {ny} x {nx}, perturb {amplitude}: sums {sums}", flush=True)
    crcs = set()
    for np_, extra in runs:
        if np_ > maxranks:
            continue
        r, h5 = run(np_, nx, ny, amplitude, extra, save=hdf5 and extra[:1] != ["--moved-columns"])
        for f in ("u", "v", "p"):
            got = r["check"]["sum_" + f]
            if abs(got - sums[f]) > TOL * scale[f]:
                sys.exit(f"FAIL: {np_} ranks {extra}: sum {f} {got!r} vs numpy {sums[f]!r} "
                         f"(tolerance {TOL} * {scale[f]!r})")
        crcs.add(tuple(sorted(apptest.crc(r).items())))
        if h5:
            with h5py.File(h5, "r") as f5:
                for f, x in ref.items():
                    d = float(np.max(np.abs(f5[f][...] - x)))
                    if d > TOL * float(np.max(np.abs(x))):
                        sys.exit(f"FAIL: {np_} ranks {extra}: {f} differs from numpy by up to {d!r}")
                    print(f"  {f}: max |ours - numpy| = {d!r}{' (bitwise equal)' if d == 0 else ''}")
    if len(crcs) != 1:
        sys.exit(f"FAIL: {ny} x {nx}: the final fields differ across rank counts, grids or forms (crc32 {crcs})")
    print(f"cfd {ny} x {nx}, perturb {amplitude}: sums equal numpy's to {TOL} * sum|x|; fields bitwise equal "
          f"across runs (crc32 {crcs.pop()})", flush=True)


both = [[], ["--moved-columns"]]
check_case(23, 17, AMPLITUDE,
           [(1, e) for e in both] + [(2, e + g) for g in ([], ["--grid", "1,2"]) for e in both] +
           [(3, e + g) for g in ([], ["--grid", "1,3"]) for e in both] +
           [(4, e + g) for g in ([], ["--grid", "1,4"]) for e in both] +
           [(maxranks, ["--overlap"]), (maxranks, ["--overlap", "--moved-columns"])])
check_case(7, 5, AMPLITUDE, [(1, [])] + [(3, e + ["--grid", "3,1"]) for e in both] +
           [(4, e + g) for g in (["--grid", "4,1"], ["--grid", "1,4"]) for e in both])
check_case(23, 17, 0.0, [(1, []), (2, ["--grid", "1,2"])])
print("cfd: all checks passed")
