#!/usr/bin/env python3
"""stencil restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 10
iterations, restarted after iteration 20 at 2 ranks and at 3 ranks (in place and --fast), and with
--restart latest. The final grid must be bitwise equal (crc32 of the whole grid) and the check
value equal: bitwise at the same rank count, to roundoff at another.

usage: check_restart.py MPIEXEC STENCIL_EXE WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

mpiexec, exe, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
common = ["--n", "37", "--iters", "40"]


def run(np_, name, extra):
    out = os.path.join(work, name + ".json")
    cmd = [mpiexec, "-n", str(np_), exe] + common + ["--json", out] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    print(" ".join(cmd))
    print(p.stdout)
    if p.returncode != 0:
        sys.exit(f"FAIL: {name} exited with {p.returncode}")
    with open(out) as f:
        return json.load(f)


prefix = os.path.join(work, "ck")
ref = run(2, "uninterrupted", [])
ckp = run(2, "checkpointing", ["--checkpoint-every", "10", "--checkpoint", prefix, "--checkpoint-keep", "5"])
first = prefix + ".0000000020.h5"
same = run(2, "restart-np2", ["--restart", first])
other = run(3, "restart-np3", ["--restart", first])
fast = run(3, "restart-np3-fast", ["--restart", first, "--fast"])
latest = run(3, "restart-latest", ["--restart", "latest", "--checkpoint", prefix])
for r in (same, other, fast):
    if r["first_iteration"] != 21:
        sys.exit(f"FAIL: restart began at iteration {r['first_iteration']}, not 21")
if latest["first_iteration"] != 41:  # the newest checkpoint is the last iteration: nothing left
    sys.exit(f"FAIL: --restart latest began at {latest['first_iteration']}, not 41")
for name, r in (("checkpointing", ckp), ("restart-np2", same), ("restart-np3", other), ("restart-np3-fast", fast),
                ("restart-latest", latest)):
    if r["state_crc32"] != ref["state_crc32"]:
        sys.exit(f"FAIL: {name}: final grid crc32 {r['state_crc32']} != uninterrupted {ref['state_crc32']}")
    if abs(r["check"] - ref["check"]) > 1e-12 * abs(ref["check"]):
        sys.exit(f"FAIL: {name}: check {r['check']!r} vs {ref['check']!r}")
if same["check"] != ref["check"] or ckp["check"] != ref["check"]:
    sys.exit(f"FAIL: same rank count but check {same['check']!r} != {ref['check']!r}")
print(f"stencil restart: final grids bitwise equal (crc32 {ref['state_crc32']:#010x}); checks", ref["check"],
      other["check"])
