#!/usr/bin/env python3
"""Plots (PNG) from spmdarray's JSON: the apps' --json output and the benchmarks' Google Benchmark
JSON (--benchmark_out=FILE --benchmark_out_format=json). matplotlib: Debian's python3-matplotlib,
so run it with /usr/bin/python3 on Debian.

  plot.py roofline    [--copy-gbs X | --triad bench_triad.json] FILES... [-o OUT.png]
      Fraction of the copy bandwidth each run reaches: its bytes/s (from the app's own byte model
      or a per-point model, see below) divided by the copy bandwidth, given (--copy-gbs, GB/s) or
      measured (BM_copy_view in a bench_triad JSON: the largest size, i.e. from memory).
  plot.py scaling     [--mode auto|strong|weak] FILES... [-o OUT.png]
      Runs of one app (or one benchmark) at several rank counts: the rate against ranks, and the
      parallel efficiency. auto: strong when every run of a group has the same global size, weak
      otherwise (the rate per rank is then what stays flat).
  plot.py multigpu    MULTIGPU.json [-o OUT.png]
      The multi-GPU runs of scripts/gpu/multigpu.sh (its multigpu.json, schema
      spmdarray-multigpu/1): parallel efficiency against GPUs of every weak and every strong
      series, each with its target as a dotted line of the same colour, and the halo exchange's
      latency per backend and case at each GPU count (bench_halo).
  plot.py convergence FILES... [-o OUT.png]
      Residual histories: relative residual against iteration, log scale. A cg_solver --json file
      written with --history (check.history: ||r||/||b|| of every iteration; the curve is named
      after problem.solver and problem.precond), a JSON with residual_history, or the app's stdout
      with --monitor K (the lines "  cg: iteration N  ||r|| R  ||r||/||b|| REL"); several files
      give several curves (the methods on one problem, say).

Keys read (first one present wins). The apps' reports (schema spmdarray-app-report/1,
docs/apps.md) are read through their timings, problem and check objects (flat_report):
  app name        app (Google Benchmark files: the benchmark name)
  ranks           ranks, mpi_ranks, context.mpi_ranks
  rate            points_per_second, point_updates_per_second, rate; benchmarks: GB/s, GFLOP/s
  bytes/s         gb_per_second, GB/s (x 1e9); else rate x bytes per point (below)
  global size     rows; nx x ny; grid (list); n (only compared between runs of one app: strong
                  scaling keeps it, weak scaling changes it)
  history         residual_history ([r0, r1, ...], [[it, r], ...] or {iterations, relative_residual})
Bytes per point (the minimum traffic of one update: read the old value, write the new one):
  stencil 16, heat 16; cfd has no single model (pass --bytes-per-point cfd=B to include it).
Google Benchmark files: each benchmark's median row (with --benchmark_repetitions) or its single
run; benchmarks without a GB/s counter are left out of the roofline.
Exit status: 0 when every PNG was written, 2 on bad usage or inputs that hold nothing to plot.
"""

import argparse
import json
import os
import re
import sys

BYTES_PER_POINT = {"stencil": 16.0, "heat": 16.0}
RATE_KEYS = ("points_per_second", "point_updates_per_second", "rate")
RANK_KEYS = ("ranks", "mpi_ranks")
# "<solver>: iteration N ||r|| R ||r||/||b|| REL" (older apps) or "<app>: iteration N/MAX ||r||/||b|| REL ..."
MONITOR = re.compile(r"^\s*(\S+): iteration\s+(\d+)(?:/\d+)?\s+(?:\|\|r\|\|\s+(\S+)\s+)?\|\|r\|\|/\|\|b\|\|\s+(\S+)")


class InputError(Exception):
    pass


def first(d, keys, default=None):
    for k in keys:
        if isinstance(d, dict) and d.get(k) is not None:
            return d[k]
    return default


# ---- reading ----------------------------------------------------------------------------------


def load_json(path):
    try:
        with open(path) as f:
            return flat_report(json.load(f))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}")


def flat_report(doc):
    """An app report of schema spmdarray-app-report/1 (apps/common/report.hpp) with the flat keys
    this script reads added: rate (timings.rate), gb_per_second and seconds_per_iteration (from
    timings.bytes_per_step / seconds_per_step, where the app has a byte model), rows / n / grid
    (problem), iterations and tol (cg_solver's check and problem). Other documents unchanged."""
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("spmdarray-app-report/"):
        return doc
    flat = dict(doc)
    t, p, c = doc.get("timings") or {}, doc.get("problem") or {}, doc.get("check") or {}
    per, bps = t.get("seconds_per_step"), t.get("bytes_per_step")
    if per and bps:
        flat["gb_per_second"] = bps / per / 1e9
        flat["seconds_per_iteration"] = per
    elif t.get("rate") is not None:
        flat["rate"] = t["rate"]
    for key in ("rows", "nx", "ny", "n"):
        if p.get(key) is not None:
            flat[key] = p[key]
    if p.get("shape") is not None and p.get("rows") is None:
        flat["grid"] = p["shape"]
    if c.get("iterations") is not None:
        flat["iterations"] = c["iterations"]
    if p.get("rtol") is not None:
        flat["tol"] = p["rtol"]
    return flat


def is_gbench(doc):
    return isinstance(doc, dict) and "benchmarks" in doc and "context" in doc


def gbench_rows(doc):
    """name -> row: the median aggregate when there are repetitions, else the single run."""
    out = {}
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b.get("name"))
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                out[name] = b
        elif name not in out or out[name].get("run_type") != "aggregate":
            out.setdefault(name, b)
    return out


def app_size(doc):
    """A hashable global size of an app run (only compared between runs of one app)."""
    if doc.get("rows") is not None:
        return ("rows", doc["rows"])
    if doc.get("nx") is not None:
        return ("nx*ny", doc["nx"], doc.get("ny", doc["nx"]))
    if doc.get("grid") is not None:
        return ("grid",) + tuple(doc["grid"])
    if doc.get("n") is not None:
        return ("n", doc["n"])
    return None


class Run:
    """One measurement: label, ranks, rate (its own unit), bytes/s (or None), global size."""

    def __init__(self, label, group, ranks, rate, unit, bps, size, source):
        self.label, self.group, self.ranks = label, group, ranks
        self.rate, self.unit, self.bps, self.size, self.source = rate, unit, bps, size, source


def runs_from(path, bytes_per_point):
    doc = load_json(path)
    out = []
    if is_gbench(doc):
        ranks = int(first(doc["context"], RANK_KEYS, 1))
        for name, b in gbench_rows(doc).items():
            gbs = b.get("GB/s")
            flops = b.get("GFLOP/s")
            name = re.sub(r"/(manual|real)_time$", "", name)
            if gbs is not None:
                out.append(Run(name, name, ranks, gbs, "GB/s", gbs * 1e9, None, path))
            elif flops is not None:
                out.append(Run(name, name, ranks, flops, "GFLOP/s", None, None, path))
        return out
    if not isinstance(doc, dict) or "app" not in doc:
        raise InputError(f"{path}: neither an app's --json output (no 'app') nor Google Benchmark JSON")
    app = doc["app"]
    ranks = int(first(doc, RANK_KEYS, 1))
    size = app_size(doc)
    gbs = doc.get("gb_per_second")
    rate = first(doc, RATE_KEYS)
    if gbs is not None:
        per_iter = doc.get("seconds_per_iteration")
        it_rate = 1.0 / per_iter if per_iter else None
        rate, unit = (it_rate, "iterations/s") if it_rate else (gbs, "GB/s")
        bps = gbs * 1e9
    elif rate is not None:
        unit = "points/s"
        bpp = bytes_per_point.get(app)
        bps = rate * bpp if bpp else None
    else:
        raise InputError(f"{path}: app {app!r} has none of {RATE_KEYS + ('gb_per_second',)}")
    label = f"{app} {ranks} rank{'s' if ranks != 1 else ''}"
    if size is not None:
        label += f", {size_label(size)}"
    return [Run(label, app, ranks, rate, unit, bps, size, path)]


def size_label(size):
    if size[0] == "nx*ny":
        return f"{size[1]}x{size[2]}"
    if size[0] == "grid":
        return "x".join(map(str, size[1:]))
    if size[0] == "n":
        return f"n={size[1]}"
    return f"{size[1]} rows"


def copy_gbs_from_triad(path):
    doc = load_json(path)
    if not is_gbench(doc):
        raise InputError(f"{path}: not Google Benchmark JSON")
    best = None
    for name, b in gbench_rows(doc).items():
        m = re.match(r"BM_copy_view/(?:n:)?(\d+)", name)
        if m and b.get("GB/s") is not None and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), b["GB/s"])
    if best is None:
        raise InputError(f"{path}: no BM_copy_view with a GB/s counter")
    return best[1]


def history_from(path):
    """(label, [iterations], [relative residuals]) from a cg_solver JSON or a --monitor log."""
    text = open(path).read()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance((doc.get("check") or {}).get("history"), list):
        p, c = doc.get("problem") or {}, doc["check"]
        pre = p.get("precond", "none")
        label = (f"{p.get('solver', '?')}" + (f" + {pre}" if pre and pre != "none" else "") +
                 f" ({c.get('iterations', '?')} iterations, {doc.get('ranks', '?')} ranks)")
        start = (doc.get("run") or {}).get("first_step", 1) - 1
        return label, list(range(start, start + len(c["history"]))), [float(r) for r in c["history"]]
    if isinstance(doc, dict):
        h = doc.get("residual_history")
        if h is None:
            raise InputError(f"{path}: JSON without a residual history (run cg_solver with --history, or give "
                             "its stdout with --monitor K)")
        label = f"{doc.get('solver', doc.get('app', 'cg'))} {doc.get('ranks', '?')} ranks"
        if isinstance(h, dict):
            its, res = h.get("iterations"), h.get("relative_residual", h.get("residual"))
        elif h and isinstance(h[0], (list, tuple)):
            its, res = [p[0] for p in h], [p[1] for p in h]
        else:
            its, res = list(range(len(h))), h
        return label, list(its), [float(r) for r in res]
    its, res, solver = [], [], None
    for line in text.splitlines():
        m = MONITOR.match(line)
        if m:
            solver = m.group(1)
            its.append(int(m.group(2)))
            res.append(float(m.group(4)))
    if not its:
        raise InputError(f"{path}: no monitor lines ('<solver>: iteration N ||r|| R ||r||/||b|| REL')")
    head = re.search(r"^\w+: (\w+), (\d+) unknowns.*?, (?:precond (\w+), )?(\d+) ranks?", text, re.M)
    if head:
        pre = f", {head.group(3)}" if head.group(3) and head.group(3) != "none" else ""
        return f"{solver}{pre}: {head.group(1)}, {int(head.group(2)):,} unknowns, {head.group(4)} ranks", its, res
    return f"{solver} ({os.path.basename(path)})", its, res


# ---- plotting ---------------------------------------------------------------------------------


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def note(fig, text):
    if text:
        fig.text(0.01, 0.01, text, fontsize=7, color="0.35", ha="left", va="bottom")


def plot_roofline(runs, copy_gbs, out, title, footnote):
    runs = [r for r in runs if r.bps is not None]
    if not runs:
        raise InputError("roofline: no run with a byte model (GB/s or a known bytes-per-point app)")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(runs) + 1.6))
    fr = [r.bps / (copy_gbs * 1e9) for r in runs]
    y = range(len(runs))
    bars = ax.barh(list(y), fr, color="tab:blue")
    for b, f, r in zip(bars, fr, runs):
        ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {f:.2f} ({r.bps * 1e-9:.1f} GB/s)",
                va="center", fontsize=8)
    ax.axvline(1.0, color="k", lw=1, ls="--")
    ax.set_yticks(list(y))
    ax.set_yticklabels([r.label for r in runs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(1.15, max(fr) * 1.35))
    ax.set_xlabel(f"fraction of the copy bandwidth ({copy_gbs:.1f} GB/s)")
    ax.set_title(title or "Roofline fractions")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    note(fig, footnote)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def scaling_groups(runs, mode):
    groups = {}
    for r in runs:
        groups.setdefault(r.group, []).append(r)
    out = []
    for g, rs in groups.items():
        rs.sort(key=lambda r: r.ranks)
        if len({r.ranks for r in rs}) < 2:
            continue
        sizes = {r.size for r in rs}
        m = mode if mode != "auto" else ("strong" if len(sizes) == 1 else "weak")
        out.append((g, m, rs))
    return out


def plot_scaling(runs, mode, out, title, footnote):
    groups = scaling_groups(runs, mode)
    if not groups:
        raise InputError("scaling: need runs of one app or benchmark at two or more rank counts")
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.2))
    all_ranks = sorted({r.ranks for _, _, rs in groups for r in rs})
    top = 1.2
    for g, m, rs in groups:
        base = rs[0]
        ranks = [r.ranks for r in rs]
        # strong: speedup over the fewest ranks; weak: the same ratio of rates (scaled speedup)
        speedup = [r.rate / base.rate for r in rs]
        eff = [s * base.ranks / p for s, p in zip(speedup, ranks)]
        label = f"{g} ({m}; {base.rate:.3g} {base.unit} at {base.ranks})"
        ax.plot(ranks, speedup, "o-", label=label)
        ax2.plot(ranks, eff, "o-", label=label)
        top = max(top, 1.1 * max(eff))
    lo, hi = all_ranks[0], all_ranks[-1]
    ax.plot([lo, hi], [1.0, hi / lo], "k:", lw=1, label="ideal")
    ax.set_xlabel("MPI ranks")
    ax.set_ylabel("speedup over the fewest ranks")
    ax.set_xticks(all_ranks)
    ax.legend(fontsize=7)
    ax.set_title("speedup (weak: rate ratio at growing size)", fontsize=9)
    ax2.axhline(1.0, color="k", lw=1, ls="--")
    ax2.set_xlabel("MPI ranks")
    ax2.set_ylabel("parallel efficiency")
    ax2.set_ylim(0, top)
    ax2.set_xticks(all_ranks)
    ax2.set_title("efficiency: speedup x fewest ranks / ranks", fontsize=9)
    fig.suptitle(title or "Scaling")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    note(fig, footnote)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def plot_convergence(histories, out, title, footnote):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, its, res in histories:
        ax.semilogy(its, res, "o-", ms=3, label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("||r|| / ||b||")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "CG convergence")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    note(fig, footnote)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def load_multigpu(path):
    doc = load_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != "spmdarray-multigpu/1":
        raise InputError(f"{path}: not a multigpu.json (schema spmdarray-multigpu/1, scripts/gpu/multigpu.sh)")
    series = [s for s in doc.get("series", []) if len(s.get("efficiency", {})) >= 2]
    if not series:
        raise InputError(f"{path}: no series with efficiencies at two or more GPU counts")
    return doc, series


def plot_multigpu(doc, series, out, title, footnote):
    plt = pyplot()
    halo = [h for h in doc.get("halo", []) if h.get("latency_us") is not None]
    panels = 3 if halo else 2
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.6))
    colors = plt.get_cmap("tab20")
    gpus = sorted({int(g) for s in series for g in s["efficiency"]})
    for ax, kind in zip(axes, ("weak", "strong")):
        mine = [s for s in series if s.get("kind") == kind]
        for i, s in enumerate(mine):
            ps = sorted(int(g) for g in s["efficiency"])
            c = colors(i % 20)
            ax.plot(ps, [s["efficiency"][str(p)] for p in ps], "o-", ms=4, color=c, label=s["name"])
            ax.axhline(s["target"], color=c, lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xticks(gpus)
        ax.set_xticklabels([str(g) for g in gpus])
        ax.set_ylim(0, 1.15)
        ax.set_xlabel("GPUs (one rank each)")
        ax.set_ylabel("parallel efficiency")
        ax.set_title(f"{kind} scaling (dotted: targets)", fontsize=9)
        ax.grid(True, alpha=0.3)
        if mine:
            ax.legend(fontsize=6, loc="lower left")
    if halo:
        ax = axes[2]
        keys = sorted({(h["gpus"], h["case"]) for h in halo})
        backends = [b for b in ("automatic", "mpi", "nccl", "ipc") if any(h["backend"] == b for h in halo)]
        width = 0.8 / max(1, len(backends))
        for j, b in enumerate(backends):
            vals = [next((h["latency_us"] for h in halo if (h["gpus"], h["case"]) == k and h["backend"] == b), 0)
                    for k in keys]
            ax.barh([i + j * width for i in range(len(keys))], vals, height=width, label=b)
        ax.set_yticks([i + 0.4 - width / 2 for i in range(len(keys))])
        ax.set_yticklabels([f"{g} GPUs, {c}" for g, c in keys], fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("µs per exchange (bench_halo)")
        ax.set_title("halo exchange per backend", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(title or f"spmdarray on several GPUs: {doc.get('machine', '')}, {doc.get('date', '')}", fontsize=10)
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    note(fig, footnote)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("kind", choices=("roofline", "scaling", "convergence", "multigpu"))
    p.add_argument("files", nargs="+")
    p.add_argument("-o", "--output", help="PNG to write (default: <kind>.png)")
    p.add_argument("--copy-gbs", type=float, help="roofline: the copy bandwidth in GB/s")
    p.add_argument("--triad", help="roofline: a bench_triad JSON whose BM_copy_view gives the copy bandwidth")
    p.add_argument("--bytes-per-point", action="append", default=[], metavar="APP=B",
                   help="bytes per point update of an app (adds to / overrides the built-in models)")
    p.add_argument("--mode", choices=("auto", "strong", "weak"), default="auto")
    p.add_argument("--title")
    p.add_argument("--note", help="a footnote printed under the plot (machine, date, ...)")
    a = p.parse_args(argv)
    out = a.output or f"{a.kind}.png"
    bpp = dict(BYTES_PER_POINT)
    for item in a.bytes_per_point:
        app, _, val = item.partition("=")
        bpp[app] = float(val)
    try:
        if a.kind == "convergence":
            plot_convergence([history_from(f) for f in a.files], out, a.title, a.note)
        elif a.kind == "multigpu":
            if len(a.files) != 1:
                raise InputError("multigpu takes one multigpu.json")
            doc, series = load_multigpu(a.files[0])
            plot_multigpu(doc, series, out, a.title, a.note)
        else:
            runs = [r for f in a.files for r in runs_from(f, bpp)]
            if a.kind == "roofline":
                if (a.copy_gbs is None) == (a.triad is None):
                    raise InputError("roofline needs exactly one of --copy-gbs and --triad")
                copy = a.copy_gbs if a.copy_gbs is not None else copy_gbs_from_triad(a.triad)
                plot_roofline(runs, copy, out, a.title, a.note)
            else:
                plot_scaling(runs, a.mode, out, a.title, a.note)
    except InputError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    print(f"plot.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
