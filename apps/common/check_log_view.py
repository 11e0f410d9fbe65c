#!/usr/bin/env python3
"""--spmd-log-view (docs/profiling.md) on apps/cfd at 2 ranks:

- with --spmd-log-view, and with SPMD_LOG_VIEW=1 instead, rank 0 prints the summary once, after
  the app's own output, for 2 ranks; without either, nothing;
- the halo regions are counted as cfd makes them: (warm-up + steps) x (2 nit + 2) exchanges per
  rank (docs in apps/cfd/cfd.cpp: u and v once, pn and p in each of the nit sweeps, p once more),
  the same on both ranks (no `*`), with messages and bytes in spmd::halo::begin only;
- the collectives appear (spmd::comm::allreduce, the reductions' spmd::reduce::sum);
- an unknown --spmd-* option given to one rank only (an MPMD launch) ends the job, without a
  hang, with a non-zero status and the error printed once (spmd::Runtime agrees on it).

usage: check_log_view.py MPIEXEC CFD_EXE WORKDIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apptest  # noqa: E402

mpiexec, exe, work = sys.argv[1:4]
apptest.fresh(work)
WARMUP, STEPS, NIT = 1, 3, 2
ARGS = ["--nx", "11", "--ny", "9", "--nit", NIT, "--steps", STEPS, "--warmup", WARMUP, "--perturb", "0.1",
        "--quiet"]
HEADER = "spmd log view"


def rows(out):
    """region -> (count, count differs between ranks, msgs, bytes column text, coll)."""
    table = {}
    for line in out.splitlines():
        m = re.match(r"^(spmd::\S+|cfd::\S+)\s+(\d+)([ *])\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+"
                     r"(\S+ \S+)\s+(\d+)\s+(\S+ \S+)\s*$", line)
        if m:
            table[m.group(1)] = (int(m.group(2)), m.group(3) == "*", int(m.group(9)), m.group(10), int(m.group(11)))
    return table


def check(out, how):
    if out.count(HEADER) != 1:
        sys.exit(f"FAIL ({how}): the summary is printed {out.count(HEADER)} times, expected once")
    if "2 ranks" not in out.split(HEADER, 1)[1].splitlines()[1]:
        sys.exit(f"FAIL ({how}): the summary does not say 2 ranks")
    t = rows(out)
    want = (WARMUP + STEPS) * (2 * NIT + 2)
    for name in ("spmd::halo::begin", "spmd::halo::end"):
        if name not in t:
            sys.exit(f"FAIL ({how}): no row {name} in the summary")
        count, differs = t[name][0], t[name][1]
        if count != want or differs:
            sys.exit(f"FAIL ({how}): {name} counted {count}{' (differs between ranks)' if differs else ''}, "
                     f"expected {want} on every rank")
    if t["spmd::halo::begin"][2] == 0 or t["spmd::halo::begin"][3] == "0 B":
        sys.exit(f"FAIL ({how}): spmd::halo::begin moved no messages at 2 ranks")
    if t["spmd::halo::end"][2] != 0:
        sys.exit(f"FAIL ({how}): spmd::halo::end counts messages sent")
    for name in ("spmd::comm::allreduce", "spmd::reduce::sum"):
        if name not in t or t[name][4] < 1:
            sys.exit(f"FAIL ({how}): no collective counted in {name}")


env = dict(os.environ)
rc, out = apptest.launch(mpiexec, exe, 2, ARGS + ["--spmd-log-view"], env=env)
if rc != 0:
    sys.exit(f"FAIL: cfd --spmd-log-view exited with {rc}")
check(out, "--spmd-log-view")

env_on = dict(env, SPMD_LOG_VIEW="1")
rc, out = apptest.launch(mpiexec, exe, 2, ARGS, env=env_on)
if rc != 0:
    sys.exit(f"FAIL: SPMD_LOG_VIEW=1 cfd exited with {rc}")
check(out, "SPMD_LOG_VIEW=1")

env_off = {k: v for k, v in env.items() if k != "SPMD_LOG_VIEW"}
rc, out = apptest.launch(mpiexec, exe, 2, ARGS, env=env_off)
if rc != 0 or HEADER in out:
    sys.exit(f"FAIL: without --spmd-log-view: exit {rc}, summary printed: {HEADER in out}")
# One rank's bad option: `mpiexec -n 1 cfd ... : -n 1 cfd ... --spmd-bogus`.
cmd = [mpiexec, "-n", "1", exe] + [str(a) for a in ARGS] + [":", "-n", "1", exe] + [str(a) for a in ARGS] + \
      ["--spmd-bogus"]
p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, env=env_off)
print(" ".join(cmd), f"-> exit {p.returncode}")
print(p.stdout, flush=True)
needle = "unknown option '--spmd-bogus'"
if p.returncode == 0 or p.stdout.count(needle) != 1 or "[detected on rank 1 of 2]" not in p.stdout:
    sys.exit(f"FAIL: one rank's --spmd-bogus: exit {p.returncode}, the error printed {p.stdout.count(needle)} times "
             "(expected non-zero, once, detected on rank 1)")
print("OK: --spmd-log-view, and a bad --spmd-* option on one rank")
