#!/usr/bin/env python3
"""The summary of scripts/gpu/multigpu.sh: reads OUT/runs.tsv (one app run per line: series,
kind, GPUs, target efficiency, its JSON, exit status) with the apps' JSON reports, and the
Google Benchmark JSON of bench_halo and bench_allreduce (OUT/json/bench_*_g<GPUs>.json); writes
OUT/multigpu.json and prints the tables (scaling efficiencies against the targets, halo exchange
latency per backend, exposed communication with and without overlap, the 8-byte all-reduce).

Efficiency of a run on P GPUs: rate(P) / (P rate(1)) (the apps' rates are totals over the job:
weak scaling keeps the work per GPU, strong the total, and the formula is the same). A series
measured only at some GPU counts (a backend forced) takes its 1-GPU rate from the series of the
same name without the "SPMD_BACKEND=..." part.

usage: multigpu_summary.py OUT [--machine TEXT] [--date TEXT]
Standard library only (it runs on the GPU machine's python3).
"""
import argparse
import datetime
import json
import os
import re
import sys

SCHEMA = "spmdarray-multigpu/1"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def app_series(out):
    series = {}
    tsv = os.path.join(out, "runs.tsv")
    if not os.path.exists(tsv):
        return []
    for line in open(tsv):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 6:
            continue
        name, kind, gpus, target, rel, rc = parts[:6]
        doc = load(os.path.join(out, rel))
        point = {"gpus": int(gpus), "exit": int(rc), "json": rel, "rate": None}
        if doc and isinstance(doc.get("timings"), dict):
            t = doc["timings"]
            point.update(rate=t.get("rate"), unit=t.get("rate_unit"), seconds_per_step=t.get("seconds_per_step"),
                         steps=t.get("steps"), shape=(doc.get("problem") or {}).get("shape"),
                         distribution=doc.get("distribution"))
        s = series.setdefault(name, {"name": name, "kind": kind, "target": float(target), "app": None, "points": []})
        s["points"].append(point)
        if doc:
            s["app"] = doc.get("app")
    rates1 = {}
    for s in series.values():
        for p in s["points"]:
            if p["gpus"] == 1 and p["rate"]:
                rates1[s["name"]] = p["rate"]
    for s in series.values():
        base = rates1.get(s["name"]) or rates1.get(re.sub(r"\s*SPMD_BACKEND=\S+", "", s["name"]))
        s["efficiency"] = {}
        for p in sorted(s["points"], key=lambda q: q["gpus"]):
            if base and p["rate"]:
                s["efficiency"][str(p["gpus"])] = p["rate"] / (p["gpus"] * base)
        multi = [e for g, e in s["efficiency"].items() if int(g) > 1]
        s["met"] = None if not multi else all(e >= s["target"] for e in multi)
    return list(series.values())


def bench_rows(path):
    """name -> row (the median aggregate when repeated, else the run), and name -> error."""
    doc = load(path)
    rows, errors = {}, {}
    if not doc:
        return rows, errors
    for b in doc.get("benchmarks", []):
        name = re.sub(r"/(manual|real)_time$", "", b.get("run_name", b.get("name", "")))
        if b.get("error_occurred"):
            errors[name] = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        rows[name] = b
    return rows, errors


BACKENDS = {"0": "automatic", "1": "mpi", "2": "nccl", "3": "ipc"}


def benches(out):
    halo, overlap, allreduce = [], [], []
    jdir = os.path.join(out, "json")
    for f in sorted(os.listdir(jdir)) if os.path.isdir(jdir) else []:
        m = re.match(r"bench_(halo|allreduce)_g(\d+)\.json$", f)
        if not m:
            continue
        gpus = int(m.group(2))
        rows, errors = bench_rows(os.path.join(jdir, f))
        if m.group(1) == "halo":
            for name, b in list(rows.items()) + [(n, None) for n in errors]:
                h = re.match(r"BM_halo(\dd)/(\w+)/n:(\d+)/periodic:(\d)/backend:(\d)", name)
                o = re.match(r"BM_overlap/(\w+)/n:(\d+)", name)
                if h:
                    halo.append({"gpus": gpus, "case": f"{h.group(1)} {h.group(2)} n={h.group(3)}"
                                 + (" periodic" if h.group(4) == "1" else ""),
                                 "backend": BACKENDS[h.group(5)], "used": (b or {}).get("label", ""),
                                 "latency_us": (b or {}).get("latency_us"), "GB/s": (b or {}).get("GB/s"),
                                 "bytes_per_rank": (b or {}).get("bytes_per_rank"),
                                 "error": errors.get(name)})
                elif o and b:
                    overlap.append({"gpus": gpus, "mode": o.group(1), "n": int(o.group(2)),
                                    "step_us": b.get("step_us"), "exposed_us": b.get("exposed_us"),
                                    "used": b.get("label", "")})
        else:
            for name, b in list(rows.items()) + [(n, None) for n in errors]:
                a = re.match(r"BM_(allreduce/\w+|dot_to_host/per_rank:\d+)", name)
                if a:
                    allreduce.append({"gpus": gpus, "way": a.group(1), "latency_us": (b or {}).get("latency_us"),
                                      "error": errors.get(name)})
    return halo, overlap, allreduce


def fmt(x, spec="%.3g"):
    return "-" if x is None else spec % x


def tables(doc):
    lines = [f"multi-GPU runs: {doc['machine']}, {doc['date']}", ""]
    gpus = sorted({p["gpus"] for s in doc["series"] for p in s["points"]})
    head = "| series | kind | " + " | ".join(f"{g} GPU rate (eff.)" for g in gpus) + " | target | met |"
    lines += [head, "|---|---|" + "---|" * len(gpus) + "---|---|"]
    for s in doc["series"]:
        cells = []
        for g in gpus:
            p = next((q for q in s["points"] if q["gpus"] == g), None)
            if p is None:
                cells.append("")
                continue
            e = s["efficiency"].get(str(g))
            bad = "" if p["exit"] in (0, 2) else f" exit {p['exit']}"
            cells.append(f"{fmt(p['rate'])}" + (f" ({e:.2f})" if e is not None and g > 1 else "") + bad)
        met = {None: "", True: "yes", False: "NO"}[s["met"]]
        lines.append(f"| {s['name']} | {s['kind']} | " + " | ".join(cells) + f" | {s['target']:.2f} | {met} |")
    if doc["halo"]:
        lines += ["", "halo exchange, µs per exchange (slowest rank, median):", "",
                  "| GPUs | case | automatic | mpi | nccl | ipc |", "|---|---|---|---|---|---|"]
        cases = sorted({(h["gpus"], h["case"]) for h in doc["halo"]})
        for g, c in cases:
            by = {h["backend"]: h for h in doc["halo"] if h["gpus"] == g and h["case"] == c}
            cell = [("skipped" if by.get(b, {}).get("error") else fmt(by.get(b, {}).get("latency_us"), "%.1f"))
                    for b in ("automatic", "mpi", "nccl", "ipc")]
            lines.append(f"| {g} | {c} | " + " | ".join(cell) + " |")
    if doc["overlap"]:
        lines += ["", "stencil step with the halo exchange (bench_halo BM_overlap), µs per step; exposed ="
                  " step - update alone:", "", "| GPUs | n | update | sequential (exposed) | overlapped (exposed) |",
                  "|---|---|---|---|---|"]
        for g, n in sorted({(o["gpus"], o["n"]) for o in doc["overlap"]}):
            by = {o["mode"]: o for o in doc["overlap"] if o["gpus"] == g and o["n"] == n}
            u, sq, ov = by.get("update", {}), by.get("sequential", {}), by.get("overlapped", {})
            lines.append(f"| {g} | {n} | {fmt(u.get('step_us'), '%.1f')} | {fmt(sq.get('step_us'), '%.1f')} "
                         f"({fmt(sq.get('exposed_us'), '%.1f')}) | {fmt(ov.get('step_us'), '%.1f')} "
                         f"({fmt(ov.get('exposed_us'), '%.1f')}) |")
    if doc["allreduce"]:
        ways = sorted({a["way"] for a in doc["allreduce"]})
        lines += ["", "8-byte all-reduce and dot to a host scalar, µs per call (target <= 25 at 2 and 4 GPUs):", "",
                  "| GPUs | " + " | ".join(ways) + " |", "|---|" + "---|" * len(ways)]
        for g in sorted({a["gpus"] for a in doc["allreduce"]}):
            by = {a["way"]: a for a in doc["allreduce"] if a["gpus"] == g}
            lines.append(f"| {g} | " + " | ".join(
                "skipped" if by.get(w, {}).get("error") else fmt(by.get(w, {}).get("latency_us"), "%.1f")
                for w in ways) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--machine", default="")
    ap.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    a = ap.parse_args(argv)
    halo, overlap, allreduce = benches(a.out)
    doc = {"schema": SCHEMA, "machine": a.machine, "date": a.date, "series": app_series(a.out), "halo": halo,
           "overlap": overlap, "allreduce": allreduce}
    with open(os.path.join(a.out, "multigpu.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(tables(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
