#!/usr/bin/env python3
"""heat restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 20
steps, restarted from step 20 at 2 ranks and at 3 ranks (and with --restart latest). The final
grid must be bitwise equal (crc32 of the whole grid, `state_crc32` in the JSON) and the sum equal
to roundoff.

usage: check_restart.py MPIEXEC HEAT_EXE WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mpiexec, heat, work = sys.argv[1:4]
apptest.fresh(work)
common = ["--n", "46", "--steps", "60", "--monitor", "30"]


def run(np, name, args):
    return apptest.run(mpiexec, heat, np, args, os.path.join(work, name + ".json"))


r = apptest.restart_runs(run, os.path.join(work, "ck"), common, every=20, keep=5, latest_ranks=3)
ref, ckp, same, other, latest = r.ref, r.ckp, r.same, r.other, r.latest
assert same["run"]["first_step"] == 21 and other["run"]["first_step"] == 21, (same["run"], other["run"])
# The problem (n, alpha) and --steps came from the checkpoint.
assert same["problem"] == ref["problem"] and other["problem"] == ref["problem"], (same["problem"], ref["problem"])
# The newest checkpoint is the final step: nothing left to do.
assert latest["run"]["first_step"] == 61, latest["run"]
apptest.check_same_state(ref, (("checkpointing", ckp), ("restart-np2", same), ("restart-np3", other),
                                ("restart-latest", latest)), "sum")
if same["check"]["sum"] != ref["check"]["sum"]:
    sys.exit(f"FAIL: same rank count but sum {same['check']['sum']!r} != {ref['check']['sum']!r}")
print(f"heat restart: final grids bitwise equal (crc32 {apptest.crc(ref)}); sums",
      ref["check"]["sum"], other["check"]["sum"])
