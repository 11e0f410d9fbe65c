#!/usr/bin/env python3
"""Soak test: one app (stencil, cfd, cg_solver or spectral) at 2 ranks for STEPS steps (iterations) with
halo exchanges and a checkpoint every EVERY steps, LD_PRELOADing the communicator probe
(tests/soak/comm_probe.cpp). With --resources the app samples, every EVERY steps, the peak RSS
(VmHWM), the open file descriptors (/proc/self/fd) and the live MPI communicators, each the
maximum over the ranks. From the sample at step 5 EVERY ("start": after the first five
checkpoints, during which HDF5 and MPI-IO grow their buffers; cg_solver's peak RSS grows by 6 MiB
over its first four checkpoints, then stays the same to the byte) to the last one ("end"):

- the peak RSS grows by at most 1%, or, beyond that, in one half of the window only (a leak
  grows it in both halves; one late buffer growth of MPI or HDF5 - cg_solver once rose by
  0.5 MiB of 38 between two samples on a loaded CI machine - in one),
- the open file descriptors and the live communicators are the same number,

and the checkpoint prefix holds --checkpoint-keep files at the end (pruning works over the
whole run). cg_solver runs with --tol 0 so that it makes every iteration: its exit status is 2
(no convergence), as documented.

usage: soak.py APP MPIEXEC APP_EXE PROBE_LIB WORKDIR STEPS EVERY
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apptest  # noqa: E402

app, mpiexec, exe, probe, work, steps, every = sys.argv[1:8]
steps, every = int(steps), int(every)
apptest.fresh(work)
KEEP = 2

if app == "stencil":
    args, expect = ["--n", "64", "--steps", steps], 0
elif app == "cfd":
    args, expect = ["--nx", "41", "--ny", "41", "--nit", "5", "--perturb", "0.1", "--steps", steps - 1], 0
elif app == "cg_solver":
    # n = 512: the recursive residual falls ~1e-8 per 650 iterations and stays far above the
    # smallest double for 10^4 iterations; a smaller n for short runs.
    n = 512 if steps > 2000 else 128
    args, expect = ["--problem", "poisson2d", "--n", n, "--tol", "0", "--max-iters", steps], apptest.EXIT["not_converged"]
elif app == "spectral":
    # FFT plans (transposes on the communication engine) and complex checkpoints; a decaying flow.
    args, expect = ["--n", "64", "--init", "random", "--kmax", "8", "--nu", "0.01", "--steps", steps], 0
else:
    sys.exit(f"soak.py: no soak for {app}")
prefix = os.path.join(work, "ck")
args += ["--resources", "--monitor", every, "--checkpoint-every", every, "--checkpoint", prefix,
         "--checkpoint-keep", KEEP]
env = dict(os.environ, LD_PRELOAD=os.path.abspath(probe))
r = apptest.run(mpiexec, exe, 2, args, os.path.join(work, "soak.json"), timeout=3000, expect=expect, env=env)

samples = {s["step"]: s for s in r["resources"]}
if r["run"]["last_step"] != steps or steps not in samples or 5 * every not in samples:
    sys.exit(f"FAIL: the run ended at {r['run']['last_step']} with samples at {sorted(samples)}")
start, end = samples[5 * every], samples[steps]
if start["comms"] < 1:
    sys.exit(f"FAIL: the communicator probe is not active (comms {start['comms']}): LD_PRELOAD={probe}")
growth = end["peak_rss_bytes"] / start["peak_rss_bytes"] - 1
files = sorted(f for f in os.listdir(work) if f.startswith("ck.") and f.endswith(".h5"))
summary = {
    "app": app, "ranks": 2, "steps": steps, "checkpoint_every": every,
    "start_step": 5 * every, "end_step": steps,
    "peak_rss_bytes": [start["peak_rss_bytes"], end["peak_rss_bytes"]], "peak_rss_growth": growth,
    "rss_bytes": [start["rss_bytes"], end["rss_bytes"]],
    "fds": [start["fds"], end["fds"]], "comms": [start["comms"], end["comms"]],
    "max_comms": max(s["comms"] for s in samples.values()), "max_fds": max(s["fds"] for s in samples.values()),
    "checkpoint_files": files, "seconds": r["timings"]["seconds"],
}
with open(os.path.join(work, "soak-summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
print(f"soak {app}: {steps} steps at 2 ranks, a checkpoint every {every}: peak RSS "
      f"{start['peak_rss_bytes'] / 2**20:.2f} MiB at step {5 * every} -> {end['peak_rss_bytes'] / 2**20:.2f} MiB at "
      f"{steps} ({100 * growth:+.3f}%), open fds {start['fds']:.0f} -> {end['fds']:.0f}, live communicators "
      f"{start['comms']:.0f} -> {end['comms']:.0f}, {len(files)} checkpoint files kept")
if growth > 0.01:
    steps_in = sorted(k for k in samples if 5 * every <= k <= steps)
    mid = samples[min(steps_in, key=lambda k: abs(k - (5 * every + steps) / 2))]
    first = mid["peak_rss_bytes"] / start["peak_rss_bytes"] - 1
    second = end["peak_rss_bytes"] / mid["peak_rss_bytes"] - 1
    if first > 0.002 and second > 0.002:
        sys.exit(f"FAIL: the peak RSS grew by {100 * growth:.2f}% (more than 1%), in both halves of the window "
                 f"({100 * first:+.3f}% to step {mid['step']}, {100 * second:+.3f}% after)")
    print(f"note: the peak RSS grew by {100 * growth:.2f}% in one step of the window ({100 * first:+.3f}% to step "
          f"{mid['step']}, {100 * second:+.3f}% after): one buffer's growth, not a leak")
if end["fds"] != start["fds"]:
    sys.exit(f"FAIL: file descriptors leak: {start['fds']} -> {end['fds']}")
if end["comms"] != start["comms"]:
    sys.exit(f"FAIL: communicators leak: {start['comms']} -> {end['comms']}")
if len(files) != KEEP:
    sys.exit(f"FAIL: {len(files)} checkpoint files at the end, expected {KEEP}: {files}")
