#!/usr/bin/env bash
# Build (compile + link, no run) the CUDA variant of spmdarray on a machine with nvcc but maybe
# no GPU: patched Kokkos 3.4.1 + Kokkos Kernels for CUDA (Hopper) cached under
# ~/.cache/spmdarray/, then every target with CUDA + NCCL. Skipped when nvcc is absent.
#   ./scripts/cuda-build.sh          (build dir: SPMD_CUDA_BUILD_DIR, default ./build-cuda;
#                                     SPMD_CUDA_BENCHMARKS=OFF leaves out the benchmarks)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
if ! command -v nvcc >/dev/null; then
  spmd_log "nvcc not found: skipping the CUDA build"
  exit 0
fi
cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
"$SPMD_ROOT/scripts/setup.sh" >/dev/null   # Debian packages and the Kokkos source
"$SPMD_ROOT/scripts/fetch-kokkos-source.sh" "$cache/src"
prefix=$(spmd_cuda_kokkos_prefix)
"$SPMD_ROOT/scripts/gpu/build-kokkos-cuda.sh" "$cache/src" "$prefix"
build=${SPMD_CUDA_BUILD_DIR:-$SPMD_ROOT/build-cuda}
mpicxx=$(command -v mpicxx.mpich || command -v mpicxx)
export CMAKE_POLICY_VERSION_MINIMUM=3.5
spmd_log "configuring the CUDA build in $build"
cmake -S "$SPMD_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" \
  -DCMAKE_PREFIX_PATH="$prefix" -DMPI_CXX_COMPILER="$mpicxx" -DSPMD_ENABLE_NCCL=ON -DSPMD_ENABLE_TESTS=ON \
  -DSPMD_ENABLE_APPS=ON -DSPMD_ENABLE_BENCHMARKS="${SPMD_CUDA_BENCHMARKS:-ON}" $(spmd_hdf5_flag) >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log" >&2; exit 1; }
spmd_log "building every target for CUDA (log: $build.build.log)"
cmake --build "$build" -j "${SPMD_JOBS:-$(nproc)}" >"$build.build.log" 2>&1 || { grep -m30 -B2 -A3 error "$build.build.log" >&2; exit 1; }
spmd_log "CUDA build ok: $(find "$build" -maxdepth 3 -type f -executable -name 'test_*' | wc -l) test programs linked"
