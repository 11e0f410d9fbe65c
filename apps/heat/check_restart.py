#!/usr/bin/env python3
"""heat restart test: an uninterrupted run at 2 ranks against a run that checkpoints every 20
steps, restarted from step 20 at 2 ranks and at 3 ranks (and with --restart latest). The final
grid must be bitwise equal (crc32 of the whole grid, `state_crc32` in the JSON) and the sum equal
to roundoff.

usage: check_restart.py MPIEXEC HEAT_EXE WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

mpiexec, heat, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
common = ["--n", "48", "--steps", "60", "--every", "30"]


def run(np, name, extra):
    out = os.path.join(work, name + ".json")
    cmd = [mpiexec, "-n", str(np), heat] + common + ["--json", out] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=200)
    print(" ".join(cmd))
    print(p.stdout)
    if p.returncode != 0:
        sys.exit(f"FAIL: {name} exited with {p.returncode}")
    with open(out) as f:
        return json.load(f)


prefix = os.path.join(work, "ck")
ref = run(2, "uninterrupted", [])
ckp = run(2, "checkpointing", ["--checkpoint-every", "20", "--checkpoint", prefix, "--checkpoint-keep", "5"])
first = prefix + ".0000000020.h5"
same = run(2, "restart-np2", ["--restart", first])
other = run(3, "restart-np3", ["--restart", first])
latest = run(3, "restart-latest", ["--restart", "latest", "--checkpoint", prefix])
assert same["first_step"] == 21 and other["first_step"] == 21, (same, other)
assert latest["first_step"] == 61, latest  # the newest checkpoint is the final step: nothing left to do
for name, r in (("checkpointing", ckp), ("restart-np2", same), ("restart-np3", other), ("restart-latest", latest)):
    if r["state_crc32"] != ref["state_crc32"]:
        sys.exit(f"FAIL: {name}: final grid crc32 {r['state_crc32']} != uninterrupted {ref['state_crc32']}")
    if abs(r["sum"] - ref["sum"]) > 1e-12 * abs(ref["sum"]):
        sys.exit(f"FAIL: {name}: sum {r['sum']!r} vs {ref['sum']!r}")
if same["sum"] != ref["sum"]:
    sys.exit(f"FAIL: same rank count but sum {same['sum']!r} != {ref['sum']!r}")
print(f"heat restart: final grids bitwise equal (crc32 {ref['state_crc32']:#010x}); sums",
      ref["sum"], other["sum"])
