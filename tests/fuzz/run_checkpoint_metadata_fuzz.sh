#!/usr/bin/env bash
# Build the libFuzzer harness of the checkpoint metadata validator (checkpoint_metadata_fuzz.cpp,
# with src/io/metadata.cpp; clang-14, AddressSanitizer + UndefinedBehaviorSanitizer) and run it
# for a bounded time from the seed corpus checkpoint_metadata_corpus/ (the corpus in git is not
# changed: new inputs go to the build folder). A crash fails the script and its input is copied to
# checkpoint_metadata_regressions/: commit it with the fix; test_io replays every file there
# (IoMetadata.FuzzCorpusAndRegressions).
#
#   tests/fuzz/run_checkpoint_metadata_fuzz.sh [SECONDS (60)] [BUILD_DIR (build-fuzz)]
#
# Needs clang-14 and libclang-rt-14-dev (Debian); as root in CI it installs them when missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here=$root/tests/fuzz
seconds=${1:-60}
out=${2:-${SPMD_FUZZ_BUILD_DIR:-$root/build-fuzz}}
cxx=${SPMD_FUZZ_CXX:-clang++-14}

if ! command -v "$cxx" >/dev/null || [[ ! -e $("$cxx" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null) ]]; then
  if [[ ${CI:-} == true && $(id -u) == 0 ]]; then
    apt-get install -y --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
  else
    echo "run_checkpoint_metadata_fuzz.sh: needs $cxx with libFuzzer: apt-get install clang-14 libclang-rt-14-dev" >&2
    exit 1
  fi
fi
# spmd/error.hpp includes <mpi.h> (nothing of MPI is linked).
mpi_inc=$(pkg-config --cflags-only-I mpich 2>/dev/null || echo "-I/usr/include/x86_64-linux-gnu/mpich")

mkdir -p "$out/corpus" "$out/artifacts"
exe=$out/checkpoint_metadata_fuzz
echo "[fuzz] building $exe"
# shellcheck disable=SC2086
"$cxx" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root/include" $mpi_inc -o "$exe" "$here/checkpoint_metadata_fuzz.cpp" "$root/src/io/metadata.cpp"

echo "[fuzz] running for ${seconds} s from $(ls "$here/checkpoint_metadata_corpus" | wc -l) seeds"
status=0
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$exe" -max_total_time="$seconds" -use_value_profile=1 -timeout=10 \
  -rss_limit_mb=2048 -max_len=4096 -dict="$here/checkpoint_metadata.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
  "$out/corpus" "$here/checkpoint_metadata_corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "DONE|stat::|ERROR|SUMMARY|Test unit written|^Done" || true
status=${PIPESTATUS[0]}
shopt -s nullglob
crashes=("$out"/artifacts/*)
if ((${#crashes[@]})); then
  mkdir -p "$here/checkpoint_metadata_regressions"
  for c in "${crashes[@]}"; do cp "$c" "$here/checkpoint_metadata_regressions/$(basename "$c").txt"; done
  echo "[fuzz] ${#crashes[@]} crashing input(s) copied to tests/fuzz/checkpoint_metadata_regressions/ (see $out/fuzz.log)" >&2
  exit 1
fi
if ((status != 0)); then
  echo "[fuzz] the fuzzer exited with $status (see $out/fuzz.log)" >&2
  exit "$status"
fi
echo "[fuzz] no crash in ${seconds} s: $(grep -E '^Done' "$out/fuzz.log" | tail -1)"
