#!/usr/bin/env python3
"""spmd::fft against numpy.fft itself.

    fft_numpy.py MPIEXEC FFT_DRIVER WORKDIR RANKS [--preflags=P] [--table]

Writes the cases below to WORKDIR/cases.txt, runs FFT_DRIVER (tests/fft_driver.cpp) at each rank
count of RANKS (e.g. 1,2,3), and compares every result with NumPy's on the same input (the
driver's formula, rebuilt here): the largest difference relative to the largest |NumPy value|
must stay below 1e-12 (complex128 / float64) or 2e-6 (complex64 / float32); the shapes must be
NumPy's. test_fft covers 1-4 ranks against the DFT written out; this checks the NumPy rules
(s, axes, norm, the half spectrum, irfft's default length) against NumPy's own answers.
--table prints the agreement table (Markdown). Exit 77 (skipped) without NumPy.
"""
import argparse
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("fft_numpy: NumPy not found: skipped")
    sys.exit(77)

# op dtype shape axes s norm
CASES = """
fftn complex128 12x9 - - backward
fftn complex128 12x9 - - ortho
fftn complex128 12x9 - - forward
ifftn complex128 7x10 - - backward
ifftn complex128 7x10 - - ortho
fftn complex128 6x5x8 - - backward
fftn complex128 6x5x8 2,0 - backward
fftn complex128 6x5x8 1 - forward
fftn complex128 6x5x8 0,2 9,4 backward
ifftn complex128 6x5x8 - 3,11 ortho
rfftn float64 6x5x8 - - backward
rfftn float64 5x4x7 - - ortho
rfftn float64 5x4x7 0,1 - forward
rfftn float64 7x9 - 8,10 backward
irfftn complex128 6x5x5 - - backward
irfftn complex128 6x5x5 - 6,5,9 ortho
irfftn complex128 7x6 - 7,10 forward
irfftn complex128 4x6x3 0,1 - backward
fft complex128 13 - - backward
fft complex128 16 - 19 ortho
ifft complex128 9x8 0 - backward
fft complex128 5x6x7 1 4 forward
rfft float64 16 - - backward
rfft float64 6x15 0 - ortho
irfft complex128 9 - 15 backward
irfft complex128 9 - - forward
irfft complex128 5x7 0 - backward
fftn complex64 10x6 - - backward
rfftn float32 10x6 - - ortho
irfftn complex64 10x4 - 10,6 backward
"""


def make_input(dtype, shape):
    f = np.arange(int(np.prod(shape)), dtype=np.float64)
    re = np.sin(0.37 * f) + 0.25 * np.cos(1.3 * f)
    im = 0.5 * np.cos(0.11 * f) - 0.125 * np.sin(2.1 * f)
    if dtype.startswith("complex"):
        return (re + 1j * im).astype(dtype).reshape(shape)
    return re.astype(dtype).reshape(shape)


def lst(s):
    return None if s == "-" else [int(x) for x in s.split(",")]


def numpy_result(op, dtype, shape, axes, s, norm):
    a = make_input(dtype, shape)
    fn = getattr(np.fft, op)
    if op in ("fft", "ifft", "rfft", "irfft"):
        return fn(a, n=None if s is None else s[0], axis=-1 if axes is None else axes[0], norm=norm)
    return fn(a, s=s, axes=axes, norm=norm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mpiexec")
    ap.add_argument("exe")
    ap.add_argument("workdir")
    ap.add_argument("ranks")
    ap.add_argument("--preflags", default="")
    ap.add_argument("--table", action="store_true")
    a = ap.parse_args()
    pre = a.preflags.split() if a.preflags else []
    cases = [c.split() for c in CASES.strip().splitlines()]
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    cases_file = os.path.join(a.workdir, "cases.txt")
    with open(cases_file, "w") as f:
        f.write("\n".join(" ".join(c) for c in cases) + "\n")
    failed, worst, rows = 0, {}, []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        out = os.path.join(a.workdir, "np%d" % ranks)
        os.makedirs(out)
        cmd = [a.mpiexec, "-n", str(ranks)] + pre + [a.exe, cases_file, out]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
        if p.returncode != 0:
            print(p.stdout)
            print("fft_numpy: the driver failed at %d ranks (exit %d)" % (ranks, p.returncode))
            return 1
        for k, (op, dtype, shape, axes, s, norm) in enumerate(cases):
            want = numpy_result(op, dtype, [int(x) for x in shape.split("x")], lst(axes), lst(s), norm)
            with open(os.path.join(out, "%d.shape" % k)) as f:
                got_shape = tuple(int(x) for x in f.read().split("x"))
            raw = np.fromfile(os.path.join(out, "%d.bin" % k), dtype=np.float64)
            got = raw.view(np.complex128) if np.iscomplexobj(want) else raw
            tol = 2e-6 if dtype in ("complex64", "float32") else 1e-12
            label = " ".join((op, dtype, shape, "axes=" + axes, "s=" + s, norm))
            if got_shape != want.shape:
                print("fft_numpy: MISMATCH at %d ranks: %s: shape %s, NumPy %s" % (ranks, label, got_shape, want.shape))
                failed += 1
                continue
            err = float(np.max(np.abs(got.reshape(want.shape) - want)) / max(1.0, float(np.max(np.abs(want)))))
            worst[label] = max(worst.get(label, 0.0), err)
            if not err <= tol:
                print("fft_numpy: MISMATCH at %d ranks: %s: relative error %.3g > %g" % (ranks, label, err, tol))
                failed += 1
    if a.table:
        print("| case | NumPy shape | largest relative difference (ranks %s) |" % a.ranks)
        print("|---|---|---|")
        for (op, dtype, shape, axes, s, norm) in cases:
            label = " ".join((op, dtype, shape, "axes=" + axes, "s=" + s, norm))
            want = numpy_result(op, dtype, [int(x) for x in shape.split("x")], lst(axes), lst(s), norm)
            print("| `%s` | %s | %.1e |" % (label, "x".join(map(str, want.shape)), worst.get(label, float("nan"))))
    print("fft_numpy: %d cases at %s ranks against NumPy %s: %s"
          % (len(cases), a.ranks, np.__version__, "all agree" if failed == 0 else "%d differ" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
