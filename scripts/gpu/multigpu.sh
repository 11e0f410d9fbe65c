#!/usr/bin/env bash
# The multi-GPU runs of issue 24 on one node of a lent machine (2 or 4 GPUs, NVLink), one rank per
# GPU, with the CUDA binaries scripts/gpu/device-build.sh packed into .carry/ (nothing is
# compiled here). Run from the repository root on the device:
#
#   scripts/gpu/multigpu.sh measure   scaling and benchmarks (about 6 minutes on 4 GPUs):
#       weak scaling at 1, 2, 4 GPUs of apps/stencil (--fast and in place, with and without
#       --overlap), cfd (with and without --overlap), swe and cg_solver (CSR, matrix-free;
#       pipelined CG at the small size),
#       at >= 16M points per GPU and at 1M; strong scaling of stencil --fast at 16384^2 (also
#       with the ipc, nccl and mpi backends forced at the most GPUs) and CG CSR at 8192^2;
#       bench_halo per backend and its overlap benchmark at 2 and 4 GPUs (the one-rank periodic
#       exchange at 1); bench_allreduce (8-byte all-reduce: MPI on the host copy against NCCL on
#       the device, and a dot product to a host scalar) at 1, 2, 4 GPUs
#   scripts/gpu/multigpu.sh suite     the test suite at 1..GPUs ranks, one rank per GPU, once per
#       backend forced (SPMD_BACKEND=ipc, nccl, mpi), each within a third of the budget
#   scripts/gpu/multigpu.sh all       measure, then suite with the time that is left
#
# Everything stops at the budget (SPMD_MG_BUDGET seconds, default 530): a run that would start
# later is recorded as skipped. Under $OUT (default ./gpu-out): summary.txt, multigpu.json (every
# series with its points, efficiencies and targets; scripts/plot.py multigpu and
# scripts/scaling_model.py --measured read it), json.tgz (the apps' and benchmarks' JSON),
# logs.tgz, junit.tgz; the summary table is printed last.
#
# Environment: SPMD_MG_BUDGET; SPMD_MG_ONLY (a bash regex: only the app series whose names match,
# e.g. '^(cfd|swe|cg)'; the benchmarks run regardless); SPMD_MG_TESTS (a ctest -R regex for the
# suite, default every test at 1..GPUs ranks: '_np[1-N]$'); SPMD_MG_SUITE_BACKENDS (default
# "ipc nccl mpi": the suite once per backend forced, each in an equal share of the time left); SPMD_MG_BUILD=DIR runs a build folder's binaries instead of the
# pack (a CPU check: SPMD_MG_SMALL=1 divides every size so that it runs in seconds there);
# SPMD_MG_GPUS (default "1 2 4", capped at the GPUs present); SPMD_MG_JOBS (ctest -j, default 4).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): the lent machines' rule.
set -uo pipefail
mode=${1:-measure}
case $mode in measure | suite | all) ;; *) echo "multigpu.sh: mode must be measure, suite or all" >&2; exit 2 ;; esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out/json"
budget=${SPMD_MG_BUDGET:-530}
small=${SPMD_MG_SMALL:-0}
export NCCL_NVLS_ENABLE=0 SPMD_SHARE_GPUS=0 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_PROC_BIND=false
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t_start=$SECONDS
summary_rows=()
log() { printf '[spmd multigpu %s] %s\n' "$(date +%T)" "$*" | tee -a "$out/summary.txt" >&2; }
row() { summary_rows+=("$1|$2|$3"); }
left() { echo $((budget - (SECONDS - t_start))); }

# -- the binaries ---------------------------------------------------------------------------------
if [[ -n ${SPMD_MG_BUILD:-} ]]; then
  build=$(cd "$SPMD_MG_BUILD" && pwd) src=$root
  mpiexec=${SPMD_MG_MPIEXEC:-$(command -v mpiexec.mpich || command -v mpiexec)}
else
  carry=$root/.carry dev=/tmp/spmd-dev
  build=$dev/build src=$dev/src mpiexec=$dev/bin/mpiexec
  [[ -f $carry/spmd-dev.tar.xz ]] || { log "no $carry/spmd-dev.tar.xz (scripts/gpu/device-build.sh makes it)"; exit 1; }
  t0=$SECONDS
  rm -rf "$dev" && tar -C / -xJf "$carry/spmd-dev.tar.xz" || { log "cannot unpack the carried binaries"; exit 1; }
  # The launcher (Open MPI as root, unbound) and the library path, as run-carried.sh sets them.
  launcher=$(command -v mpiexec || command -v mpirun)
  mkdir -p "$dev/bin"
  printf '#!/bin/sh\nexec %s --bind-to none --oversubscribe "$@"\n' "$launcher" >"$dev/bin/mpiexec"
  printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" >"$dev/bin/python3"
  chmod +x "$dev/bin/mpiexec" "$dev/bin/python3"
  cm=$(command -v cmake || true)
  [[ ! -x /usr/bin/cmake && -n $cm ]] && find "$build" -name CTestTestfile.cmake -exec sed -i "s#\"/usr/bin/cmake\"#\"$cm\"#g" {} +
  lib_path="$dev/lib:$dev/kokkos/lib:$build"
  mkdir -p "$dev/lib-missing"
  for f in "$dev"/lib-fallback/*; do
    [[ -e $f ]] || continue
    ldconfig -p | grep -q "^\s*$(basename "$f") " || ln -sf "$f" "$dev/lib-missing/$(basename "$f")"
  done
  export LD_LIBRARY_PATH="$lib_path:$dev/lib-missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "$(head -1 "$dev/BUILD-INFO" 2>/dev/null); unpacked in $((SECONDS - t0)) s"
fi
ngpu=$( (nvidia-smi -L 2>/dev/null || true) | wc -l)
gpus=()
for g in ${SPMD_MG_GPUS:-1 2 4}; do
  if [[ -n ${SPMD_MG_BUILD:-} || $g -le $ngpu ]]; then gpus+=("$g"); fi
done
maxg=${gpus[-1]}
log "$( (nvidia-smi -L 2>/dev/null | head -1) || echo 'no nvidia-smi') ; $ngpu GPU(s); runs at ${gpus[*]} GPUs;" \
  "budget $budget s; build $build"
nvidia-smi topo -m >"$out/topology.log" 2>&1 || true

# -- app runs -----------------------------------------------------------------------------------------
# runs.tsv: series, kind (weak|strong), GPUs, target efficiency, the run's JSON (relative to $out)
: >"$out/runs.tsv"
# run SERIES KIND TARGET GPUS APP ARGS...: one app run, its JSON under json/ and a runs.tsv line.
run() {
  local series=$1 kind=$2 target=$3 np=$4 app=$5
  shift 5
  [[ -n ${SPMD_MG_ONLY:-} && ! $series =~ $SPMD_MG_ONLY ]] && return
  local tag
  tag=$(printf '%s_g%s' "$series" "$np" | tr -c 'a-zA-Z0-9_\n' '_' | tr -s '_')
  local rem
  rem=$(left)
  if ((rem < 20)); then
    row "$series @ $np" "skipped (budget)" 0
    return
  fi
  local t0=$SECONDS rc=0
  timeout $((rem < 120 ? rem : 120)) "$mpiexec" -n "$np" "$build/apps/$app" "$@" --json "$out/json/$tag.json" \
    >"$out/app-$tag.log" 2>&1 || rc=$?
  local rate
  rate=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["timings"]; print("%.4g %s" % (t["rate"], t["rate_unit"]))' \
    "$out/json/$tag.json" 2>/dev/null || echo "no JSON")
  printf '%s\t%s\t%s\t%s\tjson/%s.json\t%s\n' "$series" "$kind" "$np" "$target" "$tag" "$rc" >>"$out/runs.tsv"
  row "$series @ $np GPU" "$rate (exit $rc)" $((SECONDS - t0))
}
# weak SERIES TARGET SIDE APP ARGS... (with @N@ for the global size per axis at SIDE^2 per GPU:
# SIDE * sqrt(GPUs), rounded; and @NY@/@NX@ for a (2, 2)-style split: SIDE * rows, SIDE * cols)
weak() {
  local series=$1 target=$2 side=$3 app=$4
  shift 4
  local g n rows cols args a
  for g in "${gpus[@]}"; do
    n=$(python3 -c "import math; print(round($side * math.sqrt($g)))")
    rows=$((g >= 2 ? 2 : 1)) cols=$((g >= 4 ? g / 2 : 1))
    args=()
    for a in "$@"; do
      a=${a//@N@/$n}
      a=${a//@NY@/$((side * rows))}
      a=${a//@NX@/$((side * cols))}
      args+=("$a")
    done
    run "$series" weak "$target" "$g" "$app" "${args[@]}"
  done
}
strong() {
  local series=$1 target=$2 app=$3
  shift 3
  local g
  for g in "${gpus[@]}"; do run "$series" strong "$target" "$g" "$app" "$@"; done
}

s() { echo $(($1 / (small ? 16 : 1))); }  # sizes (CPU check: 1/16 per axis)
big=$(s 16384) mid=$(s 4096) little=$(s 1024) cg_strong=$(s 8192)

measure() {
  log "weak and strong scaling"
  weak "cfd ${mid}^2/GPU" 0.95 "$mid" cfd --ny @NY@ --nx @NX@ --steps 10 --warmup 1 --quiet
  weak "cfd ${little}^2/GPU" 0.80 "$little" cfd --ny @NY@ --nx @NX@ --steps 20 --warmup 1 --quiet
  weak "cfd --overlap ${mid}^2/GPU" 0.95 "$mid" cfd --ny @NY@ --nx @NX@ --steps 10 --warmup 1 --overlap --quiet
  weak "cfd --overlap ${little}^2/GPU" 0.80 "$little" cfd --ny @NY@ --nx @NX@ --steps 20 --warmup 1 --overlap --quiet
  weak "swe ${mid}^2/GPU" 0.95 "$mid" swe --n @N@ --steps 50 --quiet
  weak "swe ${little}^2/GPU" 0.80 "$little" swe --n @N@ --steps 200 --quiet
  # poisson2d is symmetric by construction: --no-symmetry-check skips the host-side check (two
  # sorts of every entry: 27 s of setup at 4096^2 on one GPU's rank, 93 s at 8192^2), which is
  # outside the timer but would spend the budget.
  local cg=(cg_solver --problem poisson2d --tol 1e-30 --quiet --no-symmetry-check)
  weak "cg csr ${mid}^2/GPU" 0.90 "$mid" "${cg[@]}" --n @N@ --max-iters 200
  weak "cg matrix-free ${mid}^2/GPU" 0.90 "$mid" "${cg[@]}" --n @N@ --max-iters 200 --operator matrix-free
  weak "cg csr ${little}^2/GPU" 0.80 "$little" "${cg[@]}" --n @N@ --max-iters 1000
  weak "cg matrix-free ${little}^2/GPU" 0.80 "$little" "${cg[@]}" --n @N@ --max-iters 1000 --operator matrix-free
  weak "cg csr --pipelined ${little}^2/GPU" 0.80 "$little" "${cg[@]}" --n @N@ --max-iters 1000 --pipelined
  strong "cg csr ${cg_strong}^2" 0.80 "${cg[@]}" --n "$cg_strong" --max-iters 200
  weak "stencil --fast ${big}^2/GPU" 0.95 "$big" stencil --n @N@ --steps 100 --fast --quiet
  weak "stencil --fast --overlap ${big}^2/GPU" 0.95 "$big" stencil --n @N@ --steps 100 --fast --overlap --quiet
  weak "stencil ${big}^2/GPU" 0.95 "$big" stencil --n @N@ --steps 100 --quiet
  weak "stencil --overlap ${big}^2/GPU" 0.95 "$big" stencil --n @N@ --steps 100 --overlap --quiet
  weak "stencil --fast ${little}^2/GPU" 0.80 "$little" stencil --n @N@ --steps 2000 --fast --quiet
  weak "stencil --fast --overlap ${little}^2/GPU" 0.80 "$little" stencil --n @N@ --steps 2000 --fast --overlap --quiet
  strong "stencil --fast ${big}^2" 0.80 stencil --n "$big" --steps 100 --fast --quiet
  strong "stencil --fast --overlap ${big}^2" 0.80 stencil --n "$big" --steps 100 --fast --overlap --quiet
  local be
  for be in ipc nccl mpi; do
    SPMD_BACKEND=$be run "stencil --fast ${big}^2 SPMD_BACKEND=$be" strong 0.80 "$maxg" stencil --n "$big" --steps 100 \
      --fast --quiet --spmd-log-view  # the log (logs.tgz) shows halo::plan, begin and end per backend
  done

  log "benchmarks"
  local common=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json)
  local g f t0 rem
  for g in "${gpus[@]}"; do
    rem=$(left)
    ((rem < 30)) && { row "benchmarks @ $g" "skipped (budget)" 0; continue; }
    if ((g == 1)); then  # the one-rank periodic exchange (target <= 8 us) and the empty one
      f='BM_halo2d/face/n:1024/periodic:[01]/backend:0'
    else
      f='BM_halo2d/face/n:(1024|4096)/periodic:0|BM_halo3d/face/n:256/periodic:0|BM_halo2d/box/n:4096/periodic:1'
      f+="|BM_overlap"
    fi
    t0=$SECONDS
    timeout $((rem < 150 ? rem : 150)) "$mpiexec" -n "$g" "$build/perf/bench_halo" --benchmark_filter="$f" \
      "${common[@]}" --benchmark_out="$out/json/bench_halo_g$g.json" >"$out/bench-halo-g$g.log" 2>&1
    row "bench_halo @ $g GPU" "exit $?" $((SECONDS - t0))
    t0=$SECONDS
    rem=$(left)
    timeout $((rem < 60 ? rem : 60)) "$mpiexec" -n "$g" "$build/perf/bench_allreduce" "${common[@]}" \
      --benchmark_out="$out/json/bench_allreduce_g$g.json" >"$out/bench-allreduce-g$g.log" 2>&1
    row "bench_allreduce @ $g GPU" "exit $?" $((SECONDS - t0))
  done
}

# -- the suite per backend ----------------------------------------------------------------------------
suite() {
  local be share rem t0 res
  local backends=(${SPMD_MG_SUITE_BACKENDS:-ipc nccl mpi}) k=0
  for be in "${backends[@]}"; do
    rem=$(left)
    ((rem < 40)) && { row "ctest SPMD_BACKEND=$be" "skipped (budget)" 0; continue; }
    share=$(( (rem - 10) / (${#backends[@]} - k) ))  # an equal share of what is left
    k=$((k + 1))
    t0=$SECONDS
    (cd "$build" && timeout "$share" env SPMD_BACKEND=$be ctest --output-on-failure --timeout 240 \
       -j "${SPMD_MG_JOBS:-4}" -R "${SPMD_MG_TESTS:-_np[1-$maxg]\$}" -E "uncaught|consumer" -LE package \
       --output-junit "$out/ctest-$be.xml" >"$out/ctest-$be.log" 2>&1)
    local rc=$?
    res=$(grep -E "tests passed|No tests were found" "$out/ctest-$be.log" | tail -1)
    [[ $rc == 124 ]] && res="TIMED OUT after ${share} s: ${res:-partial}"
    log "ctest SPMD_BACKEND=$be: ${res:-no result}; failed: $(grep -E '^\s+[0-9]+ - ' "$out/ctest-$be.log" |
      awk '{print $3}' | tr '\n' ' ')"
    row "ctest SPMD_BACKEND=$be (np 1-$maxg)" "${res:-no result}" $((SECONDS - t0))
  done
}

case $mode in
  measure) measure ;;
  suite) suite ;;
  all) measure; suite ;;
esac

# -- summary, pack ---------------------------------------------------------------------------------------
python3 "$root/scripts/gpu/multigpu_summary.py" "$out" --machine "$( (nvidia-smi -L 2>/dev/null | head -1) || uname -n)" \
  >"$out/summary-table.txt" 2>&1 || log "multigpu_summary.py failed: $(tail -3 "$out/summary-table.txt")"
(cd "$out" && tar -czf json.tgz json runs.tsv && rm -rf json runs.tsv)
(cd "$out" && ls ./*.log >/dev/null 2>&1 && tar -czf logs.tgz --remove-files ./*.log)
(cd "$out" && ls ./*.xml >/dev/null 2>&1 && tar -czf junit.tgz --remove-files ./*.xml)
row "total" "" $((SECONDS - t_start))
{
  cat "$out/summary-table.txt"
  printf '\n%-62s | %-34s | %s\n' "step" "result" "s"
  printf '%s\n' "$(printf '%.0s-' {1..104})"
  for r in "${summary_rows[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    printf '%-62s | %-34s | %s\n' "$a" "$b" "$c"
  done
} | tee -a "$out/summary.txt"
rm -f "$out/summary-table.txt"
ls "$out" >&2
