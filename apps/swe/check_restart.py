#!/usr/bin/env python3
"""swe restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 10 steps,
restarted from its checkpoint of step 20 at 2 ranks and at 3 ranks, and with --restart latest
(common/apptest.py restart_runs). The final w, hu, hv must be bitwise equal to the uninterrupted
run's (crc32 of each whole array), and so must the simulated time and the mass (the step sizes
come from the state alone, and the time from the checkpoint's attribute).

usage: check_restart.py MPIEXEC SWE_EXE WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mpiexec, exe, work = sys.argv[1:4]
apptest.fresh(work)
common = ["--n", "16", "--steps", "40", "--problem", "dambreak", "--monitor", "0"]


def run(np_, name, args):
    return apptest.run(mpiexec, exe, np_, args, os.path.join(work, name + ".json"))


r = apptest.restart_runs(run, os.path.join(work, "ck"), common, every=10, keep=5, latest_ranks=3)
ref = r.ref
for name, x in (("restart-np2", r.same), ("restart-np3", r.other)):
    if x["run"]["first_step"] != 21:
        sys.exit(f"FAIL: {name} began at step {x['run']['first_step']}, not 21")
if r.latest["run"]["first_step"] != 41:  # the newest checkpoint is the last step: nothing left
    sys.exit(f"FAIL: --restart latest began at {r.latest['run']['first_step']}, not 41")
runs = (("checkpointing", r.ckp), ("restart-np2", r.same), ("restart-np3", r.other), ("restart-latest", r.latest))
apptest.check_same_state(ref, runs, "mass", rel=0.0)
for name, x in runs:
    if x["check"]["time"] != ref["check"]["time"] or x["problem"]["name"] != "dambreak":
        sys.exit(f"FAIL: {name}: time {x['check']['time']!r} vs {ref['check']['time']!r}, problem {x['problem']}")
print(f"swe restart: final states bitwise equal (crc32 {apptest.crc(ref)}), time {ref['check']['time']!r}, "
      f"mass {ref['check']['mass']!r}")
