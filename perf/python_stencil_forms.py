"""cuNumeric's stencil from Python in three forms, to see what each costs (issue 28's stencil figure).

    PYTHONPATH=build/python mpiexec -n 1 <python> perf/python_stencil_forms.py [--n 16382] [--iters 20]
        [--json FILE] [--profile]

  named     examples/python/stencil.py's run(): `average = center + north + east + west + south;
            work = 0.2 * average; center[:] = work` (the names are held across the write, so the
            write barrier snapshots the grid for them each iteration)
  inplace   the same update in one statement: center[:] = 0.2 * (center + north + east + west + south)
            (NumPy's semantics in place: the engine's aliasing path)
  buffered  the double buffer: nxt[1:-1, 1:-1] = 0.2 * (...grid...); swap the names

Seconds an iteration (medians of 3 runs of --iters iterations, spmdarray.synchronize() at the end
of each run) and G points/s of the n^2 interior; --profile prints cProfile's top functions of one
run of the named form (Python-side time, the kernels' waits included where a call waits).
"""
import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time

import spmdarray as sa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
import stencil  # noqa: E402  (the example itself)


def views(g):
    return g[1:-1, 1:-1], g[0:-2, 1:-1], g[1:-1, 2:], g[1:-1, 0:-2], g[2:, 1:-1]


def timed(f, iters, runs=3):
    f(1)
    sa.synchronize()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f(iters)
        sa.synchronize()
        out.append((time.perf_counter() - t0) / iters)
    return statistics.median(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=16382)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--profile", action="store_true")
    a = p.parse_args()
    n = a.n
    grid = stencil.initialize(n)
    r = {"n": n, "iters": a.iters, "execution_space": sa._core.execution_space()}
    r["named_s"] = timed(lambda k: stencil.run(grid, k), a.iters)
    center, north, east, west, south = views(grid)

    def inplace(k):
        for _ in range(k):
            center[:] = 0.2 * (center + north + east + west + south)

    r["inplace_s"] = timed(inplace, a.iters)
    g = [grid, stencil.initialize(n)]

    def buffered(k):
        for _ in range(k):
            c, no, e, w, s = views(g[0])
            g[1][1:-1, 1:-1] = 0.2 * (c + no + e + w + s)
            g.reverse()

    r["buffered_s"] = timed(buffered, a.iters)
    for k in ("named", "inplace", "buffered"):
        r[k + "_gpoints"] = n * n / r[k + "_s"] / 1e9
    if sa.Comm().rank == 0:
        for k in ("named", "inplace", "buffered"):
            print(f"{k:9s} {r[k + '_s'] * 1e3:9.3f} ms an iteration  {r[k + '_gpoints']:8.2f} G points/s")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(r, f, indent=1)
    if a.profile:
        prof = cProfile.Profile()
        prof.enable()
        stencil.run(grid, a.iters)
        sa.synchronize()
        prof.disable()
        if sa.Comm().rank == 0:
            pstats.Stats(prof).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
