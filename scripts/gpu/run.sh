#!/usr/bin/env bash
# On a GPU machine (H100/H200, Ubuntu, CUDA 13, Open MPI 4.1 not CUDA-aware, NCCL): build the
# patched Kokkos (or unpack the carried install), build spmdarray with CUDA + NCCL, run ctest and
# the GPU benchmarks, and write logs + reports under OUT (default ./gpu-out).
#   scripts/gpu/run.sh [all|kokkos|test|bench]     (default all)
# Needs .carry/ from scripts/gpu/bundle.sh. Environment: OUT, SPMD_JOBS.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/gpu-out}
mode=${1:-all}
mkdir -p "$out"
jobs=${SPMD_JOBS:-$(nproc)}
log() { printf '[spmd gpu %s] %s\n' "$(date +%T)" "$*" | tee -a "$out/summary.txt" >&2; }
export CMAKE_POLICY_VERSION_MINIMUM=3.5 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} OMP_PROC_BIND=false
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi -L > "$out/gpus.txt" 2>&1
log "$(head -1 "$out/gpus.txt"), $ngpu GPU(s), $(nproc) cores, $(cmake --version | head -1), $(mpirun --version 2>&1 | head -1)"

# -- Kokkos ------------------------------------------------------------------------------------
kokkos=/tmp/spmd-kokkos-cuda
if [[ -f "$root/.carry/kokkos-cuda-install.tgz" ]]; then
  mkdir -p "$kokkos" && tar -xzf "$root/.carry/kokkos-cuda-install.tgz" -C "$kokkos"
  # Its CMake export names CUDA libraries by absolute path as found where it was built: point
  # them at this machine's copies.
  cudart=$(find /usr/local/cuda/ -name 'libcudart.so' 2>/dev/null | head -1)
  stub=$(find /usr/local/cuda/ -path '*stubs/libcuda.so' 2>/dev/null | head -1)
  for f in "$kokkos"/lib*/cmake/Kokkos/*.cmake; do
    sed -i -E "s#/usr/local/cuda[^\";]*/libcudart\.so#${cudart}#g; s#/usr/local/cuda[^\";]*/stubs/libcuda\.so#${stub}#g" "$f"
  done
  log "unpacked the carried CUDA Kokkos install (cudart: $cudart, driver stub: $stub)"
else
  t0=$(date +%s)
  "$root/scripts/gpu/build-kokkos-cuda.sh" "$root/.carry/kokkos-src.tgz" "$kokkos" 2>&1 | tee -a "$out/kokkos-build.log" >&2
  log "built CUDA Kokkos + Kokkos Kernels in $(( $(date +%s) - t0 )) s"
  tar -czf "$out/kokkos-cuda-install.tgz" -C "$kokkos" . && log "packed install: $(du -h "$out/kokkos-cuda-install.tgz" | cut -f1)"
fi
[[ "$mode" == kokkos ]] && exit 0
deps=/tmp/spmd-header-deps  # CLI11, nlohmann_json, Random123 (scripts/gpu/bundle.sh)
mkdir -p "$deps" && tar -xzf "$root/.carry/header-deps.tgz" -C "$deps"

# -- spmdarray ---------------------------------------------------------------------------------
build=/tmp/spmd-build-cuda
# SPMD_GPU_BENCHMARKS=OFF: configure without the benchmarks (a test-only run builds faster).
t0=$(date +%s)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" \
  -DCMAKE_PREFIX_PATH="$kokkos;$deps" -DRandom123_ROOT="$deps" -DSPMD_ENABLE_NCCL=ON -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_HDF5=OFF \
  -DSPMD_ENABLE_BENCHMARKS=${SPMD_GPU_BENCHMARKS:-ON} -DSPMD_PYTHON="$(command -v python3)" -DMPIEXEC_PREFLAGS="--bind-to;none" > "$out/configure.log" 2>&1 ||
  { log "configure failed"; tail -30 "$out/configure.log"; exit 1; }
# SPMD_GPU_TARGETS: build only these targets (e.g. the benchmarks and apps for a bench run).
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" ${SPMD_GPU_TARGETS:+--target $SPMD_GPU_TARGETS} > "$out/build.log" 2>&1 || { log "build failed"; grep -m20 -E "error" "$out/build.log"; exit 1; }
log "built spmdarray (CUDA + NCCL) in $(( $(date +%s) - t0 )) s"

if [[ "$mode" == all || "$mode" == test ]]; then
  # 1 GPU: ranks share it (MPI host-staged path; NCCL refuses two ranks on one GPU).
  # 2+ GPUs: one rank per GPU up to the GPU count.
  share=1; [[ $ngpu -ge 2 ]] && share=0
  maxr=${SPMD_GPU_MAX_RANKS:-4}
  args=(--output-on-failure --timeout 300 --output-junit "$out/ctest-junit.xml")
  # SPMD_GPU_TESTS: only the tests this regex matches (with SPMD_GPU_TARGETS, a quick re-run).
  if [[ -n "${SPMD_GPU_TESTS:-}" ]]; then args+=(-R "$SPMD_GPU_TESTS"); fi
  if [[ $share == 0 ]]; then args+=(-E "_np([3-9])$"); fi
  (cd "$build" && SPMD_SHARE_GPUS=$share ctest "${args[@]}" 2>&1 | tee "$out/ctest.log" | tail -40) || true
  grep -E "tests passed|tests failed" "$out/ctest.log" | tee -a "$out/summary.txt"
  if [[ $ngpu -ge 2 ]]; then  # also once with the NCCL backend forced
    (cd "$build" && SPMD_BACKEND=nccl ctest --timeout 300 -L np2 -E "uncaught|consumer" 2>&1 | tee "$out/ctest-nccl.log" | tail -15) || true
    echo "NCCL forced, np2: $(grep -E 'tests passed|tests failed' "$out/ctest-nccl.log")" | tee -a "$out/summary.txt"
  fi
  # The random generator's arrays on this GPU (1-4 ranks sharing it when there is one), against
  # the record of an H100 run that CPU builds check too (tests/random_identity_h100.json); the
  # record of this run comes back.
  (SPMD_SHARE_GPUS=$share python3 "$root/tests/random_identity.py" mpirun "$build/tests/random_digest" \
     /tmp/spmd-random-identity "$maxr" "--preflags=--bind-to;none" --record "$out/random-gpu.json" \
     --against "$root/tests/random_identity_h100.json" > "$out/random-identity.log" 2>&1; echo "exit $?" >> "$out/random-identity.log")
  log "random identity: $(grep -E 'random_identity: ([0-9]+ arrays|against)' "$out/random-identity.log" | tr '\n' ' ') ($(tail -1 "$out/random-identity.log"))"
  # Sharing refused without --spmd-share-gpus when ranks outnumber GPUs.
  (mpirun -n $((ngpu + 1)) "$build/apps/heat" --n 64 --steps 1 > "$out/binding.log" 2>&1; echo "exit $?" >> "$out/binding.log")
  log "binding check: $(grep -m1 -o 'ranks on a node with.*GPUs' "$out/binding.log" || echo 'NO ERROR SEEN') ($(tail -1 "$out/binding.log"))"
fi

if [[ "$mode" == all || "$mode" == bench ]]; then
  b="$build/perf"
  # A subset, e.g. SPMD_GPU_BENCHES="triad cg"; "apps" runs stencil, cfd and cg_solver at GPU sizes;
  # "numpy" the broadcast, per-axis sum, sort and reproducible-sum benchmarks and swe against CuPy;
  # "cupy" runs the CuPy peers (perf/peers/cupy_peers.py) in the same run, for ratios.
  benches=${SPMD_GPU_BENCHES:-triad reduce halo sparse cg stencil apps numpy cupy}
  reps=${SPMD_GPU_REPS:-5}
  common=(--benchmark_repetitions=$reps --benchmark_report_aggregates_only=true --benchmark_out_format=json)
  bench() {  # bench NAME JSON [args...]: one benchmark program, its log and JSON under OUT
    local name=$1 json=$2; shift 2
    local t0=$(date +%s)
    "$@" "${common[@]}" --benchmark_out="$out/$json" > "$out/bench-${json%.json}.log" 2>&1 ||
      log "$name failed (exit $?): $(tail -3 "$out/bench-${json%.json}.log" | tr '\n' ' ')"
    log "$name done in $(( $(date +%s) - t0 )) s"
  }
  has() { [[ " $benches " == *" $1 "* ]]; }
  has triad && bench triad triad_np1.json "$b/bench_triad"
  has reduce && bench reduce reduce_np1.json "$b/bench_reduce" --benchmark_filter='n:(1024|4096|16384|65536|262144)/'
  if has halo; then
    if [[ $ngpu -ge 2 ]]; then
      for be in mpi nccl; do
        SPMD_BACKEND=$be bench "halo $be" "halo_np2_$be.json" mpirun -n 2 --bind-to none "$b/bench_halo"
      done
    else
      bench halo halo_np1.json "$b/bench_halo"
    fi
  fi
  # Sparse, CG and stencil: one rank per GPU (the automatic backend: NCCL with 2 GPUs).
  np=1; [[ $ngpu -ge 2 ]] && np=2
  run_np() { if [[ $np -gt 1 ]]; then mpirun -n $np --bind-to none "$@"; else "$@"; fi; }
  has sparse && bench sparse "sparse_np$np.json" run_np "$b/bench_sparse" --benchmark_filter='BM_spmv(_overlap)?/'
  has cg && bench cg "cg_np$np.json" run_np "$b/bench_cg"
  has stencil && bench stencil "stencil_np$np.json" run_np "$b/bench_stencil"
  if has apps; then
    a="$build/apps"
    for app in "stencil --n 16384 --steps 200 --fast" "stencil --n 16384 --steps 200" \
               "cfd --nx 4096 --ny 4096 --steps 20" \
               "cg_solver --problem poisson2d --n 4096 --tol 1e-12 --max-iters 1000" \
               "cg_solver --problem poisson2d --n 4096 --tol 1e-12 --max-iters 1000 --operator matrix-free" \
               "cg_solver --problem poisson3d --n 256 --tol 1e-12 --max-iters 500"; do
      tag=$(echo "$app" | tr -c 'a-zA-Z0-9\n' '_' | tr -s '_')
      # shellcheck disable=SC2086
      run_np "$a/"$app --json "$out/app_${tag}_np$np.json" > "$out/app-$tag.log" 2>&1 || log "app $app: exit $?"
      log "app $app (np $np): $(grep -m3 -E 'points/s|ms/iteration|check' "$out/app-$tag.log" | tr '\n' ' ')"
    done
  fi
  if has numpy; then  # issue 14's benchmarks: broadcast and per-axis sums against triad, sort, swe vs CuPy
    bench broadcast "broadcast_np1.json" "$b/bench_broadcast"
    bench axis_reduce "axis_reduce_np1.json" "$b/bench_axis_reduce"
    bench sort "sort_np1.json" "$b/bench_sort"
    bench reproducible "reproducible_np1.json" "$b/bench_reproducible"
    for n in 1024 4096; do
      "$build/apps/swe" --n $n --steps 100 --json "$out/app_swe_$n.json" > "$out/app-swe-$n.log" 2>&1 || log "app swe $n: exit $?"
      log "app swe --n $n --steps 100: $(grep -m2 -E 'points/s|check' "$out/app-swe-$n.log" | tr '\n' ' ')"
      python3 "$root/perf/peers/numpy_swe.py" --xp cupy --n $n --steps 100 --repeat 3 --json "$out/cupy_swe_$n.json" \
        > "$out/cupy-swe-$n.log" 2>&1 || log "cupy swe $n: exit $?"
      log "cupy swe --n $n --steps 100: $(tail -2 "$out/cupy-swe-$n.log" | tr '\n' ' ')"
    done
  fi
  if has cupy; then
    t0=$(date +%s)
    python3 "$root/perf/peers/cupy_peers.py" --repeat "$reps" --json "$out/cupy.json" > "$out/cupy.log" 2>&1 ||
      log "cupy peers failed (exit $?): $(tail -3 "$out/cupy.log" | tr '\n' ' ')"
    log "cupy peers done in $(( $(date +%s) - t0 )) s"
  fi
  log "benchmarks done"
fi

# At most 8 files come back from a lent machine: keep the reports, pack the logs.
cat "$out/gpus.txt" >> "$out/summary.txt"
(cd "$out" && tar -czf logs.tgz --remove-files ./*.log gpus.txt 2>/dev/null)
(cd "$out" && ls ./*.json > /dev/null 2>&1 && tar -czf json.tgz --remove-files ./*.json)
ls "$out"
