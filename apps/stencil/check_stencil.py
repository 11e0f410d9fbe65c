#!/usr/bin/env python3
"""stencil check: the app at 1..MAXRANKS ranks, in place and with --fast, on a small grid. The
check value (the sum of the final grid) must equal NumPy's, run serially here with cuNumeric's
script (perf/peers/numpy_stencil.py), to roundoff. Where the build has HDF5 (HDF5 = 1), the
final grid must also be the same bit for bit at every rank count and in both forms (crc32), with
--overlap too (at MAXRANKS), and equal NumPy's grid bit for bit (a checkpoint of the last
iteration, read with h5py).

usage: check_stencil.py MPIEXEC STENCIL_EXE WORKDIR MAXRANKS [HDF5]
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "perf", "peers"))
sys.path.insert(0, os.path.join(here, "..", "common"))
import apptest  # noqa: E402
import numpy_stencil  # noqa: E402

mpiexec, exe, work, maxranks, hdf5 = apptest.check_args()
n, steps = 29, 25

ref_grid = numpy_stencil.run(numpy_stencil.initialize(n), steps)
ref = float(ref_grid.sum())
print(f"numpy: check {ref!r}")
results = []
for np_ in range(1, maxranks + 1):
    for fast in (False, True):
        args = ["--n", str(n), "--steps", str(steps)] + (["--fast"] if fast else [])
        if hdf5 and np_ == maxranks:  # the last step's grid, for h5py
            args += ["--checkpoint-every", str(steps), "--checkpoint", os.path.join(work, f"ck{int(fast)}")]
        r = apptest.run(mpiexec, exe, np_, args, os.path.join(work, f"np{np_}{'-fast' if fast else ''}.json"), 120)
        if r["run"]["first_step"] != 1 or r["problem"]["steps"] != steps or r["problem"]["n"] != n \
                or r["problem"]["shape"] != [n + 2, n + 2]:
            sys.exit(f"FAIL: unexpected JSON {r}")
        results.append((np_, fast, r))
# --overlap (the exchange in flight while the interior is updated): the same grid, both forms
for fast in (False, True):
    args = ["--n", str(n), "--steps", str(steps), "--overlap"] + (["--fast"] if fast else [])
    r = apptest.run(mpiexec, exe, maxranks, args, os.path.join(work, f"overlap{'-fast' if fast else ''}.json"), 120)
    if r["options"].get("overlap") != "true":
        sys.exit(f"FAIL: --overlap not recorded in the options {r['options']}")
    results.append((maxranks, fast, r))

for np_, fast, r in results:
    if abs(r["check"]["sum"] - ref) > 1e-12 * abs(ref):
        sys.exit(f"FAIL: {np_} ranks{' --fast' if fast else ''}: check {r['check']['sum']!r} vs numpy {ref!r}")
checks = sorted({r["check"]["sum"] for _, _, r in results})
print(f"stencil: check values {checks} equal numpy's {ref!r} to roundoff at 1..{maxranks} ranks")
if hdf5:
    import h5py
    import numpy

    crcs = {apptest.crc(r)["grid"] for _, _, r in results}
    if len(crcs) != 1:
        sys.exit(f"FAIL: the final grids differ across rank counts or forms (crc32 {sorted(crcs)})")
    for fast in (0, 1):
        with h5py.File(os.path.join(work, f"ck{fast}.{steps:010d}.h5"), "r") as f:
            grid = f["grid"][...]
        if not numpy.array_equal(grid, ref_grid):
            sys.exit(f"FAIL: {'--fast' if fast else 'in place'}: the final grid differs from numpy's "
                     f"(largest difference {numpy.abs(grid - ref_grid).max()})")
    print(f"stencil: final grids bitwise equal at every rank count and form (crc32 {crcs.pop()}) and to numpy's")
