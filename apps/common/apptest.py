"""Running an app under MPI from the apps' ctest scripts, and the checker of the one JSON schema
every app writes (docs/apps.md#the-json-report). Every app test goes through run(), which checks
each report against the schema with check_report()."""
import json
import os
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

SCHEMA = "spmdarray-app-report/1"
EXIT = {"ok": 0, "error": 1, "not_converged": 2, "check_failed": 3, "usage": 64}

# The keys of the report, by object: name -> (type, required). Types: "str", "int", "num", "bool",
# "str|null", "list", "dict". Objects other than these hold app-specific keys (checked below).
TOP = {
    "schema": ("str", True), "app": ("str", True), "version": ("str", True), "git_revision": ("str", True),
    "backend": ("str", True), "device": ("str", True), "ranks": ("int", True), "threads": ("int", True),
    "options": ("dict", True), "problem": ("dict", True), "distribution": ("str", True), "run": ("dict", True),
    "timings": ("dict", True), "check": ("dict", True), "exit": ("dict", True), "resources": ("list", False),
}
RUN = {"run_id": ("str|null", True), "restarted_from": ("str|null", True), "first_step": ("int", True),
       "last_step": ("int", True), "unit": ("str", True)}
TIMINGS = {"seconds": ("num", True), "steps": ("int", True), "seconds_per_step": ("num", True),
           "rate": ("num", True), "rate_unit": ("str", True), "bytes_per_step": ("num", False),
           "setup_seconds": ("num", False)}
EXITOBJ = {"status": ("int", True), "outcome": ("str", True), "message": ("str", True)}
RESOURCE = {"step": ("int", True), "rss_bytes": ("num", True), "peak_rss_bytes": ("num", True),
            "fds": ("num", True), "comms": ("num", True)}
# What each app adds to "problem" and "check" (besides problem.shape, check.state_crc32 and
# check.finite, which every app has); a type ending in "?" is an optional key.
APPS = {
    "heat": ({"n": "int", "alpha": "num", "dt": "num", "steps": "int"},
             {"sum": "num", "max_error": "num", "max_change": "num", "final_time": "num"}),
    "stencil": ({"n": "int", "steps": "int", "fast": "bool"}, {"sum": "num", "average_energy": "num"}),
    "cfd": ({"nx": "int", "ny": "int", "nit": "int", "steps": "int", "warmup": "int", "dt": "num", "perturb": "num",
             "periodic_halo": "bool"}, {"sum_u": "num", "sum_v": "num", "sum_p": "num"}),
    "swe": ({"name": "str", "n": "int", "steps": "int", "cfl": "num", "theta": "num", "g": "num", "dx": "num"},
            {"mass": "num", "mass_initial": "num", "mass_relative_change": "num", "sum_w": "num", "sum_hu": "num",
             "sum_hv": "num", "w_min": "num", "w_max": "num", "h_min": "num", "max_abs_hu": "num",
             "max_abs_hv": "num", "time": "num", "dt": "num"}),
    "spectral": ({"n": "int", "spectrum_shape": "list", "steps": "int", "dt": "num", "nu": "num", "init": "str",
                  "viscous": "str", "tg_k": "int", "seed": "int", "kmin": "int", "kmax": "int", "amplitude": "num",
                  "plans": "str"},
                 {"time": "num", "energy": "num", "enstrophy": "num", "enstrophy_initial": "num", "max_abs_w": "num",
                  "max_error": "num?", "decay_rate": "num?", "decay_rate_exact": "num?"}),
    "cg_solver": ({"name": "str", "operator": "str", "n": "int", "rows": "int", "nnz": "int",
                   "matrix_checksum": "str", "file": "str", "solver": "str", "precond": "str",
                   "precond_detail": "str", "restart": "int", "peclet": "num", "rtol": "num", "atol": "num",
                   "max_iters": "int"},
                  {"converged": "bool", "reason": "str", "detail": "str", "iterations": "int", "residual": "num",
                   "solver_true_residual": "num", "replacements": "int", "true_relative_residual": "num", "error_max": "num", "error_relative": "num", "x_sum": "num",
                   "history": "list?"}),
}


def _is(value, kind):
    if kind == "str":
        return isinstance(value, str)
    if kind == "str|null":
        return value is None or isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":  # NaN and infinities are written as null by the apps' JSON library
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    raise ValueError(kind)


def _check_object(obj, spec, where, errors, closed=True):
    for key, (kind, required) in spec.items():
        if key not in obj:
            if required:
                errors.append(f"{where}: missing '{key}'")
        elif not _is(obj[key], kind):
            errors.append(f"{where}.{key}: {obj[key]!r} is not {kind}")
    if closed:
        for key in obj:
            if key not in spec:
                errors.append(f"{where}: unknown key '{key}'")


def report_errors(r, app=None, ranks=None):
    """The ways report `r` departs from the schema (an empty list when it conforms)."""
    errors = []
    if not isinstance(r, dict):
        return ["the report is not a JSON object"]
    _check_object(r, TOP, "report", errors)
    if errors:
        return errors
    if r["schema"] != SCHEMA:
        errors.append(f"schema {r['schema']!r}, expected {SCHEMA!r}")
    if r["app"] not in APPS or (app is not None and r["app"] != app):
        errors.append(f"app {r['app']!r}" + (f", expected {app!r}" if app else ""))
    if not re.fullmatch(r"\d+\.\d+\.\d+", r["version"]):
        errors.append(f"version {r['version']!r}")
    if not r["git_revision"]:
        errors.append("git_revision is empty (\"unknown\" when there is none)")
    if r["ranks"] < 1 or (ranks is not None and r["ranks"] != ranks):
        errors.append(f"ranks {r['ranks']}" + (f", expected {ranks}" if ranks else ""))
    if r["threads"] < 1:
        errors.append(f"threads {r['threads']}")
    for k, v in r["options"].items():
        if not isinstance(v, str):
            errors.append(f"options.{k}: {v!r} is not a string")
    _check_object(r["run"], RUN, "run", errors)
    _check_object(r["timings"], TIMINGS, "timings", errors)
    _check_object(r["exit"], EXITOBJ, "exit", errors)
    for i, s in enumerate(r.get("resources", [])):
        _check_object(s, RESOURCE, f"resources[{i}]", errors)
    if errors:
        return errors
    if r["run"]["unit"] not in ("step", "iteration"):
        errors.append(f"run.unit {r['run']['unit']!r}")
    if r["run"]["run_id"] is not None and not re.fullmatch(r"[0-9a-f]{32}", r["run"]["run_id"]):
        errors.append(f"run.run_id {r['run']['run_id']!r}")
    status, outcome = r["exit"]["status"], r["exit"]["outcome"]
    if EXIT.get(outcome) != status or outcome in ("error", "usage"):
        errors.append(f"exit: status {status} with outcome {outcome!r}")
    problem, check = r["problem"], r["check"]
    shape = problem.get("shape")
    if not isinstance(shape, list) or not shape or not all(_is(e, "int") and e >= 0 for e in shape):
        errors.append(f"problem.shape {shape!r}")
    crcs = check.get("state_crc32")
    if not isinstance(crcs, dict) or not crcs or not all(_is(v, "int") for v in crcs.values()):
        errors.append(f"check.state_crc32 {crcs!r}")
    if not _is(check.get("finite"), "bool"):
        errors.append(f"check.finite {check.get('finite')!r}")
    elif not check["finite"] and status == 0:
        errors.append("check.finite is false but the exit status is 0")
    if r["app"] in APPS:
        pspec, cspec = APPS[r["app"]]
        def spec(s):
            return {k: (t.rstrip("?"), not t.endswith("?")) for k, t in s.items()}
        _check_object(problem, {"shape": ("list", True), **spec(pspec)}, "problem", errors)
        _check_object(check, {"state_crc32": ("dict", True), "finite": ("bool", True), **spec(cspec)}, "check", errors)
    return errors


def check_report(r, app=None, ranks=None, where="report"):
    """Exit the test with a failure when `r` does not conform to the schema."""
    errors = report_errors(r, app, ranks)
    if errors:
        sys.exit(f"FAIL: {where} does not conform to {SCHEMA}:\n  " + "\n  ".join(errors))


def check_args():
    """The arguments of a check script, `MPIEXEC APP WORKDIR MAXRANKS [HDF5]`, as (mpiexec, app,
    workdir, maxranks, hdf5); WORKDIR is made afresh."""
    mpiexec, exe, work, maxranks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    hdf5 = len(sys.argv) > 5 and sys.argv[5].upper() in ("1", "ON", "TRUE")
    fresh(work)
    return mpiexec, exe, work, maxranks, hdf5


def fresh(work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)


def app_name(exe):
    return os.path.basename(exe)


def launch(mpiexec, exe, ranks, args, timeout=200, env=None, cwd=None):
    """Run `mpiexec -n ranks exe args...`; print the command and its output; return (exit status,
    output with stderr merged)."""
    cmd = [mpiexec, "-n", str(ranks), exe] + [str(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                       env=env, cwd=cwd)
    print(" ".join(cmd), f"-> exit {p.returncode}")
    print(p.stdout, flush=True)
    return p.returncode, p.stdout


def run(mpiexec, exe, ranks, args, out_json, timeout=200, expect=0, env=None):
    """Run `mpiexec -n ranks exe args... --json out_json`, print the command and its output, exit
    the test with a failure unless it exits with `expect`, and return the JSON the app wrote,
    checked against the schema (and its exit object against `expect`)."""
    rc, out = launch(mpiexec, exe, ranks, list(args) + ["--json", out_json], timeout, env)
    if rc != expect:
        sys.exit(f"FAIL: {app_name(exe)} {' '.join(map(str, args))} exited with {rc}, expected {expect}")
    with open(out_json) as f:
        r = json.load(f)
    check_report(r, app_name(exe), ranks, out_json)
    if r["exit"]["status"] != expect:
        sys.exit(f"FAIL: {out_json}: exit.status {r['exit']['status']}, expected {expect}")
    r["_output"] = out
    return r


def crc(r):
    return r["check"]["state_crc32"]


def check_same_state(ref, runs, field, rel=1e-12):
    """Every run in `runs` (name -> JSON) ends with ref's state bit for bit (check.state_crc32) and
    with ref's check.`field` to roundoff."""
    for name, r in runs:
        if crc(r) != crc(ref):
            sys.exit(f"FAIL: {name}: final state crc32 {crc(r)} != uninterrupted {crc(ref)}")
        a, b = r["check"][field], ref["check"][field]
        if abs(a - b) > rel * abs(b):
            sys.exit(f"FAIL: {name}: {field} {a!r} vs {b!r}")


def restart_runs(run, prefix, common, every, keep, latest_ranks, label=""):
    """The runs every restart check makes, through the script's `run(ranks, name, args)`, all with
    the options `common`: an uninterrupted run at 2 ranks (`ref`); a run at 2 ranks that saves a
    checkpoint every `every` steps as `prefix`.<step>.h5 and keeps `keep` of them (`ckp`); restarts
    from its checkpoint of step 20 (`first`) at 2 ranks (`same`) and at 3 ranks (`other`), with no
    other option than --restart (the problem comes from the checkpoint); and `--restart latest` at
    `latest_ranks` ranks (`latest`). The run names start with `label`-."""
    name = (label + "-") if label else ""
    r = SimpleNamespace(first=prefix + ".0000000020.h5")
    r.ref = run(2, name + "uninterrupted", common)
    r.ckp = run(2, name + "checkpointing",
                common + ["--checkpoint-every", str(every), "--checkpoint", prefix, "--checkpoint-keep", str(keep)])
    r.same = run(2, name + "restart-np2", ["--restart", r.first])
    r.other = run(3, name + "restart-np3", ["--restart", r.first])
    r.latest = run(latest_ranks, name + "restart-latest", ["--restart", "latest", "--checkpoint", prefix])
    for n, x in (("restart-np2", r.same), ("restart-np3", r.other), ("restart-latest", r.latest)):
        if x["run"]["run_id"] != r.ckp["run"]["run_id"] or x["run"]["restarted_from"] is None:
            sys.exit(f"FAIL: {n}: run {x['run']} does not continue run {r.ckp['run']['run_id']}")
    return r
