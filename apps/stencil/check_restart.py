#!/usr/bin/env python3
"""stencil restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 10
iterations, restarted after iteration 20 at 2 ranks and at 3 ranks (in place and --fast), and with
--restart latest. The final grid must be bitwise equal (crc32 of the whole grid) and the check
value equal: bitwise at the same rank count, to roundoff at another.

usage: check_restart.py MPIEXEC STENCIL_EXE WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mpiexec, exe, work = sys.argv[1:4]
apptest.fresh(work)
common = ["--n", "37", "--steps", "40"]


def run(np_, name, args):
    return apptest.run(mpiexec, exe, np_, args, os.path.join(work, name + ".json"))


r = apptest.restart_runs(run, os.path.join(work, "ck"), common, every=10, keep=5, latest_ranks=3)
ref, ckp, same, other, latest = r.ref, r.ckp, r.same, r.other, r.latest
fast = run(3, "restart-np3-fast", ["--restart", r.first, "--fast"])
for x in (same, other, fast):
    if x["run"]["first_step"] != 21:
        sys.exit(f"FAIL: restart began at step {x['run']['first_step']}, not 21")
if latest["run"]["first_step"] != 41:  # the newest checkpoint is the last step: nothing left
    sys.exit(f"FAIL: --restart latest began at {latest['run']['first_step']}, not 41")
apptest.check_same_state(ref, (("checkpointing", ckp), ("restart-np2", same), ("restart-np3", other),
                                ("restart-np3-fast", fast), ("restart-latest", latest)), "sum")
if same["check"]["sum"] != ref["check"]["sum"] or ckp["check"]["sum"] != ref["check"]["sum"]:
    sys.exit(f"FAIL: same rank count but check {same['check']['sum']!r} != {ref['check']['sum']!r}")
print(f"stencil restart: final grids bitwise equal (crc32 {apptest.crc(ref)}); checks", ref["check"]["sum"],
      other["check"]["sum"])
