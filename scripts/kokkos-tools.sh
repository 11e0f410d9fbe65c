#!/usr/bin/env bash
# Builds two Kokkos Tools connectors (docs/profiling.md) and prints where they are:
#   kp_kernel_timer.so + kp_reader   the simple kernel timer (per kernel and region: calls, time)
#   kp_space_time_stack.so           the space-time stack (regions and kernels as a tree, with
#                                    MPI: min/max over ranks; memory high-water marks)
#   kp_nvtx_connector.so             only where the CUDA toolkit's NVTX 3 headers are found
#                                    (${CUDA_ROOT:-/usr/local/cuda}/include/nvtx3): regions and
#                                    kernels as NVTX ranges for nsys and ncu (header-only NVTX, so
#                                    it runs on any machine with the same C++ runtime)
# from the Kokkos Tools source archive in ${SPMD_DEPS_DIR:-<repo>/../shared/deps}
# (kokkos-tools.tar.gz, checked against SHA256SUMS), into a cache prefix outside the clone, keyed
# by the archive's checksum and the compilers:
#   ${SPMD_CACHE_DIR:-~/.cache/spmdarray}/kokkos-tools-<key>
# A second run finds them there and builds nothing (a build takes about a minute on 2 cores).
# The tools are plain shared libraries loaded by any Kokkos 3.x or 4.x at start-up:
#   KOKKOS_TOOLS_LIBS=<prefix>/kp_kernel_timer.so mpiexec -n 2 ./cfd ...   (Kokkos 4; 3.x reads
#   KOKKOS_PROFILE_LIBRARY; set both)
# Usage: ./scripts/kokkos-tools.sh      (last line of output: SPMD_KOKKOS_TOOLS=<prefix>)
set -euo pipefail
SPMD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[spmd kokkos-tools] %s\n' "$*" >&2; }

deps=${SPMD_DEPS_DIR:-$SPMD_ROOT/../shared/deps}
tar=kokkos-tools.tar.gz
if [[ ! -f "$deps/$tar" || ! -f "$deps/SHA256SUMS" ]]; then
  log "needs $tar and SHA256SUMS in the deps folder '$deps' (set SPMD_DEPS_DIR); not found"
  exit 1
fi
deps=$(cd "$deps" && pwd)
sum=$(grep -E " \*?$tar\$" "$deps/SHA256SUMS") || { log "SHA256SUMS does not list $tar"; exit 1; }
(cd "$deps" && sha256sum --quiet -c - <<<"$sum") || { log "checksum mismatch of $deps/$tar"; exit 1; }

cxx=${CXX:-g++}
mpicxx=${SPMD_MPICXX:-$(command -v mpicxx.mpich || command -v mpicxx)}
cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
nvtx=${CUDA_ROOT:-/usr/local/cuda}/include/nvtx3
[[ -f "$nvtx/nvToolsExt.h" ]] || nvtx=""
key=$( (echo "$sum $nvtx"; "$cxx" --version | head -1; "$mpicxx" -show; cat "${BASH_SOURCE[0]}") | sha1sum |
       cut -c1-10)
prefix=$cache/kokkos-tools-$key
if [[ -f "$prefix/.complete" ]]; then
  log "cached at $prefix"
  echo "SPMD_KOKKOS_TOOLS=$prefix"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$deps/$tar" -C "$work"
src=$work/kokkos-tools
mkdir -p "$work/out"
t0=$(date +%s)
log "building the simple kernel timer ($cxx)"
make -s -C "$work/out" -f "$src/profiling/simple-kernel-timer/Makefile" CXX="$cxx" kp_kernel_timer.so kp_reader
log "building the space-time stack ($mpicxx, MPI on: min/max over ranks)"
# USE_MPI=1: min/max over ranks and one report, from rank 0 (the Makefile leaves it undefined: off).
make -s -C "$work/out" -f "$src/profiling/space-time-stack/Makefile" CXX="$mpicxx -DUSE_MPI=1"
if [[ -n "$nvtx" ]]; then
  log "building the NVTX connector (NVTX 3 headers from $nvtx)"
  "$cxx" -shared -fPIC -O2 -std=c++17 -I"$nvtx" -I"$src/profiling/all" -I"$src/common/makefile-only" \
    -I"$src/common" -o "$work/out/kp_nvtx_connector.so" "$src/profiling/nvtx-connector/kp_nvtx_connector.cpp" -ldl
fi
log "built in $(($(date +%s) - t0)) s"
rm -rf "$prefix"
mkdir -p "$(dirname "$prefix")"
cp -r "$work/out" "$prefix.tmp.$$"
touch "$prefix.tmp.$$/.complete"
mv "$prefix.tmp.$$" "$prefix"
log "installed into $prefix"
echo "SPMD_KOKKOS_TOOLS=$prefix"
