#!/usr/bin/env python3
"""A fuzzer of the apps' command lines (issue 25; docs/reliability.md#command-lines): random and
mutated argv for heat, stencil, cfd, swe, spectral and cg_solver, at 1 and 2 ranks and as MPMD launches
whose second rank gets another argv. Every run must end in one of two ways:

- a run: exit 0, 2 (no convergence) or 3 (a failed check);
- one agreed error: exit 64 with "Run with --help" printed once, or exit 1 with one
  "<app>: error:" line;

never a signal, MPI_Abort, an uncaught exception ("terminate called", "stoi"), Kokkos' abort, an
HDF5 error stack, or a hang (a run longer than --timeout seconds). Valid values are drawn small, or
so large that the memory check refuses them, so that every run is short.

The command lines of tests/fuzz/argv_regressions.txt (one JSON object per line: app, ranks, argv
and, for an MPMD launch, argv1) run first, then random ones until --seconds have passed. A failing
command line is printed as such a JSON line (add it to the file with the fix) and fails the script.

usage: fuzz_argv.py MPIEXEC APPS_DIR WORKDIR [--seconds S] [--seed N] [--timeout T] [--regressions FILE]
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("mpiexec")
p.add_argument("apps_dir")
p.add_argument("work")
p.add_argument("--seconds", type=float, default=60)
p.add_argument("--seed", type=int, default=None)
p.add_argument("--timeout", type=float, default=60)
p.add_argument("--regressions", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                     "tests", "fuzz", "argv_regressions.txt"))
args = p.parse_args()
seed = args.seed if args.seed is not None else int(time.time())
rng = random.Random(seed)
work = os.path.abspath(args.work)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false")

# ---- inputs the command lines point at ----------------------------------------------------------------
os.mkfifo(os.path.join(work, "fifo"))
os.makedirs(os.path.join(work, "dir"))


def mtx(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


MTX = [
    mtx("spd.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 5\n1 1 4\n2 2 4\n3 3 4\n2 1 -1\n3 2 -1\n"),
    mtx("nonsym.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 2\n1 2 1\n2 2 2\n"),
    mtx("nonsquare.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 1\n3 4 1\n"),
    mtx("garbage.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 x\n\x1b[31m\n"),
    mtx("huge.mtx", "%%MatrixMarket matrix coordinate real general\n4000000000000 4000000000000 1\n1 1 1\n"),
    mtx("empty.mtx", ""),
    os.path.join(work, "missing.mtx"),
    os.path.join(work, "fifo"),
]
PATHS = [os.path.join(work, "out.json"), os.path.join(work, "fifo"), "/dev/null", os.path.join(work, "dir"),
         os.path.join(work, "no", "such", "x"), "", os.path.join(work, "ck"), os.path.join(work, "state.h5"),
         "latest", os.path.join(work, "missing.h5"), os.path.join(work, "garbage.h5")]
with open(os.path.join(work, "garbage.h5"), "wb") as f:
    f.write(b"\x89SPMDCK\n" + bytes(rng.randrange(256) for _ in range(600)))

# ---- values, by kind --------------------------------------------------------------------------------------
BAD_NUMBERS = ["", " ", "abc", "-1", "-0", "1.5", "1e400", "-1e400", "inf", "-inf", "nan", "NaN", "0x10", "1e3",
               "2147483648", "-2147483649", "9223372036854775808", "1,2", "--n", "+3", "\x01", "1e-400", "0"]
SMALL = {"count": ["1", "2", "3", "5", "8"], "steps": ["0", "1", "2", "3"], "real": ["0.5", "1", "1e-6", "0.25"]}
# Per app: its base (a small valid run) and its options by kind; HUGE values make the memory check
# refuse the run at once.
APPS = {
    "heat": (["--n", "8", "--steps", "3"],
             {"--n": ("count", ["1048576"]), "--steps": ("steps", []), "--alpha": ("real", ["1e12"]),
              "--check-error": ("real", ["-1", "1e-30"]), "--every": ("steps", [])}),
    "stencil": (["--n", "8", "--steps", "3"],
                {"--n": ("count", ["1048576"]), "--steps": ("steps", []), "--iters": ("steps", []),
                 "--fast": ("flag", [])}),
    "cfd": (["--nx", "9", "--ny", "7", "--nit", "2", "--steps", "2"],
            {"--nx": ("count", ["3"]), "--ny": ("count", ["3"]), "--nit": ("steps", []), "--steps": ("steps", []),
             "--warmup": ("steps", []), "--perturb": ("real", ["1e200", "-3"]), "--moved-columns": ("flag", []),
             "--grid": ("grid", []), "--save": ("path", [])}),
    "swe": (["--n", "8", "--steps", "3"],
            {"--n": ("count", ["16777216"]), "--steps": ("steps", []), "--cfl": ("real", ["1", "0.9"]),
             "--theta": ("real", ["1", "2", "1.3"]), "--problem": ("name", ["gaussian", "dambreak", "lake", "x"]),
             "--grid": ("grid", []), "--check-mass": ("real", ["0"]), "--save": ("path", [])}),
    "spectral": (["--n", "16", "--steps", "2", "--init", "random", "--kmax", "4", "--dt", "0.05"],
                 {"--n": ("count", ["16777216", "16", "32", "15"]), "--steps": ("steps", []),
                  "--dt": ("real", ["0", "1e6"]), "--cfl": ("real", ["10"]), "--nu": ("real", ["0", "1e6"]),
                  "--init": ("name", ["taylor-green", "random", "x"]),
                  "--viscous": ("name", ["integrating-factor", "explicit", "x"]), "--tg-k": ("count", ["5", "6"]),
                  "--seed": ("count", ["0", "4600000000000000000"]), "--kmin": ("count", []),
                  "--kmax": ("count", ["5", "6"]), "--amplitude": ("real", ["1e12"]),
                  "--check-error": ("real", ["-1", "1e-30"]), "--grid": ("grid", []), "--save": ("path", [])}),
    "cg_solver": (["--problem", "poisson2d", "--n", "8", "--max-iters", "50"],
                  {"--problem": ("name", ["poisson2d", "poisson3d", "convdiff2d", "mm", "x"]),
                   "--n": ("count", ["1073741824"]),
                   "--file": ("file", []), "--operator": ("name", ["csr", "matrix-free", "x"]),
                   "--tol": ("real", ["0", "0.999", "1", "1e-300"]), "--atol": ("real", ["0", "1e300"]),
                   "--max-iters": ("steps", []), "--pipelined": ("flag", []),
                   "--method": ("name", ["cg", "pipelined", "gmres", "fgmres", "bicgstab", "x"]),
                   "--precond": ("name", ["none", "jacobi", "chebyshev", "ilu", "mg", "ssor"]),
                   "--gmres-restart": ("count", ["0", "10001"]), "--peclet": ("real", ["1e13", "-1"]),
                   "--history": ("flag", []), "--check-error": ("real", ["-1", "1e-300"]),
                   "--no-symmetry-check": ("flag", []), "--symmetry-rtol": ("real", ["0", "1"]),
                   "--replace-every": ("steps", []), "--reproducible": ("flag", [])}),
}
COMMON = {"--monitor": ("steps", []), "--quiet": ("flag", []), "--resources": ("flag", []), "--json": ("path", []),
          "--checkpoint-every": ("steps", []), "--checkpoint": ("path", []), "--checkpoint-keep": ("count", []),
          "--restart": ("path", []), "--help": ("flag", []), "--version": ("flag", []),
          "--spmd-log-view": ("flag", [])}
KOKKOS = ["--kokkos-threads=1", "--kokkos-threads=abc", "--kokkos-threads", "--kokkos-threads=", "--kokkos-numa=x",
          "--kokkos-num-threads=0", "--kokkos-num-threads=1", "--kokkos-num-threadsX", "--kokkos-device-id=-1",
          "--kokkos-ndevices=1,x", "--kokkos-num-devices=2", "--threads=abc", "--threads", "--device", "--numa=1",
          "--kokkos-disable-warnings", "--kokkos-disable-warnings=no", "--kokkos-tune-internals",
          "--kokkos-map-device-id-by=x", "--kokkos-tools-args=", "--kokkos-print-configuration=1",
          "--kokkos-help=1", "--kokkos-bogus", "-kokkos-threads=2", "--spmd-bogus", "--spmd-log-view=x"]


def value(kind, extra):
    pools = []
    if kind in SMALL:
        pools = SMALL[kind] * 3
    elif kind == "name":
        pools = []
    elif kind == "grid":
        pools = ["1,1", "1,2", "2,1", "2,2", "1,1,7", "4", "0,2", "1,x", ",", "1,", "-1,-1", "2147483648,1"]
    elif kind == "path":
        pools = PATHS
    elif kind == "file":
        pools = MTX
    return rng.choice(pools + extra + BAD_NUMBERS[rng.randrange(len(BAD_NUMBERS)):][:3])


def options(app):
    return {**APPS[app][1], **COMMON}


def mutate(app, argv):
    argv = list(argv)
    opts = options(app)
    for _ in range(rng.randint(1, 3)):
        r = rng.random()
        if r < 0.45 or not argv:  # add an option with a value of its kind (or any value)
            name = rng.choice(list(opts))
            kind, extra = opts[name]
            if kind == "flag":
                argv.append(name)
            else:
                argv += [name, value(kind, extra) if rng.random() < 0.85 else rng.choice(BAD_NUMBERS)]
        elif r < 0.6:  # a Kokkos or runtime option
            argv.insert(rng.randrange(len(argv) + 1), rng.choice(KOKKOS))
        elif r < 0.75:  # change a value in place
            k = rng.randrange(len(argv))
            argv[k] = rng.choice(BAD_NUMBERS + PATHS[:4])
        elif r < 0.85:  # drop a token
            del argv[rng.randrange(len(argv))]
        elif r < 0.93:  # name=value spelling, or a token glued to its value
            k = rng.randrange(len(argv))
            if argv[k].startswith("--") and k + 1 < len(argv):
                argv[k:k + 2] = [argv[k] + "=" + argv[k + 1]]
        else:  # random bytes
            argv.append("".join(chr(rng.randrange(1, 256)) for _ in range(rng.randint(0, 12))))
    return argv


def random_argv(app):
    names = list(options(app))
    argv = []
    for _ in range(rng.randint(0, 6)):
        t = rng.random()
        argv.append(rng.choice(names) if t < 0.5 else rng.choice(BAD_NUMBERS + KOKKOS + PATHS))
    return argv


# ---- one launch ---------------------------------------------------------------------------------------------
FORBIDDEN = [r"terminate called", r"MPI_Abort", r"BAD TERMINATION", r"[Ss]egmentation", r"Caught signal",
             r"\bstoi\b", r"what\(\):", r"HDF5-DIAG", r"Kokkos::abort", r"Aborted", r"core dumped",
             r"Raised by Kokkos::initialize"]


def launch(case):
    exe = os.path.join(args.apps_dir, case["app"])
    tag = f"run{case['n']}"
    # Outputs a run writes go to its own folder (relative names resolve there).
    cwd = os.path.join(work, tag)
    os.makedirs(cwd, exist_ok=True)
    if "argv1" in case:
        cmd = [args.mpiexec, "-n", "1", exe] + case["argv"] + [":", "-n", "1", exe] + case["argv1"]
    else:
        cmd = [args.mpiexec, "-n", str(case["ranks"]), exe] + case["argv"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=args.timeout, env=env,
                           cwd=cwd)
        rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode("utf-8", "replace")
    shutil.rmtree(cwd, ignore_errors=True)
    return rc, out, time.time() - t0


def still_working(out):
    """True when a run cut off by --timeout was computing, not hung: its progress lines (every app
    prints "... elapsed T s ..." every --monitor steps) reached the last 20 s of the timeout. A
    command line without size options runs the app's default problem, which on a loaded machine
    can outlast the timeout (cg_solver's 2048² solve at 23 iterations/s); a hang (ranks waiting on
    each other) prints no progress after it starts."""
    times = [float(t) for t in re.findall(r"\belapsed ([0-9.]+(?:e[-+]?[0-9]+)?) s\b", out)]
    return bool(times) and max(times) >= args.timeout - 20


def verdict(case, rc, out):
    """"" when the run ended as a run or with one agreed error, else what is wrong."""
    app = case["app"]
    if rc is None:
        return "" if still_working(out) else f"no exit within {args.timeout:.0f} s (a hang?)"
    for f in FORBIDDEN:
        if re.search(f, out):
            return f"the output matches {f!r}"
    if rc in (0, 2, 3):
        return ""
    if rc == 64:
        n = out.count("Run with --help")
        return "" if n == 1 else f"exit 64 with 'Run with --help' {n} times"
    if rc == 1:
        n = len([x for x in out.splitlines() if x.startswith(f"{app}: error:")])
        return "" if n == 1 else f"exit 1 with {n} '{app}: error:' lines"
    return f"exit status {rc}"


failures = []
stats = {"runs": 0, "regressions": 0, "by_exit": {}}


def run(case):
    rc, out, dt = launch(case)
    stats["runs"] += 1
    key = ("still working at the timeout" if still_working(out) else "hang") if rc is None else str(rc)
    stats["by_exit"][key] = stats["by_exit"].get(key, 0) + 1
    why = verdict(case, rc, out)
    if why:
        line = json.dumps({k: case[k] for k in ("app", "ranks", "argv", "argv1") if k in case})
        print(f"FAIL ({why}) after {dt:.1f} s: {line}\n{out[-3000:]}", flush=True)
        failures.append(line)
    return why


n = 0
regressions = []
if os.path.exists(args.regressions):
    with open(args.regressions) as f:
        regressions = [json.loads(x) for x in f if x.strip() and not x.startswith("#")]
for case in regressions:
    case = dict(case, n=n, ranks=case.get("ranks", 2))
    n += 1
    run(case)
stats["regressions"] = len(regressions)
start = time.time()
while time.time() - start < args.seconds:
    app = rng.choice(list(APPS))
    base = APPS[app][0]
    r = rng.random()
    case = {"app": app, "n": n, "ranks": rng.choice([1, 2, 2])}
    if r < 0.7:
        case["argv"] = mutate(app, base)
    elif r < 0.85:
        case["argv"] = random_argv(app)
    else:  # another command line on the second rank
        case["ranks"] = 2
        case["argv"] = mutate(app, base) if rng.random() < 0.5 else list(base)
        case["argv1"] = mutate(app, case["argv"])
    n += 1
    run(case)

print(f"fuzz_argv: seed {seed}: {stats['runs']} runs ({stats['regressions']} regressions) in "
      f"{time.time() - start:.0f} s of fuzzing; exit statuses {stats['by_exit']}; {len(failures)} failures")
if failures:
    print("failing command lines (add them to tests/fuzz/argv_regressions.txt with the fix):")
    for line in failures:
        print(line)
    sys.exit(1)
