#!/usr/bin/env bash
# Fetch the Kokkos and Kokkos Kernels sources (3.4.1, from Debian's trilinos 13.2.0 source
# package) and extract just those two folders into DEST/{kokkos,kokkos-kernels}.
# Idempotent: does nothing when DEST/.complete exists. Needs root for the deb-src entry.
# Usage: fetch-kokkos-source.sh DEST [--tgz FILE]   (--tgz also packs the two folders)
set -euo pipefail
dest=${1:?usage: fetch-kokkos-source.sh DEST [--tgz FILE]}
tgz=""
[[ "${2:-}" == --tgz ]] && tgz=${3:?--tgz needs a file}
log() { printf '[spmd fetch] %s\n' "$*" >&2; }
if [[ ! -f "$dest/.complete" ]]; then
  dl=$(dirname "$dest")/download
  mkdir -p "$dl"
  orig=$(ls "$dl"/trilinos_13.2.0*.orig.tar.* 2>/dev/null | head -1 || true)
  if [[ -z "$orig" ]]; then
    srcfile=/etc/apt/sources.list.d/spmdarray-deb-src.sources
    if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
      [[ $(id -u) -eq 0 ]] || { log "need root to add a deb-src entry"; exit 1; }
      base=/etc/apt/sources.list.d/debian.sources
      log "adding deb-src entry $srcfile (from $base)"
      # Same URIs/Suites/Components/Signed-By as the first (main archive) entry.
      awk 'BEGIN{RS=""; ORS="\n\n"} NR==1{sub(/Types: *deb/,"Types: deb-src"); print}' "$base" >"$srcfile"
      apt-get update -qq
    fi
    log "downloading Debian's trilinos source (166 MB)"
    (cd "$dl" && apt-get source --download-only -qq trilinos >&2)
    orig=$(ls "$dl"/trilinos_13.2.0*.orig.tar.* | head -1)
  fi
  rm -rf "$dest"; mkdir -p "$dest"
  log "extracting kokkos and kokkos-kernels from $(basename "$orig")"
  tar -xf "$orig" -C "$dest" --wildcards '*/packages/kokkos/*' '*/packages/kokkos-kernels/*'
  top=$(ls "$dest")
  mv "$dest/$top/packages/kokkos" "$dest/kokkos"
  mv "$dest/$top/packages/kokkos-kernels" "$dest/kokkos-kernels"
  rm -rf "${dest:?}/$top"
  touch "$dest/.complete"
fi
if [[ -n "$tgz" ]]; then
  tar -czf "$tgz" -C "$dest" kokkos kokkos-kernels
  log "packed $(du -h "$tgz" | cut -f1) into $tgz"
fi
