#!/usr/bin/env bash
# On a GPU machine (H100/H200, Ubuntu, CUDA 13, Open MPI 4.1 not CUDA-aware, NCCL), the fallback
# that builds there: unpack the carried CUDA Kokkos 4.6 install (or build it from the carried
# archives), build spmdarray with CUDA + NCCL (HDF5 off: the image has no parallel HDF5), run the
# test and benchmark steps of gpu-lib.sh, and write logs + reports under OUT (default ./gpu-out).
# The lent machines have 4 cores: the whole build takes about 7 minutes there, the Kokkos Kernels
# build more than 9. scripts/gpu/run-carried.sh runs binaries built on the CPU machine instead.
#   scripts/gpu/run.sh [all|kokkos|test|bench] [CTEST_ARGS...]     (default all)
# Needs .carry/ from scripts/gpu/bundle.sh. Environment: OUT, SPMD_JOBS, SPMD_GPU_TARGETS (build
# only these targets), SPMD_GPU_BENCHMARKS=OFF (configure without the benchmarks), and those of
# gpu-lib.sh (SPMD_GPU_BENCHES, SPMD_GPU_REPS, SPMD_CTEST_JOBS).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${OUT:-$root/gpu-out}
mode=${1:-all}
shift || true
mkdir -p "$out"
jobs=${SPMD_JOBS:-$(nproc)}
dev=/tmp/spmd-gpu   # Kokkos, the header-only dependencies, the launcher wrappers, the build
src=$root build=$dev/build mpiexec=$dev/bin/mpiexec
source "$root/scripts/gpu/gpu-lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} OMP_PROC_BIND=false
gpu_write_bin "$dev" "$(command -v mpiexec || command -v mpirun)" "$(command -v python3)"
gpu_log "$(nvidia-smi -L | head -1), $ngpu GPU(s), $(nproc) cores, $(cmake --version | head -1), $(mpirun --version 2>&1 | head -1)"
t_all=$SECONDS

# -- Kokkos 4.6 for CUDA ----------------------------------------------------------------------------
kokkos=$dev/kokkos
t0=$SECONDS
if [[ -f "$root/.carry/kokkos-cuda-install.tgz" ]]; then
  rm -rf "$kokkos" && mkdir -p "$kokkos" && tar -xzf "$root/.carry/kokkos-cuda-install.tgz" -C "$kokkos"
  gpu_log "unpacked the carried CUDA Kokkos install"
else
  "$root/scripts/build-kokkos46.sh" cuda "$root/.carry/deps" "$kokkos" 2>&1 | tee -a "$out/kokkos-build.log" >&2
  [[ -f $kokkos/.complete ]] || { gpu_log "the Kokkos build failed"; gpu_pack; exit 1; }
  gpu_log "built CUDA Kokkos + Kokkos Kernels in $((SECONDS - t0)) s"
  tar -czf "$out/kokkos-cuda-install.tgz" -C "$kokkos" . && gpu_log "packed install: $(du -h "$out/kokkos-cuda-install.tgz" | cut -f1)"
fi
gpu_row "Kokkos 4.6 (CUDA)" ok $((SECONDS - t0))
[[ "$mode" == kokkos ]] && { gpu_pack; gpu_summary; exit 0; }
deps=$dev/header-deps  # CLI11, nlohmann_json, Random123 (scripts/gpu/bundle.sh)
mkdir -p "$deps" && tar -xzf "$root/.carry/header-deps.tgz" -C "$deps"

# -- spmdarray ----------------------------------------------------------------------------------------
t0=$SECONDS
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" \
  -DCMAKE_PREFIX_PATH="$kokkos;$deps" -DRandom123_ROOT="$deps" -DSPMD_ENABLE_NCCL=ON -DSPMD_ENABLE_TESTS=ON \
  -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_HDF5=OFF -DSPMD_ENABLE_BENCHMARKS="${SPMD_GPU_BENCHMARKS:-ON}" \
  -DSPMD_PYTHON="$dev/bin/python3" -DMPIEXEC_EXECUTABLE="$mpiexec" >"$out/configure.log" 2>&1 ||
  { gpu_log "configure failed"; tail -30 "$out/configure.log"; gpu_pack; exit 1; }
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" ${SPMD_GPU_TARGETS:+--target $SPMD_GPU_TARGETS} >"$out/build.log" 2>&1 ||
  { gpu_log "build failed"; grep -m20 -E "error" "$out/build.log"; gpu_pack; exit 1; }
gpu_log "built spmdarray (CUDA + NCCL) in $((SECONDS - t0)) s"
gpu_row "spmdarray build" ok $((SECONDS - t0))

[[ "$mode" == all || "$mode" == test ]] && gpu_tests "$@"
[[ "$mode" == all || "$mode" == bench ]] && gpu_bench
gpu_row "total" "" $((SECONDS - t_all))
gpu_pack
gpu_summary
