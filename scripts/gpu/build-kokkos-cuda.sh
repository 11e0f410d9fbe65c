#!/usr/bin/env bash
# Build patched Kokkos 3.4.1 (CUDA + OpenMP, HOPPER90, CUDA lambdas) and Kokkos Kernels (double /
# int ETI, cuBLAS/cuSPARSE TPLs off) with nvcc_wrapper, into PREFIX. Works here (compile only) and
# on the GPU machines. Idempotent: nothing to do when PREFIX/.complete exists.
# Usage: build-kokkos-cuda.sh SRC_TGZ_OR_DIR PREFIX
#   SRC_TGZ_OR_DIR  a .tgz with kokkos/ and kokkos-kernels/ (scripts/gpu/bundle.sh makes it) or
#                   a folder holding them
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src_in=${1:?usage: build-kokkos-cuda.sh SRC_TGZ_OR_DIR PREFIX}
prefix=${2:?usage: build-kokkos-cuda.sh SRC_TGZ_OR_DIR PREFIX}
jobs=${SPMD_JOBS:-$(nproc)}
log() { printf '[spmd kokkos-cuda] %s\n' "$*" >&2; }
[[ -f "$prefix/.complete" ]] && { log "cached at $prefix"; exit 0; }
export CMAKE_POLICY_VERSION_MINIMUM=3.5   # CMake 4 refuses Kokkos 3.4's old minimum otherwise
work=$(mktemp -d "${TMPDIR:-/tmp}/spmd-kokkos-cuda.XXXXXX")
if [[ -d "$src_in" ]]; then
  cp -r "$src_in/kokkos" "$src_in/kokkos-kernels" "$work/"
else
  tar -xzf "$src_in" -C "$work"
fi
python3 "$here/patch_kokkos.py" "$work/kokkos" >&2
cxx="$work/kokkos/bin/nvcc_wrapper"
common=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_COMPILER="$cxx"
        -DCMAKE_INSTALL_PREFIX="$prefix")
t0=$(date +%s)
log "Kokkos (CUDA + OpenMP, HOPPER90) -> $prefix"
cmake -S "$work/kokkos" -B "$work/b-kokkos" "${common[@]}" -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON \
  -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ARCH_HOPPER90=ON -DKokkos_ENABLE_TESTS=OFF \
  >"$work/kokkos.log" 2>&1 || { tail -40 "$work/kokkos.log" >&2; exit 1; }
cmake --build "$work/b-kokkos" -j "$jobs" >>"$work/kokkos.log" 2>&1 || { tail -40 "$work/kokkos.log" >&2; exit 1; }
cmake --install "$work/b-kokkos" >>"$work/kokkos.log" 2>&1
log "Kokkos done in $(( $(date +%s) - t0 )) s; Kokkos Kernels next"
cmake -S "$work/kokkos-kernels" -B "$work/b-kk" "${common[@]}" -DKokkos_ROOT="$prefix" \
  -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF \
  -DKokkosKernels_INST_DOUBLE=ON -DKokkosKernels_INST_FLOAT=OFF -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF \
  -DKokkosKernels_INST_ORDINAL_INT=ON -DKokkosKernels_INST_ORDINAL_INT64_T=OFF \
  -DKokkosKernels_INST_OFFSET_INT=ON -DKokkosKernels_INST_OFFSET_SIZE_T=OFF \
  -DKokkosKernels_INST_LAYOUTLEFT=ON -DKokkosKernels_INST_LAYOUTRIGHT=OFF \
  -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF \
  -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF \
  -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_CUBLAS=OFF -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF \
  >"$work/kk.log" 2>&1 || { tail -40 "$work/kk.log" >&2; exit 1; }
cmake --build "$work/b-kk" -j "$jobs" >>"$work/kk.log" 2>&1 || { tail -40 "$work/kk.log" >&2; exit 1; }
cmake --install "$work/b-kk" >>"$work/kk.log" 2>&1
touch "$prefix/.complete"
log "Kokkos + Kokkos Kernels (CUDA) installed at $prefix in $(( $(date +%s) - t0 )) s"
rm -rf "$work"
