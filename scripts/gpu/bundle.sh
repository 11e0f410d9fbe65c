#!/usr/bin/env bash
# On the CPU machine: prepare .carry/ (git-ignored) for the fallback that builds on a GPU machine
# (scripts/gpu/run.sh there). scripts/gpu/device-build.sh prepares the usual route instead
# (binaries built here, run by run-carried.sh there).
#   .carry/deps/                    the Kokkos 4.6.01 and Kokkos Kernels 4.6.02 archives and
#                                   SHA256SUMS (from ../shared/deps; ~6 MB)
#   .carry/kokkos-cuda-install.tgz  the CUDA Kokkos 4.6 install, when one was built here
#                                   (scripts/cuda-build.sh) or brought back from a GPU run (skips
#                                   the build there)
#   .carry/header-deps.tgz          CLI11, nlohmann_json and Random123 (header-only; not on the GPU
#                                   image; run.sh puts them on CMAKE_PREFIX_PATH)
# Usage: scripts/gpu/bundle.sh [CARRY]   (default <repo>/.carry)
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
carry=${1:-$SPMD_ROOT/.carry}
mkdir -p "$carry/deps"
deps=$(spmd_k46_deps) || { spmd_k46_skip "the Kokkos 4.6 archives for the GPU machine"; exit 1; }
cp "$deps/kokkos-4.6.01.tar.gz" "$deps/kokkos-kernels-4.6.02.tar.gz" "$carry/deps/"
grep -E ' \*?kokkos(-kernels)?-4\.6\.0[12]\.tar\.gz$' "$deps/SHA256SUMS" >"$carry/deps/SHA256SUMS"
install=$(spmd_k46_prefix cuda)
if [[ -f "$install/.complete" ]]; then
  tar -czf "$carry/kokkos-cuda-install.tgz" -C "$install" .
  spmd_log "CUDA Kokkos install: $(du -h "$carry/kokkos-cuda-install.tgz" | cut -f1)"
else
  rm -f "$carry/kokkos-cuda-install.tgz"
  spmd_log "no CUDA Kokkos install at $install (scripts/cuda-build.sh builds it); the GPU machine will build one"
fi
tmp=$(mktemp -d)
mkdir -p "$tmp/include" "$tmp/share/cmake"
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/Random123 "$tmp/include/"
cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$tmp/share/cmake/"
tar -czf "$carry/header-deps.tgz" -C "$tmp" include share
rm -rf "$tmp"
du -sh "$carry"/* >&2
