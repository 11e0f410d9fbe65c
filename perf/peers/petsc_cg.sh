#!/usr/bin/env bash
# Side by side: the same poisson2d CG (no preconditioner, same size, tolerance and iteration
# count, same rank count) in spmdarray (apps/cg_solver, MPICH) and in PETSc (petsc4py, Debian's
# PETSc 3.18 on Open MPI: each side uses its own mpiexec). Prints the time per iteration of both.
#
#   perf/peers/petsc_cg.sh [BUILD_DIR] [OUT_DIR]     (BUILD_DIR: a build with apps, default ./build)
#   env: SIZES="1024 2048" RANKS="1 2" ITERS=300 TOL=1e-12
#
# Needs `apt-get install python3-petsc4py` (it installs Open MPI beside MPICH and switches the
# generic mpicc/mpiexec alternatives; spmdarray's scripts name MPICH explicitly). The tolerance
# is small enough that both sides run exactly ITERS iterations; cg_solver then exits with 2 (no
# convergence), which is expected here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath "${1:-$root/build}")
out=$(realpath -m "${2:-$root/bench-results/petsc}")
mkdir -p "$out"
export PETSC_DIR=${PETSC_DIR:-$(ls -d /usr/lib/petscdir/petsc3.*/*-real | tail -1)}
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false
iters=${ITERS:-300}
tol=${TOL:-1e-12}
printf '| n | ranks | iterations (ours / PETSc) | spmdarray ms/iteration | PETSc ms/iteration | PETSc / ours |\n'
printf '|---|---|---|---|---|---|\n'
for n in ${SIZES:-1024 2048}; do
  for np in ${RANKS:-1 2}; do
    ours="$out/ours_n${n}_np${np}.json" peer="$out/petsc_n${n}_np${np}.json"
    cmd=(mpiexec.mpich -n "$np" "$build/apps/cg_solver" --problem poisson2d --n "$n" --tol "$tol"
         --max-iters "$iters" --json "$ours")
    echo "+ ${cmd[*]}" >"$out/ours_n${n}_np${np}.log"
    "${cmd[@]}" >>"$out/ours_n${n}_np${np}.log" 2>&1 || [[ $? == 2 ]]
    cmd=(mpiexec.openmpi --allow-run-as-root --oversubscribe -n "$np" /usr/bin/python3 "$root/perf/peers/petsc_cg.py"
         --n "$n" --tol "$tol" --max-iters "$iters" --json "$peer")
    echo "+ PETSC_DIR=$PETSC_DIR ${cmd[*]}" >"$out/petsc_n${n}_np${np}.log"
    "${cmd[@]}" >>"$out/petsc_n${n}_np${np}.log" 2>&1
    /usr/bin/python3 - "$ours" "$peer" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ta, tb = 1e3 * a["timings"]["seconds_per_step"], 1e3 * b["seconds_per_iteration"]  # ours: the apps' report schema
print(f"| {a['problem']['n']}^2 | {a['ranks']} | {a['check']['iterations']} / {b['iterations']} | {ta:.2f} | {tb:.2f} "
      f"| {tb / ta:.2f} |")
PY
  done
done
