#!/usr/bin/env python3
"""A scaling model of spmdarray's stencil, CFD and CG on many GPUs (docs/scaling-model.md).

Each step or iteration on P GPUs is modelled as

    t(P) = t_compute(N_local) + h * t_halo(P, message bytes) + a * (t_allreduce(P) - t_allreduce(1))

  t_compute(N) = t0 + N / R       calibrated on one GPU from two measured sizes (t0: launches,
                                  fences and the one-rank reductions; R: points or rows per second)
  t_halo                          alpha + bytes / beta, fitted to the measured 2 x H200 NCCL (or
                                  host-staged MPI) exchanges; off-node neighbours add the assumed
                                  network latency and use the assumed network bandwidth
  t_allreduce(P)                  the assumed per-stage latency of an 8-byte MPI_Allreduce, times
                                  log2 of the GPUs on a node, plus the stages between nodes

h is the halo exchanges per step (stencil 1, CFD 2 * nit + 2, CG 1) and a the all-reduces (CG 2).
A split-phase exchange ("overlap") hides t_halo behind the interior update: t = t_compute +
max(0, t_halo - t_interior) + t_launch, where t_interior is the update of all but the boundary.

Every number the model uses is in CALIBRATION below with its source: "measured" ones come from
docs/performance.md (the run, date and machine are named there); "assumed" ones were not measured
on this project and are the first things the multi-GPU runs (issue 17) replace:

    scaling_model.py --calibration mine.json ...   # a JSON object overriding any CALIBRATION key

Usage (matplotlib for the plots: Debian's python3-matplotlib, so /usr/bin/python3 on Debian):

    scaling_model.py [--json OUT.json] [--plot PREFIX] [--markdown] [--gpus 1,2,4,...] [--check]

  --markdown   the tables of docs/scaling-model.md on stdout
  --plot P     P-weak.png (efficiency against GPUs), P-strong.png, P-cfd.png (CFD throughput per
               GPU next to cuNumeric's published curve)
  --calibration-from MULTIGPU.json
               recalibrate from a run of scripts/gpu/multigpu.sh (its multigpu.json): the one-GPU
               compute points of stencil_app, cfd, cg_csr and cg_mf (both sizes: t0 measured), the
               halo fits of each backend from bench_halo at the fewest GPUs > 1 (2-D face n = 1024 and
               4096, 3-D face n = 256: one message of n or n^2 doubles each way), and the all-reduce
               stage from bench_allreduce (device_mpi: (t(P) - t(1)) / log2 P at the most GPUs);
               --write-calibration FILE saves what was derived (with its sources) as a JSON for
               --calibration
  --measured MULTIGPU.json
               the measured efficiencies of every series next to the model's prediction for the
               same app, size, GPU count, overlap and backend (markdown table on stdout)
  --check      checks that the model reproduces its calibration points (one GPU) within 0.5%,
               that every efficiency is in (0, 1] and that overlap never predicts a slower run;
               exit 1 on a failure (ctest runs this: scaling_model_check)
"""
import argparse
import json
import math
import sys

# --------------------------------------------------------------------------------------------
# Calibration. Times in seconds, rates per second, bytes in bytes.
CALIBRATION = {
    "gpu": "NVIDIA H100 80GB HBM3 (one GPU); halo figures from 2 x H200 (one node, NVLink)",
    "gpus_per_node": 8,
    # Stencil (cuNumeric's 5-point Jacobi, double buffer: 16 B/point). measured: bench_stencil
    # 16384^2, 4 points per work item, 130.8 G points/s (docs/performance.md, "Several points per
    # device work item", H100, 2026-11-24); one iteration at 1024^2: 26.6 us incl. the fence
    # (same page, the CuPy table). apps/stencil --fast reaches 58.3 G points/s at 16384^2 (the
    # app-vs-benchmark gap of issue 13, host-side): "stencil_app" below.
    "stencil": {"points": [[1024 * 1024, 26.6e-6], [16384 * 16384, 16384 * 16384 / 130.8e9]]},
    "stencil_app": {"points": [[1024 * 1024, 26.6e-6], [16384 * 16384, 16384 * 16384 / 58.3e9]]},
    # CG, CSR poisson2d: measured 0.161 ms at 1024^2 and 1.545 ms at 4096^2 per iteration
    # (docs/performance.md, H100, 2026-11-24). Matrix-free: 1.052 ms at 4096^2; its small size
    # was not measured: assumed to have CSR's fixed cost t0.
    "cg_csr": {"points": [[1024 * 1024, 0.161e-3], [4096 * 4096, 1.545e-3]]},
    "cg_mf": {"points": [[4096 * 4096, 1.052e-3]], "t0_from": "cg_csr"},
    # CFD step 12 at 4096^2, nit 50: measured 1.355e9 grid-point-steps/s (apps/cfd, H100,
    # 2026-11-24); small size not measured: t0 assumed to be (2 nit + 2) kernel launches of
    # about 8 us each (the fused update launch + fence figure of the stencil at 1024^2, less
    # its points).
    "cfd": {"points": [[4096 * 4096, 4096 * 4096 / 1.355e9]], "t0": 102 * 8.0e-6, "nit": 50},
    # cuNumeric's published CFD weak scaling (per A100, M grid points per second per GPU):
    # about 154 at 1 GPU and about 104 at 2048 GPUs (issue 13's reading of their curve).
    "cunumeric_cfd": [[1, 154e6], [2048, 104e6]],
    # Halo exchange, one message each way between two GPUs of one node: measured on 2 x H200
    # (docs/performance.md, "Halo exchange on 2 x H200"), non-periodic cases, medians of 5:
    # [bytes per message, seconds].
    "halo_nccl": [[1024 * 8, 35.5e-6], [4096 * 8, 36.9e-6], [128 * 128 * 8, 37.6e-6], [256 * 256 * 8, 42.2e-6]],
    "halo_mpi": [[1024 * 8, 42.3e-6], [4096 * 8, 50.1e-6], [128 * 128 * 8, 84.5e-6], [256 * 256 * 8, 213e-6]],
    # assumed until measured (issue 24's bench_halo backend:3): the intra-node ipc backend (CUDA IPC
    # copies over NVLink, ordered by IPC events and MPI notices): a few us to start a copy plus
    # NVLink bandwidth; --calibration-from replaces it with the measured points.
    "halo_ipc": [[1024 * 8, 12.0e-6], [4096 * 8, 13.0e-6], [128 * 128 * 8, 14.0e-6], [256 * 256 * 8, 20.0e-6]],
    # the backend of the model's exchanges within one node: NCCL, the automatic choice for device
    # data (measured faster than ipc on a 4 x H200 node, 2026-11-27); --calibration-from sets this
    # to the backend bench_halo's automatic runs used (between nodes always NCCL, with the network terms)
    "halo_backend_node": "nccl",
    # assumed: between nodes (InfiniBand NDR, one 200 Gb/s port per GPU): latency added to the
    # intra-node alpha and the bandwidth per GPU.
    "net_latency": 10e-6,
    "net_bandwidth": 25e9,
    # assumed: an 8-byte MPI_Allreduce of host scalars, per log2 stage: within a node (shared
    # memory) and between nodes (InfiniBand).
    "allreduce_stage_node": 1.0e-6,
    "allreduce_stage_net": 3.0e-6,
    # assumed: what a split-phase exchange cannot hide (the boundary update's launch).
    "overlap_launch": 8.0e-6,
}


def fit_line(points):
    """Least-squares t = a + x / b over [[x, t], ...]; returns (a, b)."""
    n = len(points)
    if n == 1:
        raise ValueError("fit_line needs two points")
    mx = sum(p[0] for p in points) / n
    mt = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    slope = sum((p[0] - mx) * (p[1] - mt) for p in points) / sxx
    return mt - slope * mx, 1.0 / slope


class Model:
    def __init__(self, cal):
        self.cal = cal
        self.compute = {}
        for name in ("stencil", "stencil_app", "cg_csr", "cfd", "cg_mf"):
            c = cal[name]
            pts = c["points"]
            if len(pts) >= 2:
                t0, rate = fit_line(pts)
            else:
                t0 = c["t0"] if "t0" in c else self.compute[c["t0_from"]][0]
                rate = pts[0][0] / (pts[0][1] - t0)
            self.compute[name] = (t0, rate)
        self.halo = {k: fit_line(cal["halo_" + k]) for k in ("nccl", "mpi", "ipc")}

    def t_compute(self, app, n):
        t0, rate = self.compute[app]
        return t0 + n / rate

    def grid(self, p):
        """A near-square 2-D process grid (px >= py), as MPI_Dims_create makes one."""
        py = int(math.isqrt(p))
        while p % py:
            py -= 1
        return p // py, py

    def t_halo(self, p, side_x, side_y, backend=None):
        """One exchange of a 2-D block side_x x side_y (points) with a face halo of width 1 on a
        px x py grid: the busiest GPU's messages, 8-byte values, sent together (bytes add up on
        the link). Off-node when the grid spans more than one node (then NCCL: the automatic
        choice of a plan whose peers are not all on one node). backend None: the automatic one."""
        if p == 1:
            return 0.0  # a one-rank non-periodic exchange is a no-op (measured 0.9 us)
        if backend is None:
            backend = self.cal["halo_backend_node"] if p <= self.cal["gpus_per_node"] else "nccl"
        px, py = self.grid(p)
        nmsg_x = 2 if px > 2 else 1  # neighbours along x
        nmsg_y = 2 if py > 2 else (1 if py == 2 else 0)
        nbytes = 8 * (nmsg_x * side_y + nmsg_y * side_x)
        alpha, beta = self.halo[backend]
        if p > self.cal["gpus_per_node"]:
            alpha += self.cal["net_latency"]
            beta = min(beta, self.cal["net_bandwidth"])
        return alpha + nbytes / beta

    def t_allreduce_extra(self, p):
        g = self.cal["gpus_per_node"]
        on_node = math.log2(min(p, g))
        off_node = math.log2(p / g) if p > g else 0.0
        return on_node * self.cal["allreduce_stage_node"] + off_node * self.cal["allreduce_stage_net"]

    def step(self, app, p, n_local_side, backend=None, overlap=False):
        """Seconds per step (iteration) on p GPUs of a square local block n_local_side^2."""
        n = n_local_side * n_local_side
        tc = self.t_compute(app, n)
        halos = {"stencil": 1, "stencil_app": 1, "cg_csr": 1, "cg_mf": 1}.get(app)
        if app == "cfd":
            halos = 2 * self.cal["cfd"]["nit"] + 2
        th = self.t_halo(p, n_local_side, n_local_side, backend)
        if overlap and th > 0:
            per_exchange_compute = tc / halos
            interior = per_exchange_compute * max(0.0, 1.0 - 4.0 / n_local_side)
            th = max(0.0, th - interior) + self.cal["overlap_launch"]
        ar = 2 if app.startswith("cg") else 0
        return tc + halos * th + ar * self.t_allreduce_extra(p)


def gpu_counts(max_p):
    out, p = [], 1
    while p <= max_p:
        out.append(p)
        p *= 2
    return out


def predict(model, gpus):
    res = {"weak": {}, "strong": {}, "cfd_throughput": {}}
    weak = [("stencil", 4096), ("stencil", 1024), ("stencil_app", 4096), ("cfd", 4096), ("cfd", 1024),
            ("cg_csr", 4096), ("cg_csr", 1024), ("cg_mf", 4096)]
    for app, side in weak:
        for overlap in (False, True):
            key = f"{app}@{side}^2/GPU" + (" overlap" if overlap else "")
            t1 = model.step(app, 1, side)
            res["weak"][key] = {str(p): t1 / model.step(app, p, side, overlap=overlap) for p in gpus}
    for app, side in [("stencil", 16384), ("cg_csr", 8192), ("cg_mf", 8192)]:
        t1 = model.step(app, 1, side)
        row = {}
        for p in gpus:
            px, py = model.grid(p)
            local = math.sqrt(side * side / p)  # the block of a square-ish grid, as an equal area
            row[str(p)] = t1 / (p * model.step(app, p, local))
        res["strong"][f"{app}@{side}^2"] = row
    for side in (4096, 1024):
        res["cfd_throughput"][f"{side}^2/GPU"] = {
            str(p): side * side / model.step("cfd", p, side) for p in gpus
        }
    return res


def markdown(model, res, gpus):
    show = [p for p in gpus if p in (1, 2, 8, 16, 64, 256, 1024, 2048)]
    lines = ["Calibrated compute (one GPU): t = t0 + N / R", "", "| form | t0 | R |", "|---|---|---|"]
    for app, (t0, rate) in model.compute.items():
        lines.append(f"| {app} | {t0 * 1e6:.1f} µs | {rate / 1e9:.1f} G/s |")
    lines += ["", "Halo fits (one message each way): t = alpha + bytes / beta", "",
              "| backend | alpha | beta |", "|---|---|---|"]
    for k, (a, b) in model.halo.items():
        lines.append(f"| {k} | {a * 1e6:.1f} µs | {b / 1e9:.1f} GB/s |")
    for kind in ("weak", "strong"):
        lines += ["", f"{kind.capitalize()} scaling efficiency (exchanges: {model.cal['halo_backend_node']} within a node, "
                  "NCCL between nodes)", "",
                  "| run | " + " | ".join(f"{p} GPUs" for p in show) + " |",
                  "|---|" + "---|" * len(show)]
        for key, row in res[kind].items():
            lines.append(f"| {key} | " + " | ".join(f"{row[str(p)]:.2f}" for p in show) + " |")
    lines += ["", f"CFD grid-point-steps/s per GPU ({model.cal['halo_backend_node']} within a node, blocking exchanges)",
              "",
              "| local grid | " + " | ".join(f"{p} GPUs" for p in show) + " |", "|---|" + "---|" * len(show)]
    for key, row in res["cfd_throughput"].items():
        lines.append(f"| {key} | " + " | ".join(f"{row[str(p)] / 1e6:.0f} M" for p in show) + " |")
    return "\n".join(lines)


def check(model, res):
    bad = []
    for app in ("stencil", "stencil_app", "cg_csr", "cg_mf", "cfd"):
        for n, t in model.cal[app]["points"]:
            got = model.t_compute(app, n)
            if len(model.cal[app]["points"]) <= 2 and abs(got - t) > 0.005 * t:
                bad.append(f"{app}: N {n} modelled {got:.4g} s, measured {t:.4g} s")
    for kind in ("weak", "strong"):
        for key, row in res[kind].items():
            for p, e in row.items():
                if not (0.0 < e <= 1.0 + 1e-12):
                    bad.append(f"{kind} {key} at {p} GPUs: efficiency {e}")
    for key, row in res["weak"].items():
        if key.endswith(" overlap"):
            plain = res["weak"][key[: -len(" overlap")]]
            for p, e in row.items():
                if e < plain[p] - 1e-12:
                    bad.append(f"{key} at {p} GPUs: overlap {e:.3f} below blocking {plain[p]:.3f}")
    for k in ("nccl", "mpi", "ipc"):
        pts = model.cal["halo_" + k]
        a, b = model.halo[k]
        worst = max(abs(a + x / b - t) / t for x, t in pts)
        if worst > 0.25:
            bad.append(f"halo fit {k}: worst relative misfit {worst:.2f}")
    return bad


def plot(res, prefix, model):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for kind in ("weak", "strong"):
        fig, ax = plt.subplots(figsize=(9, 4.8))
        bases = [k for k in res[kind] if not k.endswith(" overlap")]
        colors = plt.get_cmap("tab10")
        for i, base in enumerate(bases):  # one colour per run; dashed: split-phase overlap
            for key, ls in ((base, "-"), (base + " overlap", "--")):
                if key not in res[kind]:
                    continue
                row = res[kind][key]
                ps = [int(p) for p in row]
                ax.plot(ps, [row[str(p)] for p in ps], marker="o", ms=3, ls=ls, color=colors(i % 10),
                        label=key)
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("parallel efficiency")
        ax.set_title(f"spmdarray {kind} scaling, model (docs/scaling-model.md)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        fig.savefig(f"{prefix}-{kind}.png", dpi=120)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, row in res["cfd_throughput"].items():
        ps = [int(p) for p in row]
        ax.plot(ps, [row[str(p)] / 1e6 for p in ps], marker="o", ms=3, label=f"spmdarray model, H100, {key}")
    cu = model.cal["cunumeric_cfd"]
    ax.plot([c[0] for c in cu], [c[1] / 1e6 for c in cu], "k--", marker="s", label="cuNumeric, A100 (published)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("M grid-point-steps/s per GPU")
    ax.set_title("CFD step 12, weak scaling")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{prefix}-cfd.png", dpi=120)
    plt.close(fig)


# ---- recalibration from, and comparison with, the multi-GPU runs (scripts/gpu/multigpu.sh) -----


def series_model(name):
    """(model app, side, overlap, backend) of a multigpu.json series name, or None: "stencil
    --fast 16384^2/GPU", "cg matrix-free 4096^2/GPU", "stencil --fast 16384^2 SPMD_BACKEND=nccl"."""
    import re

    m = re.search(r"(\d+)\^2", name)
    if not m:
        return None
    side = int(m.group(1))
    if name.startswith("stencil"):
        app = "stencil_app" if "--fast" in name else None
    elif name.startswith("cfd"):
        app = "cfd"
    elif name.startswith("cg"):
        app = None if "--pipelined" in name else ("cg_mf" if "matrix-free" in name else "cg_csr")
    else:
        app = None
    b = re.search(r"SPMD_BACKEND=(\w+)", name)
    return (app, side, "--overlap" in name, b.group(1) if b else None) if app else None


def calibration_from(doc):
    """CALIBRATION keys measured by a multigpu.json run, each with a note of where it came from."""
    import re

    cal, notes = {}, {}
    where = f"{doc.get('machine', '?')}, {doc.get('date', '?')} (scripts/gpu/multigpu.sh)"
    one = {}  # model app -> [[points, seconds per step], ...] from the 1-GPU runs
    for s in doc.get("series", []):
        sm = series_model(s["name"])
        if not sm or sm[2] or sm[3]:
            continue
        app, side = sm[0], sm[1]
        for p in s["points"]:
            if p["gpus"] == 1 and p.get("seconds_per_step") and s["kind"] == "weak":
                pts = 1.0 * side * side
                if app in ("cg_csr", "cg_mf"):  # per iteration already; rows = side^2
                    one.setdefault(app, []).append([pts, p["seconds_per_step"]])
                else:
                    one.setdefault(app, []).append([pts, p["seconds_per_step"]])
    for app, pts in one.items():
        pts = sorted({tuple(x) for x in pts})
        if len(pts) >= 2:
            entry = {"points": [list(x) for x in pts]}
            if app == "cfd":
                entry["nit"] = CALIBRATION["cfd"]["nit"]
            cal[app] = entry
            notes[app] = f"1-GPU runs at {len(pts)} sizes, {where}"
    halo = [h for h in doc.get("halo", []) if h.get("latency_us") and h["gpus"] > 1]
    if halo:
        g = min(h["gpus"] for h in halo)
        for backend in ("mpi", "nccl", "ipc"):
            pts = []
            for h in halo:
                m = re.match(r"(\d)d face n=(\d+)$", h["case"])
                if h["gpus"] != g or h["backend"] != backend or not m:
                    continue
                n = int(m.group(2))
                pts.append([8.0 * (n if m.group(1) == "2" else n * n), h["latency_us"] * 1e-6])
            if len(pts) >= 2:
                cal["halo_" + backend] = sorted(pts)
                notes["halo_" + backend] = f"bench_halo at {g} GPUs, non-periodic face exchanges, {where}"
    used = {h["used"].split()[-1] for h in halo if h["backend"] == "automatic" and h.get("used")}
    if len(used) == 1 and used <= {"mpi", "nccl", "ipc"}:
        cal["halo_backend_node"] = used.pop()
        notes["halo_backend_node"] = f"the backend bench_halo's automatic runs used, {where}"
    ar = {a["gpus"]: a["latency_us"] for a in doc.get("allreduce", []) if a["way"] == "allreduce/device_mpi"
          and a.get("latency_us")}
    if 1 in ar and max(ar) > 1:
        p = max(ar)
        cal["allreduce_stage_node"] = max(0.0, (ar[p] - ar[1]) * 1e-6 / math.log2(p))
        notes["allreduce_stage_node"] = f"bench_allreduce device_mpi at 1 and {p} GPUs, {where}"
    return cal, notes


def measured_table(model, doc):
    lines = ["| series | GPUs | measured | model | model app, backend |", "|---|---|---|---|---|"]
    for s in doc.get("series", []):
        sm = series_model(s["name"])
        for g, e in sorted(s.get("efficiency", {}).items(), key=lambda x: int(x[0])):
            p = int(g)
            if p == 1:
                continue
            if not sm:
                lines.append(f"| {s['name']} | {p} | {e:.2f} | - | not modelled |")
                continue
            app, side, overlap, backend = sm
            t1 = model.step(app, 1, side)
            if s["kind"] == "weak":
                pred = t1 / model.step(app, p, side, backend=backend, overlap=overlap)
            else:
                pred = t1 / (p * model.step(app, p, math.sqrt(side * side / p), backend=backend, overlap=overlap))
            shown = backend or (model.cal["halo_backend_node"] if p <= model.cal["gpus_per_node"] else "nccl")
            lines.append(f"| {s['name']} | {p} | {e:.2f} | {pred:.2f} | {app}, {shown} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calibration", help="JSON object overriding CALIBRATION keys")
    ap.add_argument("--gpus", default="", help="comma-separated GPU counts (default 1, 2, 4, ..., 2048)")
    ap.add_argument("--json", help="write the predictions and the calibration used here")
    ap.add_argument("--plot", help="PNG prefix")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--calibration-from", help="a multigpu.json (scripts/gpu/multigpu.sh) to recalibrate from")
    ap.add_argument("--write-calibration", help="with --calibration-from: write the derived keys here")
    ap.add_argument("--measured", help="a multigpu.json: measured efficiencies next to the model's")
    a = ap.parse_args(argv)
    cal = json.loads(json.dumps(CALIBRATION))
    if a.calibration:
        with open(a.calibration) as f:
            over = json.load(f)
        over.pop("notes", None)
        unknown = sorted(set(over) - set(cal))
        if unknown:
            sys.exit(f"scaling_model.py: unknown calibration keys {unknown} in {a.calibration}")
        cal.update(over)
    if a.calibration_from:
        with open(a.calibration_from) as f:
            derived, notes = calibration_from(json.load(f))
        cal.update(derived)
        for k, v in notes.items():
            print(f"calibrated {k}: {v}", file=sys.stderr)
        if a.write_calibration:
            with open(a.write_calibration, "w") as f:
                json.dump(dict(derived, notes=notes), f, indent=1)
    gpus = [int(x) for x in a.gpus.split(",")] if a.gpus else gpu_counts(2048)
    model = Model(cal)
    res = predict(model, gpus)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"calibration": cal, "fits": {"compute": model.compute, "halo": model.halo},
                       "gpus": gpus, "predictions": res}, f, indent=1)
    if a.markdown:
        print(markdown(model, res, gpus))
    if a.measured:
        with open(a.measured) as f:
            print(measured_table(model, json.load(f)))
    if a.plot:
        plot(res, a.plot, model)
    if a.check:
        bad = check(model, res)
        for b in bad:
            print("scaling_model check FAILED:", b)
        if bad:
            return 1
        print(f"scaling_model check ok: {len(res['weak']) + len(res['strong'])} curves over {len(gpus)} GPU counts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
