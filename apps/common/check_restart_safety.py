#!/usr/bin/env python3
"""Restarts that cannot mix runs (docs/checkpointing.md#apps), for one app with checkpoints
(heat, stencil, cfd, swe, cg_solver, spectral), at 2 ranks:

- a restart whose problem option contradicts the checkpoint is refused, naming the option and
  both values; so is a step target before the checkpoint's step;
- a new run pointed at a prefix holding another run's checkpoints is refused, and every file
  there stays byte-identical (none deleted);
- --restart latest skips a newest file whose data fails its checksum and a truncated one, says
  which it skipped, and continues from the newest valid one to the uninterrupted run's state;
- a checkpoint of another app, or without a run id (an older version), is refused;
- an edited value of the problem record (signed again, so that its checksum holds) that the
  option's own validator refuses is refused on restart (a negative diffusivity, a negative
  pressure-iteration count, a limiter parameter out of range, an unknown preconditioner or
  operator name, an infinite tolerance), and so are a negative step and step target; an edit
  not signed again (one flipped bit of the stored tolerance) is refused as damage;
- a failed checkpoint write (the .xmf sidecar, or a missing directory) is an error, not exit 0;
- a state holding NaN (with a valid checksum) ends with exit status 3, not 0 (heat, stencil,
  spectral);
- cg_solver: a matrix file whose values were scaled is refused (problem.matrix_checksum), the same
  matrix moved elsewhere is accepted, the file is recorded by its absolute path (a restart from
  another directory finds it), and a different --tol is refused.

usage: check_restart_safety.py APP MPIEXEC APP_EXE WORKDIR
"""
import hashlib
import os
import shutil
import struct
import sys
import zlib

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apptest  # noqa: E402
import checkpoint_record  # noqa: E402

app, mpiexec, exe, work = sys.argv[1:5]
apptest.fresh(work)
work = os.path.abspath(work)

# Per app: the base options (a small problem), the steps option, a problem option to contradict
# and its other value, and the checkpoint's main dataset.
CASES = {
    "heat": (["--n", "30", "--steps", "40", "--monitor", "0"], "--steps", "--n", "31", "u"),
    "stencil": (["--n", "25", "--steps", "40", "--monitor", "0"], "--steps", "--n", "26", "grid"),
    "cfd": (["--nx", "19", "--ny", "13", "--nit", "3", "--steps", "39", "--perturb", "0.1", "--monitor", "0"],
            "--steps", "--nx", "21", "u"),
    "swe": (["--n", "12", "--steps", "40", "--problem", "gaussian", "--monitor", "0"], "--steps", "--n", "13", "w"),
    "cg_solver": (["--problem", "poisson2d", "--n", "30", "--tol", "1e-12", "--max-iters", "500", "--monitor", "0"],
                  "--max-iters", "--n", "31", "x"),
    "spectral": (["--n", "16", "--steps", "40", "--init", "random", "--kmax", "4", "--dt", "0.05", "--monitor", "0"],
                 "--steps", "--n", "18", "w_hat"),
}
base, steps_flag, bad_flag, bad_value, dataset = CASES[app]
EVERY = 10


def run(name, args, expect=0, ranks=2, cwd=None):
    if cwd is None:
        return apptest.run(mpiexec, exe, ranks, args, os.path.join(work, name + ".json"), expect=expect)
    rc, out = apptest.launch(mpiexec, exe, ranks, args + ["--json", os.path.join(work, name + ".json")], cwd=cwd)
    if rc != expect:
        sys.exit(f"FAIL: {name}: exit {rc}, expected {expect}")
    return None


def refused(name, args, needles, expect=apptest.EXIT["error"], ranks=2):
    """The run fails with `expect`, printing each needle exactly once (one message, on rank 0)."""
    rc, out = apptest.launch(mpiexec, exe, ranks, args, 120)
    if rc != expect:
        sys.exit(f"FAIL: {name}: exit {rc}, expected {expect}")
    for needle in needles:
        if out.count(needle) != 1:
            sys.exit(f"FAIL: {name}: {needle!r} appears {out.count(needle)} times, expected once:\n{out}")
    print(f"ok: {name}: exit {rc}, says {needles}")
    return out


def digest(prefix):
    d = os.path.dirname(prefix)
    out = {}
    for f in sorted(os.listdir(d)):
        if f.startswith(os.path.basename(prefix) + "."):
            with open(os.path.join(d, f), "rb") as fh:
                out[f] = hashlib.sha256(fh.read()).hexdigest()
    return out


def ck(prefix, step):
    return f"{prefix}.{step:010d}.h5"


def rewrite_crc(path, name):
    """Set the dataset's stored checksum to that of its current data and sign the file again (a
    'valid' file)."""
    with h5py.File(path, "r+") as f:
        data = f[name][...]
        f[name].attrs["spmd_checksum_crc32"] = np.int64(zlib.crc32(np.ascontiguousarray(data).tobytes()))
    checkpoint_record.sign(path)


def edited(source, name, change):
    """A copy of checkpoint `source` as `name` with `change(h5py file)` applied and the integrity
    record written again (as a program that edits checkpoints on purpose would)."""
    path = os.path.join(work, name)
    shutil.copy(source, path)
    with h5py.File(path, "r+") as f:
        change(f)
    checkpoint_record.sign(path)
    if checkpoint_record.check(path):
        sys.exit(f"FAIL: the signed {path} does not check: {checkpoint_record.check(path)}")
    return path


# ---- the run whose checkpoints the checks use -------------------------------------------------------------
prefix = os.path.join(work, "ck")
ref = run("uninterrupted", base)
total_steps = ref["run"]["last_step"]
ckp = run("checkpointing", base + ["--checkpoint-every", EVERY, "--checkpoint", prefix, "--checkpoint-keep", 10])
steps = sorted(int(f.split(".")[-2]) for f in os.listdir(work) if f.startswith("ck.") and f.endswith(".h5"))
print("checkpoints:", steps)
assert len(steps) >= 3, steps
run_id = ckp["run"]["run_id"]
def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


with h5py.File(ck(prefix, steps[0]), "r") as f:
    if text(f.attrs["spmd_run_id"]) != run_id or text(f.attrs["app"]) != app:
        sys.exit(f"FAIL: the checkpoint records run {text(f.attrs['spmd_run_id'])} of {text(f.attrs['app'])}")
    record = {k: f.attrs[k] for k in f.attrs if k.startswith("problem.")}
print("problem record:", record)

# ---- contradicting options -------------------------------------------------------------------------------
first = ck(prefix, steps[0])
refused("contradicting " + bad_flag, ["--restart", first, bad_flag, bad_value],
        [f"{bad_flag} {bad_value} differs from the checkpoint", "made with " + bad_flag])
refused("target before the checkpoint", ["--restart", first, steps_flag, "1"],
        [f"{steps_flag} 1 ends before the checkpoint's step {steps[0]}"])
# The same options as the checkpoint's are fine (and equal to leaving them out).
same = run("restart-same-options", base + ["--restart", first])
if apptest.crc(same) != apptest.crc(ref):
    sys.exit(f"FAIL: a restart with the checkpoint's own options ends elsewhere: {apptest.crc(same)}")

# ---- a new run refuses the prefix of another run, touching nothing ---------------------------------------
before = digest(prefix)
refused("new run on another run's prefix", base + ["--checkpoint-every", EVERY, "--checkpoint", prefix],
        ["already holds", "a new run never writes over them"])
if digest(prefix) != before:
    sys.exit(f"FAIL: the refused run changed the prefix's files:\n{before}\n{digest(prefix)}")

# ---- checkpoints of another app, or of an older version, are refused --------------------------------------
if checkpoint_record.check(first):
    sys.exit(f"FAIL: the checkpoint's integrity record does not check in Python: {checkpoint_record.check(first)}")


def set_attr(key, value):
    def change(f):
        f.attrs[key] = value
    return change


other = edited(first, "other-app.0000000010.h5", set_attr("app", "not-" + app))
refused("another app's checkpoint", ["--restart", other], [f"is not a checkpoint of {app}"])
old = edited(first, "old-version.0000000010.h5", lambda f: f.attrs.__delitem__("spmd_run_id"))
refused("a checkpoint without a run id", ["--restart", old], ["records no run id"])
# The same edits without the record written again: damage, refused before HDF5 reads the file.
unsigned = os.path.join(work, "unsigned.0000000010.h5")
shutil.copy(first, unsigned)
with h5py.File(unsigned, "r+") as f:
    f.attrs["app"] = "not-" + app
refused("an edited checkpoint (not signed again)", ["--restart", unsigned], [f"unsigned.0000000010.h5' is damaged: "])

# ---- values of the record that the options' validators refuse ---------------------------------------------
# (key, value, the option that refuses it); each file is otherwise valid (signed again).
BAD_VALUES = {
    "heat": [("problem.alpha", -1.0, "--alpha"), ("problem.alpha", 1e300, "--alpha"),
             ("problem.n", -4, "--n")],
    "stencil": [("problem.n", -1, "--n"), ("problem.n", 1 << 40, "--n")],
    "cfd": [("problem.nit", -5, "--nit"), ("problem.nx", 2, "--nx"), ("problem.perturb", float("nan"), "--perturb")],
    "swe": [("problem.theta", 5.0, "--theta"), ("problem.cfl", -0.5, "--cfl"),
            ("problem.problem", "tsunami", "--problem")],
    "cg_solver": [("problem.precond", "ssor", "--precond"), ("problem.operator", "dense", "--operator"),
                  ("problem.tol", float("inf"), "--tol"), ("problem.tol", 2.0, "--tol"),
                  ("problem.atol", -1.0, "--atol")],
    "spectral": [("problem.nu", -1.0, "--nu"), ("problem.init", "vortex", "--init"), ("problem.n", 4, "--n"),
                 ("problem.n", 17, "--n")],
}[app]
for k, (key, value, option) in enumerate(BAD_VALUES):
    bad = edited(first, f"bad-value-{k}.0000000010.h5", set_attr(key, value))
    refused(f"{key} = {value!r} in the checkpoint", ["--restart", bad], [f"records {key} ", f"which {option} refuses"])
bad = edited(first, "bad-step.0000000010.h5", set_attr("step", np.int64(-3)))
refused("a negative step in the checkpoint", ["--restart", bad], ["records the step -3"])
bad = edited(first, "bad-target.0000000010.h5", set_attr("run." + steps_flag[2:], np.int64(-1)))
refused("a negative step target in the checkpoint", ["--restart", bad], [f"which {steps_flag} refuses"])

# ---- --restart latest skips every invalid file and says which -------------------------------------------
newest, second, third = ck(prefix, steps[-1]), ck(prefix, steps[-2]), ck(prefix, steps[-3])
with h5py.File(newest, "r") as f:
    offset = f[dataset].id.get_offset()
with open(newest, "r+b") as fh:  # the data changes, the metadata stays valid
    fh.seek(offset + 16)
    fh.write(b"\x7f\x7f\x7f\x7f")
os.truncate(second, os.path.getsize(second) // 2)
latest = run("restart-latest", ["--restart", "latest", "--checkpoint", prefix])
out = latest["_output"]
for path, why in ((newest, "checksum mismatch"), (second, "truncated")):
    line = [x for x in out.splitlines() if "skipped '" + path + "'" in x]
    if len(line) != 1 or why not in line[0]:
        sys.exit(f"FAIL: --restart latest did not say once that it skipped {path} ({why}):\n{out}")
if latest["run"]["restarted_from"] != third or latest["run"]["run_id"] != run_id:
    sys.exit(f"FAIL: --restart latest continued {latest['run']}, expected {third} of run {run_id}")
if apptest.crc(latest) != apptest.crc(ref):
    sys.exit(f"FAIL: --restart latest ended at {apptest.crc(latest)}, uninterrupted {apptest.crc(ref)}")
# A restart from the corrupt file itself is refused (the checksum of the data read).
refused("restart from a corrupt file", ["--restart", newest], ["checksum mismatch"])
print(f"ok: --restart latest skipped {os.path.basename(newest)} and {os.path.basename(second)}, continued "
      f"{os.path.basename(third)}, and ended bitwise equal to the uninterrupted run")

# ---- a failed checkpoint write is an error ---------------------------------------------------------------
# Both are refused before the first step (the prefix is checked when the run starts), in one line
# naming the user's path.
out = refused("checkpoint into a missing directory",
              base + ["--checkpoint-every", EVERY, "--checkpoint", os.path.join(work, "no", "such", "dir", "ck")],
              [f"the checkpoint prefix '{work}/no/such/dir/ck' cannot be written: its directory "
               f"'{work}/no/such/dir' does not exist"])
if ".tmp-" in out or "HDF5" in out:
    sys.exit(f"FAIL: the missing directory's message names a temporary or HDF5:\n{out}")
if app != "cg_solver":  # 2-D states: each checkpoint has an .xmf sidecar
    xp = os.path.join(work, "xmf")
    os.makedirs(f"{xp}.{EVERY:010d}.xmf/blocker")  # a directory where the sidecar goes
    refused("an .xmf sidecar that cannot be written",
            base + ["--checkpoint-every", EVERY, "--checkpoint", xp],
            [f"xmf.{EVERY:010d}.xmf' (a name of the series '{xp}') is a directory, not a regular file"])

# ---- a state holding NaN (its checksum valid) ends with exit status 3 ------------------------------------
if app in ("heat", "stencil", "spectral"):
    nan = os.path.join(work, "nan.0000000010.h5")
    shutil.copy(first, nan)
    with h5py.File(nan, "r+") as f:
        d = f[dataset][...]
        d[d.shape[0] // 2, d.shape[1] // 2] = np.nan
        f[dataset][...] = d
    rewrite_crc(nan, dataset)
    r = run("restart-nan", ["--restart", nan], expect=apptest.EXIT["check_failed"])
    if r["check"]["finite"] or r["exit"]["outcome"] != "check_failed":
        sys.exit(f"FAIL: a NaN state gave {r['check']} {r['exit']}")
    print("ok: a NaN state ends with exit status 3")

# ---- cg_solver: the matrix itself, its path and the tolerances --------------------------------------------
if app == "cg_solver":
    def write_mtx(path, scale):
        n = 12
        entries = []
        for i in range(n):
            for j in range(n):
                k = i * n + j + 1
                entries.append((k, k, 4.5 * scale))
                if i > 0:
                    entries.append((k, k - n, -1.0 * scale))
                if j > 0:
                    entries.append((k, k - 1, -1.0 * scale))
        with open(path, "w") as f:
            f.write("%%MatrixMarket matrix coordinate real symmetric\n")
            f.write(f"{n * n} {n * n} {len(entries)}\n")
            for r_, c_, v in entries:
                f.write(f"{r_} {c_} {v!r}\n")

    os.makedirs(os.path.join(work, "mats"))
    mtx = os.path.join(work, "mats", "A.mtx")
    write_mtx(mtx, 1.0)
    mm = os.path.join(work, "mm")
    mm_args = ["--problem", "mm", "--file", "A.mtx", "--tol", "1e-12", "--monitor", "0"]
    # Started from the matrix's directory with a relative --file: recorded by its absolute path.
    run("mm-checkpointing", mm_args + ["--checkpoint-every", 5, "--checkpoint", mm, "--checkpoint-keep", 100],
        cwd=os.path.join(work, "mats"))
    mm_first = ck(mm, 10)
    with h5py.File(mm_first, "r") as f:
        recorded = text(f.attrs["problem.file"])
    if recorded != mtx:
        sys.exit(f"FAIL: problem.file is {recorded!r}, not the absolute path {mtx!r}")
    mm_ref = run("mm-uninterrupted", ["--problem", "mm", "--file", mtx, "--tol", "1e-12", "--monitor", "0"])
    # From another directory, without --file: the recorded absolute path.
    r = run("mm-restart-elsewhere", ["--restart", mm_first], cwd=work)
    r = run("mm-restart", ["--restart", mm_first])
    if apptest.crc(r) != apptest.crc(mm_ref):
        sys.exit("FAIL: the mm restart does not end at the uninterrupted run's x")
    # The same matrix moved elsewhere is the same problem.
    moved = os.path.join(work, "moved.mtx")
    shutil.copy(mtx, moved)
    run("mm-restart-moved", ["--restart", mm_first, "--file", moved])
    # The file's values scaled by 2: another matrix (rows and nnz equal), refused by its checksum.
    write_mtx(mtx, 2.0)
    refused("scaled matrix", ["--restart", mm_first], ["in problem.matrix_checksum"])
    refused("another tolerance", ["--restart", first, "--tol", "1e-8"],
            ["--tol 1e-08 differs from the checkpoint", "made with --tol 1e-12"])
    # Every solver option is recorded: the symmetry check's tolerance, pipelined CG's residual
    # replacement period and the reproducible mode contradict the checkpoint too.
    refused("another symmetry rtol", ["--restart", first, "--symmetry-rtol", "1e-6"],
            ["--symmetry-rtol 1e-06 differs from the checkpoint", "made with --symmetry-rtol 1e-12"])
    refused("another replacement period", ["--restart", first, "--replace-every", "7"],
            ["--replace-every 7 differs from the checkpoint", "made with --replace-every 50"])
    refused("reproducible mode", ["--restart", first, "--reproducible"],
            ["--reproducible differs from the checkpoint", "made without --reproducible"])
    # One flipped bit in the stored tolerance (1e-12 -> 1e-3 needs many; the exponent's lowest bit
    # halves or doubles it): the file no longer matches its integrity record and is refused as
    # damaged, by --restart FILE and --restart latest alike; it never runs at another tolerance.
    flipped = os.path.join(work, "flipped-tol.0000000010.h5")
    shutil.copy(first, flipped)
    data = bytearray(open(flipped, "rb").read())
    # The value follows the attribute's name in its header message (problem.symmetry-rtol holds
    # 1e-12 as well: the first 1e-12 after the name is problem.tol's).
    needle = struct.pack("<d", 1e-12)
    name_at = data.find(b"problem.tol\0")
    at = data.find(needle, name_at) if name_at >= 0 else -1
    if at < 0 or at - name_at > 256:
        sys.exit(f"FAIL: no stored value 1e-12 after the attribute name problem.tol in {first}")
    data[at + 6] ^= 0x10  # the exponent's lowest bit
    open(flipped, "wb").write(data)
    with h5py.File(flipped, "r") as f:
        print("the flipped file's problem.tol as h5py reads it:", f.attrs["problem.tol"])
        if f.attrs["problem.tol"] == 1e-12 or f.attrs["problem.symmetry-rtol"] != 1e-12:
            sys.exit("FAIL: the flipped bit is not problem.tol's")
    refused("a flipped bit in the stored tolerance", ["--restart", flipped], ["is damaged: its HDF5 metadata"])
    print("ok: cg_solver refuses a scaled matrix and another --tol, accepts the moved matrix")

print(f"{app}: restart safety checks passed")
