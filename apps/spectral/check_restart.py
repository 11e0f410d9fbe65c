#!/usr/bin/env python3
"""spectral restart test: an uninterrupted run at 2 ranks against a run that checkpoints w_hat every
10 steps, restarted from its checkpoint of step 20 at 2 ranks and at 3 ranks (with no option but
--restart: the problem, and the automatic dt, come from the checkpoint), and with --restart latest
(common/apptest.py restart_runs). The final w_hat and w must be bitwise equal to the uninterrupted
run's (crc32; the state is the same bits at every rank count, docs/spectral.md), and a restart
that changes the problem (--nu) is refused.

usage: check_restart.py MPIEXEC SPECTRAL_EXE WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import apptest  # noqa: E402

mpiexec, exe, work = sys.argv[1:4]
apptest.fresh(work)
common = ["--n", "32", "--steps", "30", "--init", "random", "--nu", "0.01", "--cfl", "0.5", "--seed", "5",
          "--monitor", "0"]


def run(np_, name, args, expect=0):
    return apptest.run(mpiexec, exe, np_, args, os.path.join(work, name + ".json"), expect=expect)


r = apptest.restart_runs(run, os.path.join(work, "ck"), common, every=10, keep=5, latest_ranks=3)
ref = r.ref
for name, x in (("restart-np2", r.same), ("restart-np3", r.other)):
    if x["run"]["first_step"] != 21 or x["problem"]["dt"] != ref["problem"]["dt"]:
        sys.exit(f"FAIL: {name} began at step {x['run']['first_step']} with dt {x['problem']['dt']!r}, "
                 f"not 21 and {ref['problem']['dt']!r}")
if r.latest["run"]["first_step"] != 31:  # the newest checkpoint is the last step: nothing left
    sys.exit(f"FAIL: --restart latest began at {r.latest['run']['first_step']}, not 31")
runs = (("checkpointing", r.ckp), ("restart-np2", r.same), ("restart-np3", r.other), ("restart-latest", r.latest))
apptest.check_same_state(ref, runs, "energy")
for name, x in runs:  # exact sums (spmd::reproducible): the same bits
    if x["check"]["energy"] != ref["check"]["energy"] or x["check"]["enstrophy"] != ref["check"]["enstrophy"]:
        sys.exit(f"FAIL: {name}: energy/enstrophy {x['check']['energy']!r} {x['check']['enstrophy']!r} vs "
                 f"{ref['check']['energy']!r} {ref['check']['enstrophy']!r}")
rc, out = apptest.launch(mpiexec, exe, 2, ["--restart", r.first, "--nu", "0.02"])
if rc != apptest.EXIT["error"] or "--nu 0.02 differs from the checkpoint" not in out:
    sys.exit(f"FAIL: a restart with another --nu: exit {rc}")
print(f"spectral restart: final state bitwise equal (crc32 {apptest.crc(ref)}) at 2 and 3 ranks and from the "
      f"latest checkpoint; energy {ref['check']['energy']!r}")
