#!/usr/bin/env python3
"""Damaged checkpoints (issue 25; docs/reliability.md#damaged-checkpoint-files), for one app, at 1, 2
and 3 ranks:

- the issue's example: a series of 4 checkpoints, 16 bytes flipped near 1.2 KiB of the newest
  (inside its HDF5 metadata), then `--restart latest`: before, HDF5 crashed (SIGSEGV) or looped
  forever on rank 0 while the others waited; now the file is skipped with one line, the same line
  at every rank count, and the run continues from the previous file to the uninterrupted run's
  state bit for bit;
- the damaged file named by --restart: exit 1, one line, the same at every rank count;
- a new run into the prefix is refused (the damaged file counted); a restart from an
  older good file of the series (rank 0 lists the prefix) works;
- other damage of the newest file, each skipped by --restart latest with its reason: its
  integrity record, its first bytes, cut short, bytes appended, emptied, its data (checksum), and
  a FIFO in its place (never opened for reading: no hang); the FIFO also stops a new run and a
  continued run before their first step.

usage: check_damaged_checkpoint.py APP MPIEXEC APP_EXE WORKDIR MAXRANKS
"""
import os
import shutil
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apptest  # noqa: E402
import checkpoint_record  # noqa: E402

app, mpiexec, exe, work, maxranks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
apptest.fresh(work)
work = os.path.abspath(work)
RANKS = [r for r in (1, 2, 3) if r <= maxranks]

BASE = {
    "heat": ["--n", "30", "--steps", "40", "--monitor", "0"],
    "stencil": ["--n", "25", "--steps", "40", "--monitor", "0"],
    "cfd": ["--nx", "19", "--ny", "13", "--nit", "3", "--steps", "39", "--perturb", "0.1", "--monitor", "0"],
    "swe": ["--n", "12", "--steps", "40", "--problem", "gaussian", "--monitor", "0"],
    "cg_solver": ["--problem", "poisson2d", "--n", "30", "--tol", "1e-12", "--max-iters", "500", "--monitor", "0"],
}[app]
FORBIDDEN = ("BAD TERMINATION", "MPI_Abort", "Segmentation", "signal", "terminate called", "HDF5-DIAG")


def ck(prefix, step):
    return f"{prefix}.{step:010d}.h5"


def launch(name, args, ranks, expect, timeout=120):
    rc, out = apptest.launch(mpiexec, exe, ranks, args, timeout)
    if rc != expect:
        sys.exit(f"FAIL: {name} at {ranks} ranks: exit {rc}, expected {expect}")
    for bad in FORBIDDEN:
        if bad in out:
            sys.exit(f"FAIL: {name} at {ranks} ranks: the output holds {bad!r}")
    return out


def lines_with(out, needle):
    return [x for x in out.splitlines() if needle in x]


def damage(path, how):
    data = bytearray(open(path, "rb").read())
    if how == "flip-16-at-1200":  # the example: 16 bytes flipped near 1.2 KiB
        for i in range(1200, 1216):
            data[i] ^= 0xFF
    elif how == "record":  # the file size field of the integrity record
        data[20] ^= 0x01
    elif how == "first-bytes":
        data[0:8] = bytes(8)
    elif how == "truncated":
        data = data[:len(data) // 2]
    elif how == "appended":
        data += b"\0" * 100
    elif how == "emptied":
        data = bytearray()
    elif how == "data":  # inside the first dataset's raw data (from the record): the metadata intact
        offset = checkpoint_record.read(path)[4][0][0]
        for i in range(offset + 8, offset + 24):
            data[i] ^= 0x55
    else:
        raise ValueError(how)
    with open(path, "wb") as f:
        f.write(data)


# ---- a series of 4 checkpoints and the uninterrupted run ----------------------------------------------------
prefix = os.path.join(work, "ck")
ref = apptest.run(mpiexec, exe, 2, BASE, os.path.join(work, "ref.json"))
steps = {"cfd": [10, 20, 30, 39]}.get(app, [10, 20, 30, 40])
apptest.run(mpiexec, exe, 2, BASE + ["--checkpoint-every", "10", "--checkpoint", prefix, "--checkpoint-keep", "10"],
            os.path.join(work, "ckp.json"))
have = sorted(int(f.split(".")[-2]) for f in os.listdir(work) if f.startswith("ck.") and f.endswith(".h5"))
if len(have) < 4:
    sys.exit(f"FAIL: expected 4 checkpoints, found {have}")
newest, previous, oldest = ck(prefix, have[-1]), ck(prefix, have[-2]), ck(prefix, have[0])
pristine = os.path.join(work, "pristine.h5")
shutil.copy(newest, pristine)

# ---- the example at 1, 2 and 3 ranks: one line, the same at every rank count -------------------------
damage(newest, "flip-16-at-1200")
skipped, refusals = {}, {}
for ranks in RANKS:
    r = apptest.run(mpiexec, exe, ranks, ["--restart", "latest", "--checkpoint", prefix],
                    os.path.join(work, f"latest-np{ranks}.json"))
    out = r["_output"]
    for bad in FORBIDDEN:
        if bad in out:
            sys.exit(f"FAIL: --restart latest at {ranks} ranks: the output holds {bad!r}")
    line = lines_with(out, "skipped '" + newest + "'")
    if len(line) != 1 or "is damaged" not in line[0]:
        sys.exit(f"FAIL: --restart latest at {ranks} ranks did not say once that the damaged file was skipped:\n{out}")
    skipped[ranks] = line[0]
    # Bitwise at any rank count for the pointwise updates; cg_solver's sums change with the rank
    # count, so its x is bitwise the uninterrupted run's at its rank count (2), else it converges.
    same = apptest.crc(r) == apptest.crc(ref) if (app != "cg_solver" or ranks == 2) else r["check"]["converged"]
    if r["run"]["restarted_from"] != previous or not same:
        sys.exit(f"FAIL: --restart latest at {ranks} ranks: {r['run']}, state {apptest.crc(r)} "
                 f"(uninterrupted {apptest.crc(ref)}, expected a restart from {previous})")
    out = launch("--restart of the damaged file", ["--restart", newest], ranks, apptest.EXIT["error"])
    err = lines_with(out, newest)
    if len(err) != 1 or "is damaged" not in err[0]:
        sys.exit(f"FAIL: --restart {newest} at {ranks} ranks: expected one line naming it as damaged:\n{out}")
    refusals[ranks] = err[0]
for what, seen in (("--restart latest", skipped), ("--restart FILE", refusals)):
    if len(set(seen.values())) != 1:
        sys.exit(f"FAIL: {what} gives different lines at {sorted(seen)} ranks:\n" + "\n".join(seen.values()))
    print(f"ok: {what} with the damaged newest file, the same line at {RANKS} ranks:\n  {seen[RANKS[0]]}")

# ---- a new run into the prefix, and a restart from an older file, with the damaged file there -------------------
out = launch("a new run into the prefix", BASE + ["--checkpoint-every", "10", "--checkpoint", prefix], RANKS[-1],
             apptest.EXIT["error"])
if len(lines_with(out, f"already holds {len(have)} checkpoint file(s)")) != 1:
    sys.exit(f"FAIL: a new run into the prefix was not refused, counting the damaged file:\n{out}")
r = apptest.run(mpiexec, exe, min(2, maxranks),
                ["--restart", oldest, "--checkpoint-every", "10", "--checkpoint-keep", "10"],
                os.path.join(work, "older.json"))
if apptest.crc(r) != apptest.crc(ref):
    sys.exit("FAIL: the restart from the oldest file does not end at the uninterrupted run's state")
print("ok: a new run is refused, a restart from an older file continues (the damaged file left alone)")

# ---- other damage, each skipped by --restart latest with its reason (2 ranks) ---------------------------------------
WHY = {"record": "is damaged: its integrity record", "first-bytes": "is not an HDF5 file",
       "truncated": "is truncated", "appended": "is damaged: it has", "emptied": "is not an HDF5 file",
       "data": "checksum mismatch"}
ranks = min(2, maxranks)
for how, why in WHY.items():
    newest_now = ck(prefix, have[-1])
    shutil.copy(pristine, newest_now)
    damage(newest_now, how)
    out = launch(f"--restart latest, newest file {how}", ["--restart", "latest", "--checkpoint", prefix], ranks,
                 apptest.EXIT["ok"])
    line = lines_with(out, "skipped '" + newest_now + "'")
    if len(line) != 1 or why not in line[0]:
        sys.exit(f"FAIL: --restart latest with the newest file {how}: expected one line with {why!r}:\n{out}")
    print(f"ok: newest file {how}: {line[0]}")

# ---- a FIFO in the series: never opened for reading, never replaced --------------------------------------------------
os.remove(newest)
os.mkfifo(newest)
out = launch("--restart latest with a FIFO", ["--restart", "latest", "--checkpoint", prefix], ranks,
             apptest.EXIT["ok"], timeout=60)
if len(lines_with(out, "is a FIFO, not a regular file")) != 1:
    sys.exit(f"FAIL: the FIFO was not skipped with one line:\n{out}")
for name, args in (("a new run", BASE + ["--checkpoint-every", "10", "--checkpoint", os.path.join(work, "ck")]),
                   ("a continued run", ["--restart", oldest, "--checkpoint-every", "10"])):
    out = launch(f"{name} with a FIFO in the series", args, ranks, apptest.EXIT["error"], timeout=60)
    if len(lines_with(out, "is a FIFO, not a regular file")) != 1:
        sys.exit(f"FAIL: {name} with a FIFO in the series was not refused with one line:\n{out}")
if not os.path.exists(newest) or not stat.S_ISFIFO(os.stat(newest).st_mode):
    sys.exit("FAIL: the FIFO was replaced")
print("ok: a FIFO in the series is skipped, stops new and continued runs before their first step, and stays")
print(f"{app}: damaged-checkpoint checks passed")
