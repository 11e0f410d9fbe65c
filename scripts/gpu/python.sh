#!/usr/bin/env bash
# On a lent GPU machine, through `.carry/run-carried.sh exec scripts/gpu/python.sh`: the Python
# front's GPU figures (issue 28, docs/python.md "Performance"): perf/bench_python.py (the fused
# assignment against the C++ kernel and CuPy, the per-statement overheads),
# perf/python_stencil_forms.py (the stencil's named, in-place and double-buffer forms) and cuNumeric's
# examples (examples/python) beside the C++ apps at the same sizes, one rank on one GPU. Needs a
# device build with the extension (scripts/gpu/device-build.sh with SPMD_DEV_PYTHON, docs/gpu.md);
# the apps are run where that build holds them. Logs and JSON go to $out.
# Environment: SPMD_PY_STENCIL_N (default 16382: a 16384^2 grid), SPMD_PY_STENCIL_ITERS (100),
# SPMD_PY_CFD_N (4096), SPMD_PY_CFD_STEPS (5, after one warm-up step in the app), SPMD_PY_CFD_NIT (50).
set -uo pipefail
: "${build:?run through run-carried.sh exec}" "${src:?}" "${mpiexec:?}" "${out:?}"
export PYTHONPATH=$build/python PYTHONUNBUFFERED=1
py=$(command -v python3)
cd "$src" || exit 1
[[ -d $build/python/spmdarray ]] || { echo "python.sh: no extension in $build/python (SPMD_DEV_PYTHON)" >&2; exit 1; }
sn=${SPMD_PY_STENCIL_N:-16382} si=${SPMD_PY_STENCIL_ITERS:-100}
cn=${SPMD_PY_CFD_N:-4096} cs=${SPMD_PY_CFD_STEPS:-5} cit=${SPMD_PY_CFD_NIT:-50}
rc=0
step() {  # step NAME COMMAND...: run, log to $out/NAME.log, echo the log's last lines
  local name=$1 t0=$SECONDS
  shift
  echo "== $name: $*"
  "$@" >"$out/$name.log" 2>&1 || { echo "   exit $?"; rc=1; }
  tail -n "${SPMD_PY_TAIL:-16}" "$out/$name.log"
  echo "   ($((SECONDS - t0)) s)"
}
step bench_python "$py" perf/bench_python.py --json "$out/bench_python.json"
SPMD_PY_TAIL=40 step stencil_forms "$py" perf/python_stencil_forms.py --n "$sn" --json "$out/stencil_forms.json" --profile
step example_stencil "$py" examples/python/stencil.py -n "$sn" -i "$si"
[[ -x $build/apps/stencil ]] && step app_stencil "$mpiexec" -n 1 "$build/apps/stencil" --n "$sn" --steps "$si" \
  --json "$out/app_stencil.json"
step example_cfd "$py" examples/python/cfd.py --nx "$cn" --ny "$cn" --nit "$cit" --steps "$cs"
[[ -x $build/apps/cfd ]] && step app_cfd "$mpiexec" -n 1 "$build/apps/cfd" --nx "$cn" --ny "$cn" --nit "$cit" \
  --steps "$cs" --warmup 0 --json "$out/app_cfd.json"
exit $rc
