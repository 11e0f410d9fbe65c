#!/usr/bin/env python3
"""The CPU peer of perf/bench_fft.cpp: numpy.fft.fftn (complex128) and numpy.fft.rfftn (float64)
on side^3 cubes, median seconds of --repeat runs after one warm-up (NumPy's pocketfft is
single-threaded; compare with bench_fft at one rank and OMP_NUM_THREADS=1).

    numpy_fft.py [--sides 64,128,256] [--repeat 5] [--json FILE]
"""
import argparse
import json
import statistics
import time

import numpy as np


def median_time(fn, reps):
    fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sides", default="64,128,256")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args()
    rng = np.random.default_rng(1)
    res = {"peer": "numpy", "numpy": np.__version__, "results": []}
    for side in [int(s) for s in a.sides.split(",")]:
        shape = (side,) * 3
        z = rng.random(shape) + 1j * rng.random(shape)
        r = rng.random(shape)
        n = float(side) ** 3
        t = median_time(lambda: np.fft.fftn(z), a.repeat)
        tr = median_time(lambda: np.fft.rfftn(r), a.repeat)
        row = {"side": side, "fftn_ms": t * 1e3, "fftn_gflops": 5 * n * np.log2(n) / t * 1e-9,
               "rfftn_ms": tr * 1e3, "rfftn_gflops": 2.5 * n * np.log2(n) / tr * 1e-9}
        res["results"].append(row)
        print("numpy fft side %d: fftn %.2f ms (%.2f GFLOP/s), rfftn %.2f ms" % (side, row["fftn_ms"],
              row["fftn_gflops"], row["rfftn_ms"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
