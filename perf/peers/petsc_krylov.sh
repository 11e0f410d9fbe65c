#!/usr/bin/env bash
# Side by side with PETSc (petsc4py, Debian's PETSc 3.18 on Open MPI; spmdarray's apps/cg_solver on
# MPICH: each side with its own mpiexec), the same matrices and right sides (perf/peers/
# petsc_common.py builds spmd::sparse's exactly), the same tolerance, rank count and x0 = 0:
#
#   krylov   GMRES(RESTART) and BiCGStab, no preconditioner, on convection-diffusion (convdiff2d,
#            Peclet PECLET), n x n unknowns: iterations to rtol TOL on both sides at AGREE_SIZES
#            (the agreement check: the same Krylov method on the same system), and ms per
#            iteration at SIZES over exactly ITERS iterations;
#   mg       time to solution, rtol MGTOL: our multigrid-preconditioned CG (matrix-free operator)
#            against PETSc's KSPCG + PCGAMG (its defaults) on the Poisson problems, and our
#            Jacobi-preconditioned CG (matrix-free) when JACOBI=1.
#
#   perf/peers/petsc_krylov.sh [krylov|mg|all] [BUILD_DIR] [OUT_DIR]   (a build with apps)
#   env: AGREE_SIZES="64 128" SIZES="512 1024" RANKS="1 2" TOL=1e-8 ITERS=300 RESTART=30 PECLET=100
#        MG_PROBLEMS="poisson2d:2048 poisson3d:128" MGTOL=1e-8 JACOBI=1
#
# Needs `apt-get install python3-petsc4py` (it installs Open MPI beside MPICH; spmdarray's
# scripts name MPICH explicitly). OMP_NUM_THREADS=1: one core per rank on both sides. A run
# that does not converge (exit 2) is reported, not hidden.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
what=${1:-all}
build=$(realpath "${2:-$root/build}")
out=$(realpath -m "${3:-$root/bench-results/petsc-krylov}")
mkdir -p "$out"
export PETSC_DIR=${PETSC_DIR:-$(ls -d /usr/lib/petscdir/petsc3.*/*-real | tail -1)}
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false
# Both sides start alike on a shared machine: MPICH's launcher starts its ranks in a new session
# (their own scheduler autogroup, nice 0) and does not bind them to cores; Open MPI's ranks stay
# in the caller's session and are bound to one core each at 1-2 ranks. So PETSc runs under
# `setsid --wait` with --bind-to none. (Without: under load 8-9, PETSc's ranks shared the
# caller's autogroup with its other jobs and got ~30% of a core where ours got ~90%: BiCGStab
# 512^2 at 1 rank 21 ms against 4.5 ms.)
petsc=(setsid --wait mpiexec.openmpi --allow-run-as-root --oversubscribe --bind-to none)

# ours NAME NP ARGS...: apps/cg_solver --json OUT/NAME.json, its log in OUT/NAME.log
ours() {
  local name=$1 np=$2
  shift 2
  local cmd=(mpiexec.mpich -n "$np" "$build/apps/cg_solver" --monitor 0 --json "$out/$name.json" "$@")
  echo "+ ${cmd[*]}" >"$out/$name.log"
  "${cmd[@]}" >>"$out/$name.log" 2>&1 || [[ $? == 2 ]]
}
# peer NAME NP ARGS...: petsc_krylov.py --json OUT/NAME.json
peer() {
  local name=$1 np=$2
  shift 2
  local cmd=("${petsc[@]}" -n "$np" /usr/bin/python3 "$root/perf/peers/petsc_krylov.py" --json "$out/$name.json" "$@")
  echo "+ PETSC_DIR=$PETSC_DIR ${cmd[*]}" >"$out/$name.log"
  "${cmd[@]}" >>"$out/$name.log" 2>&1
}

if [[ $what == krylov || $what == all ]]; then
  tol=${TOL:-1e-8} restart=${RESTART:-30} pe=${PECLET:-100} iters=${ITERS:-300}
  # Agreement: the same method on the same system converges in the same number of iterations.
  printf '| method | n | ranks | rtol | iterations ours / PETSc | true residual ours / PETSc |\n'
  printf '|---|---|---|---|---|---|\n'
  for n in ${AGREE_SIZES:-64 128}; do
    for np in ${RANKS:-1 2}; do
      for m in gmres bicgstab; do
        k=$m
        [[ $m == bicgstab ]] && k=bcgs
        ours "agree_ours_${m}_n${n}_np${np}" "$np" --problem convdiff2d --peclet "$pe" --n "$n" --method "$m" \
          --gmres-restart "$restart" --tol "$tol" --max-iters 100000
        peer "agree_petsc_${m}_n${n}_np${np}" "$np" --problem convdiff2d --peclet "$pe" --n "$n" --ksp "$k" \
          --restart "$restart" --tol "$tol" --max-iters 100000
        /usr/bin/python3 - "$out/agree_ours_${m}_n${n}_np${np}.json" "$out/agree_petsc_${m}_n${n}_np${np}.json" "$m" \
          "$tol" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
name = "GMRES(%d)" % b["restart"] if sys.argv[3] == "gmres" else "BiCGStab"
print(f"| {name} | {a['problem']['n']}^2 | {a['ranks']} | {sys.argv[4]} | {a['check']['iterations']} "
      f"({a['check']['reason']}) / {b['iterations']} (reason {b['reason']}) | "
      f"{a['check']['true_relative_residual']:.2e} / {b['true_relative_residual']:.2e} |")
PY
      done
    done
  done
  echo
  # Time per iteration: both sides run exactly ITERS iterations (a tolerance they cannot reach);
  # PETSc's GMRES twice: its default Gram-Schmidt (classical, refined only when needed) and
  # refined always (CGS2, what ours does every iteration).
  printf '| method | n | ranks | iterations ours / PETSc | ours ms/iteration | PETSc ms/iteration | PETSc / ours |\n'
  printf '|---|---|---|---|---|---|---|\n'
  for n in ${SIZES:-512 1024}; do
    for np in ${RANKS:-1 2}; do
      for m in gmres gmres-cgs2 bicgstab; do
        k=$m extra=()
        [[ $m == bicgstab ]] && k=bcgs
        [[ $m == gmres-cgs2 ]] && k=gmres extra=(-ksp_gmres_cgs_refinement_type refine_always)
        [[ $m != gmres-cgs2 ]] && ours "ours_${m}_n${n}_np${np}" "$np" --problem convdiff2d --peclet "$pe" --n "$n" \
          --method "$m" --gmres-restart "$restart" --tol 1e-15 --max-iters "$iters"
        peer "petsc_${m}_n${n}_np${np}" "$np" --problem convdiff2d --peclet "$pe" --n "$n" --ksp "$k" \
          --restart "$restart" --tol 1e-15 --max-iters "$iters" "${extra[@]}"
        ours_json="$out/ours_${m}_n${n}_np${np}.json"
        [[ $m == gmres-cgs2 ]] && ours_json="$out/ours_gmres_n${n}_np${np}.json"
        /usr/bin/python3 - "$ours_json" "$out/petsc_${m}_n${n}_np${np}.json" "$m" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ta, tb = 1e3 * a["timings"]["seconds_per_step"], 1e3 * b["seconds_per_iteration"]
name = {"gmres": "GMRES(%d)" % b["restart"], "gmres-cgs2": "GMRES(%d), PETSc refine_always" % b["restart"],
        "bicgstab": "BiCGStab"}[sys.argv[3]]
print(f"| {name} | {a['problem']['n']}^2 | {a['ranks']} | {a['check']['iterations']} / {b['iterations']} | "
      f"{ta:.3f} | {tb:.3f} | {tb / ta:.2f} |")
PY
      done
    done
  done
  echo
fi

if [[ $what == mg || $what == all ]]; then
  tol=${MGTOL:-1e-8}
  printf '| problem | ranks | solver | iterations | setup s | solve s | total s | total / ours mg-CG |\n'
  printf '|---|---|---|---|---|---|---|---|\n'
  for pn in ${MG_PROBLEMS:-poisson2d:2048 poisson3d:128}; do
    p=${pn%%:*} n=${pn##*:}
    for np in ${RANKS:-1 2}; do
      ours "ours_mg_${p}_n${n}_np${np}" "$np" --problem "$p" --n "$n" --operator matrix-free --precond mg \
        --tol "$tol" --max-iters 100000
      peer "petsc_gamg_${p}_n${n}_np${np}" "$np" --problem "$p" --n "$n" --ksp cg --pc gamg --tol "$tol" \
        --max-iters 100000
      files=("$out/ours_mg_${p}_n${n}_np${np}.json" "$out/petsc_gamg_${p}_n${n}_np${np}.json")
      if [[ ${JACOBI:-1} == 1 ]]; then
        ours "ours_jacobi_${p}_n${n}_np${np}" "$np" --problem "$p" --n "$n" --operator matrix-free --precond jacobi \
          --tol "$tol" --max-iters 100000
        files+=("$out/ours_jacobi_${p}_n${n}_np${np}.json")
      fi
      /usr/bin/python3 - "$p" "$n" "${files[@]}" <<'PY'
import json, sys
p, n = sys.argv[1], sys.argv[2]
runs = [json.load(open(f)) for f in sys.argv[3:]]
def row(name, j, ours):
    if ours:
        its, setup, solve, ranks = (j["check"]["iterations"], j["timings"]["setup_seconds"], j["timings"]["seconds"],
                                    j["ranks"])
        its = f"{its} ({j['check']['reason']})"
    else:
        its, setup, solve, ranks = f"{j['iterations']} (reason {j['reason']})", j["setup_seconds"], j["seconds"], j["ranks"]
    return name, ranks, its, setup, solve, setup + solve
rows = [row("spmdarray CG + multigrid", runs[0], True), row("PETSc KSPCG + PCGAMG", runs[1], False)]
if len(runs) > 2:
    rows.append(row("spmdarray CG + Jacobi", runs[2], True))
base = rows[0][5]
shape = f"{n}^3" if p == "poisson3d" else f"{n}^2"
for name, ranks, its, setup, solve, total in rows:
    print(f"| {p} {shape} | {ranks} | {name} | {its} | {setup:.3f} | {solve:.3f} | {total:.3f} | {total / base:.1f} |")
PY
    done
  done
fi
