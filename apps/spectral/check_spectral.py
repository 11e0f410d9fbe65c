#!/usr/bin/env python3
"""spectral check: the app at 1..MAXRANKS ranks (several process grids) against the NumPy program
of the same scheme (perf/peers/spectral_numpy.py, np.fft, run serially here), from seeded
band-limited random fields (the nonlinear term at work), with the viscous term by the integrating
factor and explicitly.

- energy and enstrophy (check values of the JSON report) equal NumPy's to 1e-10 relative;
- with HDF5 (--save, read with h5py): the final vorticity w and its half spectrum w_hat equal
  NumPy's element by element, max |ours - numpy| <= 1e-10 max |x|.
  Why 1e-10: both programs do the same operations in the same order, except inside the FFTs
  (FFTW against pocketfft) and the sums; each transform is accurate to a few eps log2(n^2) relative
  (about 1e-15 here), and the few steps of these runs (dt max|u| k_max < 1) grow such differences
  by a modest factor: the differences measured are about 1e-14 (printed below). 1e-10 leaves four
  orders of magnitude, and an error in the scheme (a wrong sign, mask, stage weight, wavenumber)
  changes the fields at the 1e-3 level or more.
- --spmd-log-view prints one profile in which the transforms are counted as the scheme makes
  them (20 per step: the two Plans, executed);
- the final state is the same bit for bit at every rank count and process grid (crc32 of w_hat and
  of w): the transforms of one length do the same arithmetic on every rank, and the only
  reduction that feeds the state (the random field's rms) is exact (spmd::reproducible).

usage: check_spectral.py MPIEXEC SPECTRAL_EXE WORKDIR MAXRANKS [HDF5]
"""
import os
import re
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "perf", "peers"))
sys.path.insert(0, os.path.join(here, "..", "common"))
import apptest  # noqa: E402
import spectral_numpy  # noqa: E402

mpiexec, exe, work, maxranks, hdf5 = apptest.check_args()
if hdf5:
    import h5py

TOL = 1e-10


def reference(opts):
    """NumPy's final w_hat, w and check values for the app options `opts` (a dict)."""
    args = spectral_numpy.parser().parse_args([str(x) for k, v in opts.items() for x in (k, v)])
    return spectral_numpy.run(args)


def check_case(name, opts, runs):
    w_hat_ref, w_ref, ref = reference(opts)
    print(f"numpy {name}: energy {ref['energy']!r}, enstrophy {ref['enstrophy']!r}, dt {ref['dt']!r}", flush=True)
    crcs = set()
    for np_, extra in runs:
        if np_ > maxranks:
            continue
        tag = f"{name}-np{np_}{''.join(extra).replace('-', '_').replace(',', 'x')}"
        args = [str(x) for k, v in opts.items() for x in (k, v)] + ["--monitor", "5"] + extra
        h5 = os.path.join(work, tag + ".h5") if hdf5 else None
        r = apptest.run(mpiexec, exe, np_, args + (["--save", h5] if h5 else []), os.path.join(work, tag + ".json"))
        if r["problem"]["n"] != opts["--n"] or r["problem"]["steps"] != opts["--steps"] or r["ranks"] != np_:
            sys.exit(f"FAIL: {tag}: unexpected JSON problem {r['problem']}")
        if abs(r["problem"]["dt"] - ref["dt"]) > 1e-14 * ref["dt"]:
            sys.exit(f"FAIL: {tag}: dt {r['problem']['dt']!r} vs numpy {ref['dt']!r}")
        for key in ("energy", "enstrophy", "enstrophy_initial", "max_abs_w"):
            got, want = r["check"][key], ref[key]
            if not abs(got - want) <= TOL * abs(want):
                sys.exit(f"FAIL: {tag}: {key} {got!r} vs numpy {want!r} (relative tolerance {TOL})")
        print(f"  {tag}: energy relative difference {abs(r['check']['energy'] - ref['energy']) / ref['energy']:.2e}")
        crcs.add(tuple(sorted(apptest.crc(r).items())))
        if h5:
            with h5py.File(h5, "r") as f5:
                for field, x in (("w", w_ref), ("w_hat", w_hat_ref)):
                    got = f5[field][...]
                    if got.shape != x.shape:
                        sys.exit(f"FAIL: {tag}: {field} has shape {got.shape}, numpy {x.shape}")
                    d = float(np.max(np.abs(got - x)))
                    scale = float(np.max(np.abs(x)))
                    if not d <= TOL * scale:
                        sys.exit(f"FAIL: {tag}: {field} differs from numpy by up to {d!r} (max |x| {scale!r})")
                    print(f"  {tag}: {field}: max |ours - numpy| = {d:.3e} (max |x| {scale:.3e})")
    if len(crcs) != 1:
        sys.exit(f"FAIL: {name}: the final state differs across rank counts or grids (crc32 {crcs})")
    print(f"spectral {name}: equal to numpy's to {TOL}; the same bits on every run (crc32 {crcs.pop()})", flush=True)


# The integrating factor, 48 x 48, the automatic (--grid) and both 1-D process grids; the
# grid 1 x P takes the plans' restored layout (the spectrum is moved back), P x 1 the transposed.
check_case("random-if", {"--n": 48, "--steps": 10, "--init": "random", "--nu": 0.01, "--dt": 0.05, "--seed": 3,
                         "--kmin": 1, "--kmax": 8, "--amplitude": 2.0},
           [(1, []), (2, []), (2, ["--grid", "1,2"]), (3, []), (3, ["--grid", "1,3"]), (4, [])])
# The explicit viscous term and the automatic time step (--cfl), 32 x 32.
check_case("random-explicit", {"--n": 32, "--steps": 8, "--init": "random", "--viscous": "explicit", "--nu": 0.02,
                               "--cfl": 0.4, "--seed": 11, "--kmin": 2, "--kmax": 5},
           [(1, []), (2, []), (3, [])])
# --spmd-log-view: the profile once, from rank 0, with the transforms counted as the scheme makes
# them: 20 per step (4 evaluations of 4 complex-to-real and 1 real-to-complex), 1 for the initial
# field and 1 for the final vorticity (--dt given: no velocity for an automatic step).
if maxranks >= 2:
    steps = 6
    rc, out = apptest.launch(mpiexec, exe, 2, ["--n", 32, "--steps", steps, "--init", "random", "--kmax", 5, "--dt",
                                               0.05, "--monitor", 0, "--spmd-log-view"])
    counts = [int(m.group(1)) for m in re.finditer(r"^spmd::fft::execute\s+(\d+)", out, re.M)]
    if rc != 0 or out.count("spmd log view") != 1 or counts != [20 * steps + 2]:
        sys.exit(f"FAIL: --spmd-log-view: exit {rc}, spmd::fft::execute counts {counts}, expected [{20 * steps + 2}]")
    print(f"spectral --spmd-log-view: one profile, {counts[0]} transforms for {steps} steps")
print("spectral: all checks passed")
