#!/usr/bin/env python3
"""cfd restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 10 steps
(warm-up step included), restarted from its checkpoint of step 20 at 2 ranks and at 3 ranks, at 3
ranks on a 1 x 3 process grid with --moved-columns (the periodic columns moved by the engine
instead of a periodic halo), and with --restart latest (common/apptest.py restart_runs). The final
u, v, p must be bitwise equal to the uninterrupted run's (crc32 of each whole field), and their
sums equal at 2 ranks (a sum's order follows the rank count).

usage: check_restart.py MPIEXEC CFD_EXE WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mpiexec, exe, work = sys.argv[1:4]
apptest.fresh(work)
# 1 warm-up step + 39 steps: checkpoints at steps 10, 20, 30, 40
common = ["--nx", "23", "--ny", "17", "--nit", "5", "--steps", "39", "--perturb", "0.1", "--monitor", "0"]


def run(np_, name, args):
    return apptest.run(mpiexec, exe, np_, args, os.path.join(work, name + ".json"))


r = apptest.restart_runs(run, os.path.join(work, "ck"), common, every=10, keep=5, latest_ranks=3)
ref = r.ref
moved = run(3, "restart-np3-moved", ["--restart", r.first, "--moved-columns", "--grid", "1,3"])
for name, x in (("restart-np2", r.same), ("restart-np3", r.other), ("restart-np3-moved", moved)):
    if x["run"]["first_step"] != 21:
        sys.exit(f"FAIL: {name} began at step {x['run']['first_step']}, not 21")
if r.latest["run"]["first_step"] != 41:  # the newest checkpoint is the last step: nothing left
    sys.exit(f"FAIL: --restart latest began at {r.latest['run']['first_step']}, not 41")
runs = (("checkpointing", r.ckp), ("restart-np2", r.same), ("restart-np3", r.other),
        ("restart-np3-moved", moved), ("restart-latest", r.latest))
apptest.check_same_state(ref, runs, "sum_u")  # the fields bitwise (and sum u to roundoff)
# The sums at 2 ranks add in the reference's order: equal. (At 3 ranks the order differs, and v's
# sum is mostly cancellation: the fields' crc32 above is the check there.)
for name, x in (("checkpointing", r.ckp), ("restart-np2", r.same)):
    for field in ("sum_u", "sum_v", "sum_p"):
        if x["check"][field] != ref["check"][field]:
            sys.exit(f"FAIL: {name}: {field} {x['check'][field]!r} vs {ref['check'][field]!r}")
print(f"cfd restart: final u, v, p bitwise equal (crc32 {apptest.crc(ref)}) at 2 and 3 ranks, with moved "
      f"columns and from the latest checkpoint; sum u {ref['check']['sum_u']!r}")
