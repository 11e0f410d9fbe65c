"""Running an app under MPI from the apps' ctest scripts (heat/check_restart.py, cfd/check_cfd.py,
stencil/check_stencil.py, stencil/check_restart.py, cg_solver/check_cg_solver.py)."""
import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace


def check_args():
    """The arguments of a check script, `MPIEXEC APP WORKDIR MAXRANKS [HDF5]`, as (mpiexec, app,
    workdir, maxranks, hdf5); WORKDIR is made afresh."""
    mpiexec, exe, work, maxranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    hdf5 = len(sys.argv) > 5 and sys.argv[5].upper() in ("1", "ON", "TRUE")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return mpiexec, exe, work, maxranks, hdf5


def run(mpiexec, exe, ranks, args, out_json, timeout=200):
    """Run `mpiexec -n ranks exe args... --json out_json`, print the command and its output, exit
    the test with a failure when it fails, and return the JSON the app wrote."""
    cmd = [mpiexec, "-n", str(ranks), exe] + list(args) + ["--json", out_json]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(" ".join(cmd))
    print(p.stdout)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {p.returncode}")
    with open(out_json) as f:
        return json.load(f)


def check_same_state(ref, runs, field, rel=1e-12):
    """Every run in `runs` (name -> JSON) ends with ref's grid bit for bit (state_crc32) and with
    ref's `field` to roundoff."""
    for name, r in runs:
        if r["state_crc32"] != ref["state_crc32"]:
            sys.exit(f"FAIL: {name}: final grid crc32 {r['state_crc32']} != uninterrupted {ref['state_crc32']}")
        if abs(r[field] - ref[field]) > rel * abs(ref[field]):
            sys.exit(f"FAIL: {name}: {field} {r[field]!r} vs {ref[field]!r}")


def restart_runs(run, prefix, common, every, keep, latest_ranks, label=""):
    """The runs every restart check makes, through the script's `run(ranks, name, args)`, all with
    the options `common`: an uninterrupted run at 2 ranks (`ref`); a run at 2 ranks that saves a
    checkpoint every `every` steps as `prefix`.<step>.h5 and keeps `keep` of them (`ckp`); restarts
    from its checkpoint of step 20 (`first`) at 2 ranks (`same`) and at 3 ranks (`other`); and
    `--restart latest` at `latest_ranks` ranks (`latest`). The run names start with `label`-."""
    name = (label + "-") if label else ""
    r = SimpleNamespace(first=prefix + ".0000000020.h5")
    r.ref = run(2, name + "uninterrupted", common)
    r.ckp = run(2, name + "checkpointing",
                common + ["--checkpoint-every", str(every), "--checkpoint", prefix, "--checkpoint-keep", str(keep)])
    r.same = run(2, name + "restart-np2", common + ["--restart", r.first])
    r.other = run(3, name + "restart-np3", common + ["--restart", r.first])
    r.latest = run(latest_ranks, name + "restart-latest", common + ["--restart", "latest", "--checkpoint", prefix])
    return r
