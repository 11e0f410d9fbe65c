# Sourced on a GPU machine by scripts/gpu/run.sh (builds there) and scripts/gpu/run-carried.sh
# (runs binaries built on the CPU machine): the test and benchmark steps, writing logs and JSON
# under $out. The caller sets:
#   out      the output folder ($OUT)
#   build    the build folder (ctest's, with tests/, apps/, perf/)
#   src      the source tree the build was made from (the Python checks and peers)
#   mpiexec  the launcher (with whatever flags it needs: --bind-to none as root)
# At most 8 files come back from a lent machine: gpu_pack packs the logs and the JSON.

ngpu=$( (nvidia-smi -L 2>/dev/null || true) | wc -l)
summary_rows=()  # "step|result|seconds", printed as a table at the end (gpu_summary)

# DEV/bin/mpiexec (Open MPI as root, unbound, more ranks than cores allowed: tests share a GPU)
# and DEV/bin/python3 (a wrapper, not a link: a virtual environment's interpreter finds its
# packages from the path it is started by), for this machine's LAUNCHER and PYTHON.
gpu_write_bin() {  # DEV LAUNCHER PYTHON
  mkdir -p "$1/bin"
  printf '#!/bin/sh\nexport OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\nexec %s --bind-to none --oversubscribe "$@"\n' \
    "$2" >"$1/bin/mpiexec"
  printf '#!/bin/sh\nexec %s "$@"\n' "$3" >"$1/bin/python3"
  chmod +x "$1/bin/mpiexec" "$1/bin/python3"
}

gpu_log() { printf '[spmd gpu %s] %s\n' "$(date +%T)" "$*" | tee -a "$out/summary.txt" >&2; }
gpu_row() { summary_rows+=("$1|$2|$3"); }

# One ctest run: gpu_ctest TAG ENV... -- CTEST_ARGS...; a row "TAG | passed/total | s".
gpu_ctest() {
  local tag=$1 envs=() t0=$SECONDS
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  (cd "$build" && env "${envs[@]}" ctest --output-on-failure --timeout 300 \
     --output-junit "$out/ctest-$tag.xml" "$@" >"$out/ctest-$tag.log" 2>&1) || true
  local res
  res=$(grep -E "tests passed|No tests were found" "$out/ctest-$tag.log" | tail -1)
  gpu_log "ctest $tag (${envs[*]}): ${res:-no result}; failed: $(grep -E '^\s+[0-9]+ - ' "$out/ctest-$tag.log" |
    awk '{print $3}' | tr '\n' ' ')"
  gpu_row "ctest $tag" "${res:-no result}" $((SECONDS - t0))
}

# The whole suite on this machine's GPUs, then the random generator's identity and the binding
# check. One GPU: every rank count shares it (SPMD_SHARE_GPUS=1; the MPI host-staged path, NCCL
# refuses two ranks on one GPU). Several: the whole suite with ranks spread over the GPUs
# (sharing where ranks outnumber them), then the tests registered at up to one rank per GPU with
# each backend forced. CTEST_ARGS (e.g. -R REGEX, -LE LABEL) go to every ctest run.
gpu_tests() {
  local jobs=${SPMD_CTEST_JOBS:-$(nproc)} maxr=${SPMD_GPU_MAX_RANKS:-4}
  gpu_ctest all SPMD_SHARE_GPUS=1 -- -j "$jobs" "$@"
  if [[ $ngpu -ge 2 ]]; then
    local upto=$((ngpu < 9 ? ngpu : 9))
    for be in nccl mpi; do
      gpu_ctest "np1-${upto}_$be" SPMD_SHARE_GPUS=0 SPMD_BACKEND=$be -- -R "_np[1-$upto]\$" -E "uncaught|consumer" "$@"
    done
  fi
  # The random generator's arrays on this GPU (1-4 ranks), against the record of an H100 run that
  # CPU builds check too (tests/random_identity_h100.json); this run's record comes back.
  local t0=$SECONDS
  (SPMD_SHARE_GPUS=1 python3 "$src/tests/random_identity.py" "$mpiexec" "$build/tests/random_digest" \
     /tmp/spmd-random-identity "$maxr" --record "$out/random-gpu.json" \
     --against "$src/tests/random_identity_h100.json" >"$out/random-identity.log" 2>&1
   echo "exit $?" >>"$out/random-identity.log")
  gpu_log "random identity: $(grep -E 'random_identity: ([0-9]+ arrays|against)' "$out/random-identity.log" |
    tr '\n' ' ') ($(tail -1 "$out/random-identity.log"))"
  gpu_row "random identity" "$(tail -1 "$out/random-identity.log")" $((SECONDS - t0))
  # Sharing is refused without --spmd-share-gpus when ranks outnumber GPUs.
  ("$mpiexec" -n $((ngpu + 1)) "$build/apps/heat" --n 64 --steps 1 >"$out/binding.log" 2>&1
   echo "exit $?" >>"$out/binding.log")
  local seen
  seen=$(grep -m1 -o 'ranks on a node with.*GPUs' "$out/binding.log" || echo 'NO ERROR SEEN')
  gpu_log "binding check: $seen ($(tail -1 "$out/binding.log"))"
  gpu_row "binding check" "$seen, $(tail -1 "$out/binding.log")" 0
}

# The benchmarks, the apps at GPU sizes and the CuPy peers in the same run (for ratios).
#   SPMD_GPU_BENCHES  a subset of "triad reduce halo sparse cg stencil apps numpy cupy" (default all)
#   SPMD_GPU_REPS     repetitions (default 5)
gpu_bench() {
  local b="$build/perf" benches=${SPMD_GPU_BENCHES:-triad reduce halo sparse cg stencil apps numpy cupy}
  local reps=${SPMD_GPU_REPS:-5} np=1 tb=$SECONDS
  [[ $ngpu -ge 2 ]] && np=2
  local common=(--benchmark_repetitions=$reps --benchmark_report_aggregates_only=true --benchmark_out_format=json)
  bench() {  # bench NAME JSON [command...]: one benchmark program, its log and JSON under out
    local name=$1 json=$2 t0=$SECONDS
    shift 2
    if "$@" "${common[@]}" --benchmark_out="$out/$json" >"$out/bench-${json%.json}.log" 2>&1; then
      gpu_row "bench $name" ok $((SECONDS - t0))
    else
      gpu_log "$name failed (exit $?): $(tail -3 "$out/bench-${json%.json}.log" | tr '\n' ' ')"
      gpu_row "bench $name" FAILED $((SECONDS - t0))
    fi
    gpu_log "$name done in $((SECONDS - t0)) s"
  }
  has() { [[ " $benches " == *" $1 "* ]]; }
  run_np() { if [[ $np -gt 1 ]]; then "$mpiexec" -n $np "$@"; else "$@"; fi; }
  has triad && bench triad triad_np1.json "$b/bench_triad"
  has reduce && bench reduce reduce_np1.json "$b/bench_reduce" --benchmark_filter='n:(1024|4096|16384|65536|262144)/'
  if has halo; then
    if [[ $ngpu -ge 2 ]]; then
      for be in mpi nccl; do
        SPMD_BACKEND=$be bench "halo $be" "halo_np2_$be.json" "$mpiexec" -n 2 "$b/bench_halo"
      done
    else
      bench halo halo_np1.json "$b/bench_halo"
    fi
  fi
  # Sparse, CG and stencil: one rank per GPU (the automatic backend: NCCL with 2 GPUs).
  has sparse && bench sparse "sparse_np$np.json" run_np "$b/bench_sparse" --benchmark_filter='BM_spmv(_overlap)?/'
  has cg && bench cg "cg_np$np.json" run_np "$b/bench_cg"
  has stencil && bench stencil "stencil_np$np.json" run_np "$b/bench_stencil"
  if has apps; then
    local a="$build/apps" app tag t0
    for app in "stencil --n 16384 --steps 200 --fast" "stencil --n 16384 --steps 200" \
               "cfd --nx 4096 --ny 4096 --steps 20" \
               "cg_solver --problem poisson2d --n 4096 --tol 1e-12 --max-iters 1000" \
               "cg_solver --problem poisson2d --n 4096 --tol 1e-12 --max-iters 1000 --operator matrix-free" \
               "cg_solver --problem poisson3d --n 256 --tol 1e-12 --max-iters 500"; do
      tag=$(echo "$app" | tr -c 'a-zA-Z0-9\n' '_' | tr -s '_') t0=$SECONDS
      # shellcheck disable=SC2086
      run_np "$a/"$app --json "$out/app_${tag}_np$np.json" >"$out/app-$tag.log" 2>&1 || gpu_log "app $app: exit $?"
      gpu_log "app $app (np $np): $(grep -m3 -E 'points/s|ms/iteration|check' "$out/app-$tag.log" | tr '\n' ' ')"
      gpu_row "app $app" "$(grep -m1 -oE '[0-9.e+]+ [GM]?points/s|[0-9.]+ ms/iteration' "$out/app-$tag.log" || echo '?')" \
        $((SECONDS - t0))
    done
  fi
  if has numpy; then  # broadcast and per-axis sums against triad, sort, swe vs CuPy
    bench broadcast "broadcast_np1.json" "$b/bench_broadcast"
    bench axis_reduce "axis_reduce_np1.json" "$b/bench_axis_reduce"
    bench sort "sort_np1.json" "$b/bench_sort"
    bench reproducible "reproducible_np1.json" "$b/bench_reproducible"
    local n
    for n in 1024 4096; do
      "$build/apps/swe" --n $n --steps 100 --json "$out/app_swe_$n.json" >"$out/app-swe-$n.log" 2>&1 ||
        gpu_log "app swe $n: exit $?"
      gpu_log "app swe --n $n --steps 100: $(grep -m2 -E 'points/s|check' "$out/app-swe-$n.log" | tr '\n' ' ')"
      python3 "$src/perf/peers/numpy_swe.py" --xp cupy --n $n --steps 100 --repeat 3 --json "$out/cupy_swe_$n.json" \
        >"$out/cupy-swe-$n.log" 2>&1 || gpu_log "cupy swe $n: exit $?"
      gpu_log "cupy swe --n $n --steps 100: $(tail -2 "$out/cupy-swe-$n.log" | tr '\n' ' ')"
    done
  fi
  if has cupy; then
    local t0=$SECONDS
    if python3 "$src/perf/peers/cupy_peers.py" --repeat "$reps" --json "$out/cupy.json" >"$out/cupy.log" 2>&1; then
      gpu_row "cupy peers" ok $((SECONDS - t0))
    else
      gpu_log "cupy peers failed (exit $?): $(tail -3 "$out/cupy.log" | tr '\n' ' ')"
      gpu_row "cupy peers" FAILED $((SECONDS - t0))
    fi
    gpu_log "cupy peers done in $((SECONDS - t0)) s"
  fi
  gpu_log "benchmarks done in $((SECONDS - tb)) s"
}

# Packs the logs (logs.tgz) and the JSON (json.tgz); the summary, the JUnit reports and the
# random-identity record stay loose only while few enough files remain (8 come back).
gpu_pack() {
  nvidia-smi -L >>"$out/summary.txt" 2>&1 || true
  (cd "$out" && ls ./*.log >/dev/null 2>&1 && tar -czf logs.tgz --remove-files ./*.log)
  (cd "$out" && ls ./*.json >/dev/null 2>&1 && tar -czf json.tgz --remove-files ./*.json)
  (cd "$out" && ls ./*.xml >/dev/null 2>&1 && tar -czf junit.tgz --remove-files ./*.xml)
  (cd "$out" && ls ./*.ncu-rep >/dev/null 2>&1 && tar -czf ncu.tgz --remove-files ./*.ncu-rep)
  ls "$out"
}

# The rows gathered above, as a table (printed last).
gpu_summary() {
  local r
  printf '\n%-70s | %-40s | %s\n' "step" "result" "s"
  printf '%s\n' "$(printf '%.0s-' {1..120})"
  for r in "${summary_rows[@]}"; do
    IFS='|' read -r a b c <<<"$r"
    printf '%-70s | %-40s | %s\n' "$a" "$b" "$c"
  done
}
