#!/usr/bin/env python3
"""Summarize spmdarray benchmark JSON (Google Benchmark --benchmark_out_format=json).

Usage: perf/summarize.py RESULTS_DIR_OR_FILES...

Prints, per file, one Markdown table row per benchmark: median time, its coefficient of
variation, and the median of each counter; then, for bench_triad files, the
BM_triad_array / BM_triad_view ratio of median GB/s per size. Works on runs made with
--benchmark_repetitions (uses the *_median and *_cv aggregates) and on single runs.
"""
import json
import pathlib
import re
import sys


def load(paths):
    files = []
    for p in map(pathlib.Path, paths):
        files += sorted(p.glob("*.json")) if p.is_dir() else [p]
    return files


def rows(doc):
    """run_name -> {"median": row, "cv": row} (or {"single": row})."""
    out = {}
    for b in doc.get("benchmarks", []):
        name = b.get("run_name", b["name"])
        kind = b.get("aggregate_name", "single") if b.get("run_type") == "aggregate" else "single"
        if kind == "single" and b.get("repetitions", 1) > 1:
            kind = "rep%d" % b.get("repetition_index", 0)
        out.setdefault(name, {})[kind] = b
    return out


SKIP = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
        "repetition_index", "threads", "aggregate_name", "aggregate_unit", "iterations", "real_time",
        "cpu_time", "time_unit", "label", "error_occurred", "error_message"}


def fmt(v):
    if float(v).is_integer() and abs(v) < 1e12:
        return "%d" % v
    if abs(v) >= 100:
        return "%.0f" % v
    if v != 0 and abs(v) < 1e-2:
        return "%.3g" % v
    return "%.3g" % v if abs(v) < 10 else "%.1f" % v


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    for path in load(argv[1:]):
        doc = json.loads(path.read_text())
        ctx = doc.get("context", {})
        print("\n### %s (ranks: %s, load avg: %s)\n" % (path.name, ctx.get("mpi_ranks", "?"),
                                                         ", ".join("%.2f" % x for x in ctx.get("load_avg", []))))
        table = rows(doc)
        print("| benchmark | median time | cv | counters (median) |")
        print("|---|---|---|---|")
        triad = {}
        for name, kinds in table.items():
            med = kinds.get("median") or kinds.get("single") or kinds.get("rep0")
            if med is None:
                continue
            cv = kinds.get("cv")
            counters = {k: v for k, v in med.items() if k not in SKIP and isinstance(v, (int, float))}
            ctext = ", ".join("%s=%s" % (k, fmt(v)) for k, v in counters.items())
            if med.get("label"):
                ctext += " (%s)" % med["label"]
            cvtext = "%.1f%%" % (100 * cv["real_time"]) if cv else "-"
            print("| %s | %s %s | %s | %s |" % (name.replace("/manual_time", ""), fmt(med["real_time"]),
                                               med["time_unit"], cvtext, ctext))
            m = re.match(r"BM_(?:triad_)?(array|view|copy_view)/n:(\d+)", name)
            if m and "GB/s" in counters:
                triad.setdefault(int(m.group(2)), {})[m.group(1)] = counters["GB/s"]
        if triad:
            print("\n| n | array GB/s | view GB/s | copy GB/s | array/view | array/copy |")
            print("|---|---|---|---|---|---|")
            for n, v in sorted(triad.items()):
                if "array" in v and "view" in v:
                    copy = v.get("copy_view")
                    print("| 2^%d | %.1f | %.1f | %s | %.2f | %s |" % (
                        n.bit_length() - 1, v["array"], v["view"], "%.1f" % copy if copy else "-",
                        v["array"] / v["view"], "%.2f" % (v["array"] / copy) if copy else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
