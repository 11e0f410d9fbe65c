#!/usr/bin/env python3
"""The command line and the exit of one app (docs/apps.md), at 2 ranks:

- --help: exit 0, printed once (rank 0), with the defaults, without Kokkos' help; --version: one
  line with the library version, the git revision and Kokkos; --kokkos-* options still accepted;
- --quiet prints nothing; without it, progress lines (rank 0 only) carry the step, a check
  quantity, the elapsed time, the rate and the ETA;
- exit status 64 for bad arguments, with one message, and numbers printed readably (no
  309-digit DBL_MAX); also when only one rank's argv differs or fails to parse (MPMD launch: no
  hang);
- exit status 1, one message, when --json cannot be written (/dev/full, a missing directory) and
  for a huge problem (naming the bytes per rank, before any allocation); cg_solver: for a
  non-square Matrix Market file ("is not square (3 x 4)"), one declared beyond every rank's memory
  (on GPU builds: the GPU's free memory named) and, on host builds, one whose declared size fits
  rank 0's memory but not rank 1's (under ulimit -v), before the file is read;
- exit status 3 when a check fails, 2 when cg_solver does not converge; the JSON says so.

usage: check_cli.py APP MPIEXEC APP_EXE WORKDIR
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import apptest  # noqa: E402

app, mpiexec, exe, work = sys.argv[1:5]
apptest.fresh(work)
E = apptest.EXIT

# Per app: a small problem, an option taking a number, a huge problem, a failing check.
SMALL = {
    "heat": ["--n", "14", "--steps", "6"],
    "stencil": ["--n", "14", "--steps", "6"],
    "cfd": ["--nx", "11", "--ny", "9", "--nit", "2", "--steps", "5", "--perturb", "0.1"],
    "cg_solver": ["--problem", "poisson2d", "--n", "12", "--tol", "1e-10"],
    "swe": ["--n", "12", "--steps", "6"],
    "spectral": ["--n", "16", "--steps", "6", "--init", "random", "--kmax", "4", "--dt", "0.05"],
}[app]
NUMBER = {"heat": "--n", "stencil": "--n", "cfd": "--nx", "cg_solver": "--n", "swe": "--n", "spectral": "--n"}[app]
HUGE = {
    "heat": ["--n", "1048576", "--steps", "1"],
    "stencil": ["--n", "1048576", "--steps", "1"],
    "cfd": ["--nx", "16777216", "--ny", "16777216", "--steps", "1"],
    "cg_solver": ["--problem", "poisson3d", "--n", "1073741824"],
    "swe": ["--n", "16777216", "--steps", "1"],
    "spectral": ["--n", "16777216", "--steps", "1"],
}[app]
FAILING = {
    "heat": (["--check-error", "1e-30"], E["check_failed"], "exceeds --check-error"),
    "stencil": None,  # its checks fail only for a non-finite state: check_restart_safety.py (NaN state)
    "cfd": (["--perturb", "1e200"], E["check_failed"], "non-finite"),
    "cg_solver": (["--check-error", "1e-300"], E["check_failed"], "exceeds --check-error"),
    # --cfl 1 is beyond the scheme's stability bound: the depth reaches 0, the positivity clamp
    # adds water, and the mass check fails.
    "swe": (["--cfl", "1", "--steps", "200"], E["check_failed"], "the mass changed by"),
    # Taylor-Green's error (roundoff with the integrating factor) above a tolerance of 1e-30.
    "spectral": (["--init", "taylor-green", "--check-error", "1e-30"], E["check_failed"], "exceeds --check-error"),
}[app]


def launch(args, ranks=2, timeout=90):
    return apptest.launch(mpiexec, exe, ranks, args, timeout)


def expect(name, rc, out, status, once=(), never=()):
    if rc != status:
        sys.exit(f"FAIL: {name}: exit {rc}, expected {status}:\n{out}")
    for needle in once:
        if out.count(needle) != 1:
            sys.exit(f"FAIL: {name}: {needle!r} printed {out.count(needle)} times, expected once:\n{out}")
    for needle in never:
        if re.search(needle, out):
            sys.exit(f"FAIL: {name}: the output matches {needle!r}:\n{out}")
    print(f"ok: {name}: exit {rc}")


# ---- help, version, Kokkos options ----------------------------------------------------------------------
rc, out = launch(["--help"])
expect("--help", rc, out, E["ok"], once=["Usage:", "--monitor", "Exit status:"], never=[r"kokkos-help", r"Kokkos::"])
if not re.search(r"--monitor INT:[^\n]*=\d+", out) or not re.search(NUMBER + r" INT:[^\n]*=\d+", out):
    sys.exit(f"FAIL: --help does not show the defaults:\n{out}")
rc, out = launch(["--version"])
expect("--version", rc, out, E["ok"])
lines = [x for x in out.splitlines() if x.strip()]
if len(lines) != 1 or not re.fullmatch(rf"{app} \d+\.\d+\.\d+ \(spmdarray \d+\.\d+\.\d+, git \S+, Kokkos \d+\.\d+\.\d+, "
                                       r"\w+\)", lines[0]):
    sys.exit(f"FAIL: --version printed {lines!r}")
# Kokkos 4 spells the thread count --kokkos-num-threads (and warns about --kokkos-threads).
kokkos_major = int(re.search(r"Kokkos (\d+)\.", lines[0]).group(1))
threads = "--kokkos-num-threads=1" if kokkos_major >= 4 else "--kokkos-threads=1"
rc, out = launch(SMALL + ["--quiet", threads])
expect("--quiet with a Kokkos option", rc, out, E["ok"])
if out.strip():
    sys.exit(f"FAIL: --quiet printed:\n{out}")

# ---- progress lines ---------------------------------------------------------------------------------------
r = apptest.run(mpiexec, exe, 2, SMALL + ["--monitor", "2"], os.path.join(work, "progress.json"))
progress = [x for x in r["_output"].splitlines() if re.match(rf"{app}: (step|iteration) +\d+/\d+ ", x)]
if not progress:
    sys.exit(f"FAIL: no progress lines:\n{r['_output']}")
for line in progress:
    if not re.search(r"  elapsed \S+ s  \S+ (step|iteration)s/s  ETA (\S+ s|\S+ min \S+ s|\?)", line):
        sys.exit(f"FAIL: a progress line without elapsed time, rate and ETA: {line!r}")
steps = [int(re.match(rf"{app}: \w+ +(\d+)/", x).group(1)) for x in progress]
# Every 2 steps, each once; a solver also reports the iteration it stops at.
if len(steps) != len(set(steps)) or any(s % 2 for s in (steps[:-1] if app == "cg_solver" else steps)):
    sys.exit(f"FAIL: progress lines at steps {steps} (every 2, printed once each)")
print(f"ok: {len(progress)} progress lines, e.g. {progress[-1]!r}")

# ---- bad arguments: 64, one readable message --------------------------------------------------------------
NO_LONG_NUMBERS = r"\d{20,}"
for args in ([NUMBER, "abc"], ["--bogus"], ["--monitor", "-1"], [NUMBER, "-3"], ["--checkpoint-keep", "0"],
             ["--steps" if app != "cg_solver" else "--max-iters", "-1"]) + \
        ((["--tol", "-1"], ["--atol", "-1e-3"]) if app == "cg_solver" else ()) + \
        ((["--alpha", "0"],) if app == "heat" else ()):
    rc, out = launch(SMALL + args)
    expect("bad argument " + " ".join(args), rc, out, E["usage"], once=["Run with --help"], never=[NO_LONG_NUMBERS])

# One validator per kind of value (apps/common/options.hpp): infinities and values beyond a double
# are refused where NaN is, lists take exactly their number of values, empty paths are refused, and
# Kokkos' own options are checked before Kokkos sees them. Each: exit 64, one message naming the
# option, never an uncaught exception ("stoi").
steps_flag = "--steps" if app != "cg_solver" else "--max-iters"
VALUES = [([NUMBER, "inf"], NUMBER), ([NUMBER, "1e400"], NUMBER), ([NUMBER, "nan"], NUMBER),
          ([steps_flag, "1e400"], steps_flag), (["--monitor", "inf"], "--monitor"),
          (["--checkpoint", ""], "--checkpoint"), (["--restart", ""], "--restart"), (["--json", ""], "--json"),
          (["--kokkos-threads=abc"], "--kokkos-threads"), (["--kokkos-threads"], "--kokkos-threads"),
          (["--kokkos-num-threads=x"], "--kokkos-num-threads"), (["--kokkos-numa=-1"], "--kokkos-numa"),
          (["--kokkos-ndevices=1,x"], "--kokkos-ndevices"), (["--threads=abc"], "--threads"),
          (["--kokkos-disable-warnings=no"], "--kokkos-disable-warnings")]
VALUES += {
    "heat": [(["--alpha", "inf"], "--alpha"), (["--alpha", "1e300"], "--alpha"),
             (["--check-error", "nan"], "--check-error"), (["--check-error", "inf"], "--check-error")],
    "stencil": [(["--iters", "-1"], "--iters")],
    "cfd": [(["--grid", "1,1,7"], "--grid"), (["--grid", "2"], "--grid"), (["--grid", "0,2"], "--grid"),
            (["--grid", "1,x"], "--grid"), (["--perturb", "nan"], "--perturb"), (["--perturb", "inf"], "--perturb"),
            (["--save", ""], "--save")],
    "swe": [(["--grid", "1,1,7"], "--grid"), (["--grid", "2"], "--grid"), (["--check-mass", "inf"], "--check-mass"),
            (["--cfl", "inf"], "--cfl"), (["--theta", "nan"], "--theta"), (["--problem", "tsunami"], "--problem")],
    "cg_solver": [(["--tol", "inf"], "--tol"), (["--tol", "1e400"], "--tol"), (["--tol", "1"], "--tol"),
                  (["--atol", "inf"], "--atol"), (["--check-error", "nan"], "--check-error"),
                  (["--symmetry-rtol", "inf"], "--symmetry-rtol"), (["--precond", "ssor"], "--precond"),
                  (["--operator", "dense"], "--operator"), (["--file", ""], "--file")],
    # Values, and options that must agree with --n (a usage error too, checked after parsing).
    "spectral": [(["--n", "15"], "--n"), (["--n", "4"], "--n"), (["--grid", "1,1,7"], "--grid"),
                 (["--nu", "nan"], "--nu"), (["--nu", "-1"], "--nu"), (["--dt", "inf"], "--dt"),
                 (["--dt", "-0.1"], "--dt"), (["--cfl", "0"], "--cfl"), (["--init", "vortex"], "--init"),
                 (["--viscous", "implicit"], "--viscous"), (["--amplitude", "0"], "--amplitude"),
                 (["--kmin", "0"], "--kmin"), (["--kmax", "6"], "--kmax"), (["--kmin", "5"], "--kmin"),
                 (["--init", "taylor-green", "--tg-k", "6"], "--tg-k"), (["--check-error", "nan"], "--check-error"),
                 (["--seed", "-1"], "--seed"), (["--save", ""], "--save")],
}[app]
for args, option in VALUES:
    rc, out = launch(SMALL + args)
    expect("bad value " + " ".join(map(repr, args)), rc, out, E["usage"], once=["Run with --help"],
           never=[NO_LONG_NUMBERS, r"stoi", r"terminate called", r"MPI_Abort", r"BAD TERMINATION"])
    if option not in out:
        sys.exit(f"FAIL: the message for {args} does not name {option}:\n{out}")
if app in ("cfd", "swe", "spectral"):
    rc, out = launch(SMALL + ["--grid", "2,2"])
    expect("--grid 2,2 at 2 ranks", rc, out, E["error"], once=["--grid 2,2 makes a grid of 4 ranks; this run has 2"])

# Ranks with different command lines (an MPMD launch): one fails to parse, or both parse but
# differ. One message, exit 64 everywhere, no hang.
for name, tail in (("one rank fails to parse", [NUMBER, "x"]), ("one rank's argv differs", [NUMBER, "13"])):
    cmd = [mpiexec, "-n", "1", exe] + SMALL + [":", "-n", "1", exe] + SMALL + tail
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    print(" ".join(cmd), f"-> exit {p.returncode}\n{p.stdout}")
    expect(name, p.returncode, p.stdout, E["usage"], once=["Run with --help", "[detected on rank 1 of 2]"])

# ---- errors: 1, one message --------------------------------------------------------------------------------
# Outputs only replace regular files (or create new ones): a character device, a FIFO, a directory
# or a symbolic link is refused with the path named before any work (no progress line), and left
# as it was.
fifo = os.path.join(work, "fifo")
os.mkfifo(fifo)
link = os.path.join(work, "link.json")
os.symlink(os.path.join(work, "target.json"), link)
missing = os.path.join(work, "no", "such", "dir", "r.json")
OUTPUTS = [(["--json", "/dev/full"], "'/dev/full' is a character device, not a regular file"),
           (["--json", fifo], f"'{fifo}' is a FIFO, not a regular file"),
           (["--json", work], f"'{work}' is a directory, not a regular file"),
           (["--json", link], f"'{link}' is a symbolic link, not a regular file"),
           (["--json", missing], f"cannot write '{missing}': its directory '{os.path.dirname(missing)}' does not "
                                 "exist")]
if app in ("cfd", "swe", "spectral"):  # --save and its .xmf sidecar
    os.mkfifo(os.path.join(work, "state.xmf"))
    OUTPUTS += [(["--save", fifo], f"--save: '{fifo}' is a FIFO"),
                (["--save", "/dev/null"], "'/dev/null' is a character device"),
                (["--save", os.path.join(work, "state.h5")], "state.xmf' is a FIFO"),
                (["--save", os.path.join(work, "no", "dir", "s.h5")], "its directory")]
for args, needle in OUTPUTS:
    rc, out = launch(SMALL + ["--monitor", "1"] + args)
    expect("output " + " ".join(args), rc, out, E["error"], once=[needle], never=[r"(step|iteration) +\d+/"])
if not os.path.exists(fifo) or os.path.islink(link) is False or os.path.exists(os.path.join(work, "target.json")):
    sys.exit("FAIL: a refused output was replaced or written through")
rc, out = launch(HUGE)
expect("a huge problem", rc, out, E["error"], once=[" per rank on rank "],
       never=[r"Kokkos failed to allocate", r"bad_alloc"])
if not re.search(r"needs \d+ bytes \(\S+ [KMGTPE]?i?B\) per rank", out):
    sys.exit(f"FAIL: the huge problem's message does not give the bytes per rank:\n{out}")
if app == "cg_solver":
    # A Matrix Market file's declared size is checked before the file is read: a non-square
    # matrix in one line giving its size, a matrix beyond every rank's memory, and (host builds)
    # one that fits one rank's memory but not the other's (rank 1 under an address-space limit,
    # ulimit -v), refused alike on every rank, once, never MPI_Abort or Kokkos' allocation error
    # on one rank.
    nonsquare = os.path.join(work, "nonsquare.mtx")
    with open(nonsquare, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n3 4 2\n1 1 1\n3 4 1\n")
    mm = ["--problem", "mm", "--file", nonsquare, "--method", "gmres"]
    rc, out = launch(mm)
    expect("a non-square matrix", rc, out, E["error"], once=[f"the matrix in '{nonsquare}' is not square (3 x 4)"])
    # A declared size beyond every rank's memory (2e10 rows and entries: about 2 TiB per rank at
    # 2 ranks, beyond the node's memory here and an H200's 139 GiB on a GPU build): refused on
    # every rank, naming where its limit comes from (the GPU's free memory on device builds).
    backend = apptest.run(mpiexec, exe, 2, SMALL, os.path.join(work, "backend.json"))["backend"]
    on_device = backend.lower() in ("cuda", "hip", "sycl")
    vast = os.path.join(work, "vast.mtx")
    with open(vast, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n20000000000 20000000000 20000000000\n1 1 1\n")
    rc, out = launch(["--problem", "mm", "--file", vast, "--method", "gmres"])
    expect("a matrix beyond every rank's memory", rc, out, E["error"], once=[" per rank on rank "],
           never=[r"Kokkos failed to allocate", r"bad_alloc", r"MPI_Abort", r"terminate called"])
    if on_device and "free memory of this rank's GPU" not in out:
        sys.exit(f"FAIL: on a {backend} build the limit is the GPU's free memory:\n{out}")
if app == "cg_solver" and on_device:
    # ulimit -v does not apply: CUDA reserves far more address space than 3 GiB when it starts,
    # and a rank's arrays live in its GPU's memory (the check above).
    print(f"skipped on {backend}: a matrix beyond one rank's address-space limit (ulimit -v)")
elif app == "cg_solver":
    big = os.path.join(work, "big.mtx")  # 3e7 rows and entries: about 3.0 GiB per rank at 2 ranks
    with open(big, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n30000000 30000000 30000000\n1 1 1\n")
    mm = ["--problem", "mm", "--file", big, "--method", "gmres"]
    limited = ["sh", "-c", 'ulimit -v 3145728 && exec "$@"', "sh", exe]  # 3 GiB on rank 1
    cmd = [mpiexec, "-n", "1", exe] + mm + [":", "-n", "1"] + limited + mm
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    print(" ".join(cmd), f"-> exit {p.returncode}\n{p.stdout}")
    expect("a matrix beyond one rank's memory", p.returncode, p.stdout, E["error"], once=[" per rank on rank "],
           never=[r"Kokkos failed to allocate", r"bad_alloc", r"MPI_Abort", r"BAD TERMINATION", r"terminate called"])
    if "per rank on rank 0" not in p.stdout and "ulimit -v" not in p.stdout:
        sys.exit(f"FAIL: rank 1's address-space limit is not named:\n{p.stdout}")

# ---- failed checks: 3; no convergence: 2 ---------------------------------------------------------------------
if FAILING:
    extra, status, needle = FAILING
    r = apptest.run(mpiexec, exe, 2, SMALL + extra, os.path.join(work, "failing.json"), expect=status)
    expect("a failed check", status, r["_output"], status, once=[needle])
    if r["exit"]["outcome"] != "check_failed":
        sys.exit(f"FAIL: the JSON says {r['exit']}")
if app == "cg_solver":
    r = apptest.run(mpiexec, exe, 2, SMALL + ["--max-iters", "3"], os.path.join(work, "noconv.json"),
                    expect=E["not_converged"])
    if r["check"]["converged"] or r["exit"]["outcome"] != "not_converged" or r["check"]["iterations"] != 3:
        sys.exit(f"FAIL: no convergence reported as {r['check']} {r['exit']}")
    expect("no convergence", E["not_converged"], r["_output"], E["not_converged"], once=["no convergence"])

print(f"{app}: command-line and exit-status checks passed")
