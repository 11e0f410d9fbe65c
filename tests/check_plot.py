#!/usr/bin/env python3
"""scripts/plot.py on the output of real app runs (ctest: plot_fixture, then plot_pngs).

  check_plot.py fixture MPIEXEC CG_SOLVER STENCIL BENCH_TRIAD|- DIR
      Runs apps/cg_solver (2-D Poisson, 64^2, --monitor 5) and apps/stencil (--n 254 --iters 10)
      at 1 and 2 ranks, writing their --json files and cg_solver's stdout (the residual history)
      into DIR; cg_solver with --history (GMRES, BiCGStab, FGMRES + Chebyshev on convdiff2d 32^2,
      1 rank: the methods' JSON histories); and, when given, perf/bench_triad's BM_copy_view
      (Google Benchmark JSON).
  check_plot.py check PLOT_PY DIR
      Makes the roofline, scaling and convergence PNGs from them and checks each: it exists, is a
      PNG of the expected size with more than a blank canvas on it (many distinct colours, not one
      flat colour). Checks what plot.py read against what the apps printed: the convergence
      history ends below the tolerance and starts at 1, each roofline bar's GB/s is the app's
      own gb_per_second or its rate x 16 B per point, and the copy bandwidth taken from the
      benchmark JSON is its largest BM_copy_view's GB/s; scripts/gpu/multigpu_summary.py over
      these runs records their efficiency rate(2) / (2 rate(1)) and plot.py multigpu draws it.
      Inputs without anything to plot must fail with exit status 2.
"""

import json
import os
import re
import subprocess
import sys


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def fixture(mpiexec, cg, stencil, triad, d):
    os.makedirs(d, exist_ok=True)
    for np_ in (1, 2):
        out = run([mpiexec, "-n", str(np_), cg, "--problem", "poisson2d", "--n", "64", "--tol", "1e-8",
                   "--monitor", "5", "--json", os.path.join(d, f"cg_np{np_}.json")])
        with open(os.path.join(d, f"cg_np{np_}.log"), "w") as f:
            f.write(out)
        run([mpiexec, "-n", str(np_), stencil, "--n", "254", "--steps", "10", "--fast",
             "--json", os.path.join(d, f"stencil_np{np_}.json")])
        if triad != "-":
            run([mpiexec, "-n", str(np_), triad, "--benchmark_filter=BM_copy_view", "--benchmark_min_time=0.01",
                 "--benchmark_out_format=json", "--benchmark_out=" + os.path.join(d, f"triad_np{np_}.json")])
    for method, pre in (("gmres", "jacobi"), ("bicgstab", "none"), ("fgmres", "chebyshev")):
        run([mpiexec, "-n", "1", cg, "--problem", "convdiff2d", "--n", "32", "--peclet", "100", "--tol", "1e-8",
             "--method", method, "--precond", pre, "--history", "--quiet",
             "--json", os.path.join(d, f"history_{method}.json")])
    print(f"fixture: cg_solver and stencil at 1 and 2 ranks in {d}")
    return 0


failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def png_ok(path, min_w, min_h):
    import matplotlib.image as mpimg
    import numpy as np

    expect(os.path.isfile(path), f"{path} written")
    if not os.path.isfile(path):
        return
    with open(path, "rb") as f:
        expect(f.read(8) == b"\x89PNG\r\n\x1a\n", f"{path} is a PNG")
    img = mpimg.imread(path)
    h, w = img.shape[:2]
    expect(w >= min_w and h >= min_h, f"{path}: {w}x{h} pixels, want at least {min_w}x{min_h}")
    rgb = (img[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    colours = len(np.unique(rgb, axis=0))
    ink = float((rgb.min(axis=1) < 200).mean())  # pixels that are not (near) white
    # the data themselves: pixels of matplotlib's first series colour (C0, #1f77b4), which axes,
    # labels and text never use
    c0 = int((np.abs(rgb.astype(int) - [31, 119, 180]).max(axis=1) <= 12).sum())
    expect(colours > 50, f"{path}: {colours} distinct colours (a blank or flat image has few)")
    expect(0.005 < ink < 0.6, f"{path}: {ink:.3f} of the pixels drawn")
    expect(c0 >= 25, f"{path}: {c0} pixels of the first series' colour (the data are not drawn)")
    print(f"{os.path.basename(path)}: {w}x{h}, {os.path.getsize(path)} bytes, {colours} colours, "
          f"{ink:.3f} inked, {c0} data pixels")


def check(plot, d):
    sys.path.insert(0, os.path.dirname(os.path.abspath(plot)))
    import plot as P  # the module itself, to compare what it read with the files

    py = sys.executable
    cg = [os.path.join(d, f"cg_np{n}.json") for n in (1, 2)]
    st = [os.path.join(d, f"stencil_np{n}.json") for n in (1, 2)]
    logs = [os.path.join(d, f"cg_np{n}.log") for n in (1, 2)]
    note = "test fixture: tiny problems, timings meaningless"

    out = os.path.join(d, "roofline.png")
    run([py, plot, "roofline", "--copy-gbs", "5", *cg, *st, "-o", out, "--note", note])
    png_ok(out, 600, 200)
    for f in cg:
        doc = P.load_json(f)  # the app report with plot.py's flat keys
        r = P.runs_from(f, P.BYTES_PER_POINT)[0]
        expect(abs(r.bps - doc["gb_per_second"] * 1e9) <= 1e-9 * r.bps, f"{f}: bytes/s from gb_per_second")
        expect(r.ranks == doc["ranks"], f"{f}: ranks")
    for f in st:
        doc = json.load(open(f))
        rate = doc["timings"]["rate"]
        r = P.runs_from(f, P.BYTES_PER_POINT)[0]
        expect(abs(r.bps - 16 * rate) <= 1e-9 * r.bps, f"{f}: bytes/s = 16 B x points/s")

    tr = [os.path.join(d, f"triad_np{n}.json") for n in (1, 2)]
    tr = tr if all(os.path.isfile(f) for f in tr) else []
    if tr:
        doc = json.load(open(tr[0]))
        copies = [(b["name"], b["GB/s"]) for b in doc["benchmarks"] if b["name"].startswith("BM_copy_view/")]
        largest = max(copies, key=lambda c: int(re.search(r"n:(\d+)", c[0]).group(1)))
        expect(len(copies) >= 2 and P.copy_gbs_from_triad(tr[0]) == largest[1],
               f"copy bandwidth from {tr[0]}: {P.copy_gbs_from_triad(tr[0])} vs {largest}")
        out = os.path.join(d, "roofline_triad.png")
        run([py, plot, "roofline", "--triad", tr[0], *cg, *st, *tr, "-o", out, "--note", note])
        png_ok(out, 600, 300)
    else:
        print("no bench_triad JSON (benchmarks not built): the --triad path is not checked")

    out = os.path.join(d, "scaling.png")
    run([py, plot, "scaling", *cg, *st, *tr, "-o", out, "--note", note])
    png_ok(out, 800, 300)
    groups = P.scaling_groups([r for f in cg + st + tr for r in P.runs_from(f, P.BYTES_PER_POINT)], "auto")
    want = [("cg_solver", "strong"), ("stencil", "strong")]
    if tr:
        want += [(re.sub(r"/manual_time$", "", n), "strong") for n, _ in copies]  # the label drops it
    expect(sorted((g, m) for g, m, _ in groups) == sorted(want), f"scaling groups {[(g, m) for g, m, _ in groups]}")

    out = os.path.join(d, "convergence.png")
    run([py, plot, "convergence", *logs, "-o", out, "--note", note])
    png_ok(out, 600, 300)
    for f, j in zip(logs, cg):
        doc = P.load_json(j)
        label, its, res = P.history_from(f)
        expect(its[0] == 0 and abs(res[0] - 1.0) < 1e-12, f"{f}: history starts at iteration 0, residual 1")
        expect(its == sorted(its) and its[-1] == doc["iterations"], f"{f}: iterations up to {doc['iterations']}")
        expect(res[-1] <= doc["tol"] and res[-1] < res[0], f"{f}: last residual {res[-1]} <= tol {doc['tol']}")
        # the monitor prints every 5th iteration, plus the last
        expect(len(its) == doc["iterations"] // 5 + 1 + (doc["iterations"] % 5 != 0), f"{f}: {len(its)} points")

    # The multi-GPU summary (scripts/gpu/multigpu_summary.py) over the stencil runs as a strong
    # series and the cg_solver runs as a weak one, then its plot: the efficiency it records is
    # rate(2) / (2 rate(1)) of the apps' own JSON.
    mg = os.path.join(d, "multigpu")
    os.makedirs(os.path.join(mg, "json"), exist_ok=True)
    with open(os.path.join(mg, "runs.tsv"), "w") as f:
        for n, path in enumerate(st, 1):
            f.write(f"stencil fixture\tstrong\t{n}\t0.8\t{os.path.relpath(path, mg)}\t0\n")
        for n, path in enumerate(cg, 1):
            f.write(f"cg fixture\tweak\t{n}\t0.9\t{os.path.relpath(path, mg)}\t0\n")
    summary = os.path.join(os.path.dirname(os.path.abspath(plot)), "gpu", "multigpu_summary.py")
    table = run([py, summary, mg, "--machine", "test fixture"])
    doc = json.load(open(os.path.join(mg, "multigpu.json")))
    for name, files in (("stencil fixture", st), ("cg fixture", cg)):
        r1, r2 = (json.load(open(f))["timings"]["rate"] for f in files)
        s = next(x for x in doc["series"] if x["name"] == name)
        expect(abs(s["efficiency"]["2"] - r2 / (2 * r1)) <= 1e-12 * r2 / r1, f"multigpu.json: {name} efficiency")
        expect(name in table, f"summary table names {name}")
    out = os.path.join(d, "multigpu.png")
    run([py, plot, "multigpu", os.path.join(mg, "multigpu.json"), "-o", out, "--note", note])
    png_ok(out, 800, 300)

    # The methods' histories from cg_solver --history JSON.
    hist = [os.path.join(d, f"history_{m}.json") for m in ("gmres", "bicgstab", "fgmres")]
    out = os.path.join(d, "convergence_methods.png")
    run([py, plot, "convergence", *hist, "-o", out, "--note", note])
    png_ok(out, 600, 300)
    for f in hist:
        doc = json.load(open(f))
        label, its, res = P.history_from(f)
        n = doc["check"]["iterations"]
        expect(its == list(range(n + 1)) and abs(res[0] - 1.0) < 1e-12, f"{f}: history 0..{n} from residual 1")
        expect(res[-1] <= doc["problem"]["rtol"], f"{f}: last residual {res[-1]} <= tol")
        expect(doc["problem"]["solver"] in label, f"{f}: label {label!r} names the method")

    # Nothing to plot: refused with status 2, no PNG written.
    bad = os.path.join(d, "nothing.json")
    with open(bad, "w") as f:
        json.dump({"app": "cg_solver", "ranks": 1}, f)
    refused = [["roofline", "--copy-gbs", "5", bad], ["scaling", cg[0]], ["roofline", *cg], ["multigpu", cg[0]]]
    if "residual_history" not in json.load(open(cg[0])):  # the app writes none today
        refused.append(["convergence", cg[0]])
    for args in refused:
        png = os.path.join(d, "refused.png")
        r = subprocess.run([py, plot, *args, "-o", png], capture_output=True, text=True)
        expect(r.returncode == 2 and not os.path.exists(png), f"plot.py {' '.join(args[:1])} refuses: {r.stderr.strip()}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("plot.py: roofline, scaling, convergence and multigpu PNGs from real app runs ok")
    return 0


def main(argv):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed (Debian: python3-matplotlib; scripts/setup.sh installs it): skipped")
        return 77
    if len(argv) == 7 and argv[1] == "fixture":
        return fixture(*argv[2:])
    if len(argv) == 4 and argv[1] == "check":
        return check(*argv[2:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
