#!/usr/bin/env python3
"""stencil restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 10
iterations, restarted after iteration 20 at 2 ranks and at 3 ranks (in place and --fast), and with
--restart latest. The final grid must be bitwise equal (crc32 of the whole grid) and the check
value equal: bitwise at the same rank count, to roundoff at another.

usage: check_restart.py MPIEXEC STENCIL_EXE WORKDIR
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mpiexec, exe, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
common = ["--n", "37", "--iters", "40"]


def run(np_, name, extra):
    return apptest.run(mpiexec, exe, np_, common + extra, os.path.join(work, name + ".json"))


r = apptest.restart_runs(run, os.path.join(work, "ck"), [], every=10, keep=5, latest_ranks=3)
ref, ckp, same, other, latest = r.ref, r.ckp, r.same, r.other, r.latest
fast = run(3, "restart-np3-fast", ["--restart", r.first, "--fast"])
for r in (same, other, fast):
    if r["first_iteration"] != 21:
        sys.exit(f"FAIL: restart began at iteration {r['first_iteration']}, not 21")
if latest["first_iteration"] != 41:  # the newest checkpoint is the last iteration: nothing left
    sys.exit(f"FAIL: --restart latest began at {latest['first_iteration']}, not 41")
apptest.check_same_state(ref, (("checkpointing", ckp), ("restart-np2", same), ("restart-np3", other),
                                ("restart-np3-fast", fast), ("restart-latest", latest)), "check")
if same["check"] != ref["check"] or ckp["check"] != ref["check"]:
    sys.exit(f"FAIL: same rank count but check {same['check']!r} != {ref['check']!r}")
print(f"stencil restart: final grids bitwise equal (crc32 {ref['state_crc32']:#010x}); checks", ref["check"],
      other["check"])
