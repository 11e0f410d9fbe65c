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
deps=/tmp/spmd-header-deps
mkdir -p "$deps" && tar -xzf "$root/.carry/header-deps.tgz" -C "$deps"

# -- spmdarray ---------------------------------------------------------------------------------
build=/tmp/spmd-build-cuda
t0=$(date +%s)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" \
  -DCMAKE_PREFIX_PATH="$kokkos;$deps" -DSPMD_ENABLE_NCCL=ON -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_HDF5=OFF \
  -DSPMD_ENABLE_BENCHMARKS=ON -DMPIEXEC_PREFLAGS="--bind-to;none" > "$out/configure.log" 2>&1 ||
  { log "configure failed"; tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build" -j "$jobs" > "$out/build.log" 2>&1 || { log "build failed"; grep -m20 -E "error" "$out/build.log"; exit 1; }
log "built spmdarray (CUDA + NCCL) in $(( $(date +%s) - t0 )) s"

if [[ "$mode" == all || "$mode" == test ]]; then
  # 1 GPU: ranks share it (MPI host-staged path; NCCL refuses two ranks on one GPU).
  # 2+ GPUs: one rank per GPU up to the GPU count.
  share=1; [[ $ngpu -ge 2 ]] && share=0
  maxr=${SPMD_GPU_MAX_RANKS:-4}
  args=(--output-on-failure --timeout 300 --output-junit "$out/ctest-junit.xml")
  if [[ $share == 0 ]]; then args+=(-E "_np([3-9])$"); fi
  (cd "$build" && SPMD_SHARE_GPUS=$share ctest "${args[@]}" 2>&1 | tee "$out/ctest.log" | tail -40) || true
  grep -E "tests passed|tests failed" "$out/ctest.log" | tee -a "$out/summary.txt"
  if [[ $ngpu -ge 2 ]]; then  # also once with the NCCL backend forced
    (cd "$build" && SPMD_BACKEND=nccl ctest --timeout 300 -L np2 -E "uncaught|consumer" 2>&1 | tee "$out/ctest-nccl.log" | tail -15) || true
    echo "NCCL forced, np2: $(grep -E 'tests passed|tests failed' "$out/ctest-nccl.log")" | tee -a "$out/summary.txt"
  fi
  # Sharing refused without --spmd-share-gpus when ranks outnumber GPUs.
  (mpirun -n $((ngpu + 1)) "$build/apps/heat" --n 64 --steps 1 > "$out/binding.log" 2>&1; echo "exit $?" >> "$out/binding.log")
  log "binding check: $(grep -m1 -o 'ranks on a node with.*GPUs' "$out/binding.log" || echo 'NO ERROR SEEN') ($(tail -1 "$out/binding.log"))"
fi

if [[ "$mode" == all || "$mode" == bench ]]; then
  b="$build/perf"
  benches=${SPMD_GPU_BENCHES:-triad reduce halo}   # a subset, e.g. SPMD_GPU_BENCHES=triad
  common=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_out_format=json)
  [[ $benches == *triad* ]] && "$b/bench_triad" "${common[@]}" --benchmark_out="$out/triad_np1.json" > "$out/bench-triad.log" 2>&1
  [[ $benches == *reduce* ]] && "$b/bench_reduce" "${common[@]}" --benchmark_filter='n:(1024|4096|16384|65536|262144)/' \
    --benchmark_out="$out/reduce_np1.json" > "$out/bench-reduce.log" 2>&1
  if [[ $benches != *halo* ]]; then
    :
  elif [[ $ngpu -ge 2 ]]; then
    for be in mpi nccl; do
      SPMD_BACKEND=$be mpirun -n 2 --bind-to none "$b/bench_halo" "${common[@]}" \
        --benchmark_out="$out/halo_np2_$be.json" > "$out/bench-halo-$be.log" 2>&1
    done
  else
    "$b/bench_halo" "${common[@]}" --benchmark_out="$out/halo_np1.json" > "$out/bench-halo.log" 2>&1
  fi
  log "benchmarks done"
fi

# At most 8 files come back from a lent machine: keep the reports, pack the logs.
cat "$out/gpus.txt" >> "$out/summary.txt"
(cd "$out" && tar -czf logs.tgz --remove-files ./*.log gpus.txt 2>/dev/null)
ls "$out"
