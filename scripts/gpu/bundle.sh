#!/usr/bin/env bash
# On the CPU machine: prepare .carry/ (git-ignored) for a GPU run (scripts/gpu/run.sh there).
#   .carry/kokkos-src.tgz           Kokkos + Kokkos Kernels 3.4.1 sources (unpatched; ~3.5 MB)
#   .carry/kokkos-cuda-install.tgz  the patched CUDA/Hopper Kokkos install, when one was built
#                                   here or brought back from an earlier GPU run (skips the build)
#   .carry/header-deps.tgz          CLI11, nlohmann_json and Random123 (header-only; not on the GPU
#                                   image; run.sh puts them on CMAKE_PREFIX_PATH)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
root=$SPMD_ROOT
cache=${SPMD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/spmdarray}
carry="$root/.carry"
mkdir -p "$carry"
"$root/scripts/fetch-kokkos-source.sh" "$cache/src" --tgz "$carry/kokkos-src.tgz"
install=$(spmd_cuda_kokkos_prefix)
if [[ -f "$install/.complete" ]]; then
  tar -czf "$carry/kokkos-cuda-install.tgz" -C "$install" .
  echo "[spmd bundle] CUDA Kokkos install: $(du -h "$carry/kokkos-cuda-install.tgz" | cut -f1)" >&2
else
  rm -f "$carry/kokkos-cuda-install.tgz"
  echo "[spmd bundle] no CUDA Kokkos install at $install (run scripts/cuda-build.sh first);" \
       "the GPU machine will build one" >&2
fi
tmp=$(mktemp -d)
mkdir -p "$tmp/include" "$tmp/share/cmake"
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/Random123 "$tmp/include/"
cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$tmp/share/cmake/"
tar -czf "$carry/header-deps.tgz" -C "$tmp" include share
rm -rf "$tmp"
du -sh "$carry"/* >&2
