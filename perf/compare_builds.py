#!/usr/bin/env python3
"""Compare the benchmarks of two builds (old vs new) measured in one run, interleaved.

Usage:
  perf/compare_builds.py --old OLD_BUILD --new NEW_BUILD [--rounds 5] [--np 1,2]
                         [--mpiexec mpiexec.mpich] [--out DIR] BENCH[:FILTER] ...

BENCH is a program of perf/ (bench_triad, bench_halo, ...); FILTER a --benchmark_filter regex.
For each rank count and each round, every BENCH runs once from OLD_BUILD/perf and once from
NEW_BUILD/perf, in alternating order (old first in even rounds, new first in odd ones), so drift
of a noisy machine falls on both. Each benchmark's time (real_time; manual time where the
benchmark sets it) gives one new/old ratio per round; the table prints, per benchmark and rank
count, the median old and new times and the median and spread (min..max) of the per-round
ratios. A ratio above 1 means the new build is slower. The JSON of every run lands in --out.
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys


def run(build, bench, filt, np, mpiexec, out, tag):
    exe = pathlib.Path(build) / "perf" / bench
    if not exe.is_file():
        sys.exit(f"compare_builds: {exe} does not exist (build the target {bench} first)")
    cmd = [mpiexec, "-n", str(np), str(exe), "--benchmark_format=json", f"--benchmark_out={out}",
           "--benchmark_out_format=json"]
    if filt:
        cmd.append(f"--benchmark_filter={filt}")
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"compare_builds: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    doc = json.loads(pathlib.Path(out).read_text())
    times = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        times[b["name"]] = float(b["real_time"])
    if not times:
        sys.exit(f"compare_builds: {tag} {bench} (filter {filt!r}) produced no benchmark results")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--np", default="1,2")
    ap.add_argument("--mpiexec", default="mpiexec.mpich")
    ap.add_argument("--out", default="compare-results")
    ap.add_argument("benches", nargs="+")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    samples = {}  # (np, name) -> {"old": [...], "new": [...], "ratio": [...]}
    for np in [int(x) for x in a.np.split(",")]:
        for rnd in range(a.rounds):
            for spec in a.benches:
                bench, _, filt = spec.partition(":")
                order = ["old", "new"] if rnd % 2 == 0 else ["new", "old"]
                got = {}
                for tag in order:
                    build = a.old if tag == "old" else a.new
                    got[tag] = run(build, bench, filt, np, a.mpiexec, out / f"{bench}_np{np}_r{rnd}_{tag}.json", tag)
                for name in sorted(set(got["old"]) & set(got["new"])):
                    s = samples.setdefault((np, name), {"old": [], "new": [], "ratio": []})
                    s["old"].append(got["old"][name])
                    s["new"].append(got["new"][name])
                    s["ratio"].append(got["new"][name] / got["old"][name])
            print(f"[compare_builds] np {np}: round {rnd + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    print("| ranks | benchmark | old (median) | new (median) | new/old (median of rounds) | min..max |")
    print("| ---: | --- | ---: | ---: | ---: | --- |")
    summary = []
    for (np, name), s in sorted(samples.items()):
        r = statistics.median(s["ratio"])
        summary.append({"np": np, "name": name, "old": statistics.median(s["old"]),
                        "new": statistics.median(s["new"]), "ratio": r, "ratios": s["ratio"]})
        print(f"| {np} | {name} | {statistics.median(s['old']):.4g} | {statistics.median(s['new']):.4g} | "
              f"{r:.3f} | {min(s['ratio']):.3f}..{max(s['ratio']):.3f} |")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
