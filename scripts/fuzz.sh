#!/usr/bin/env bash
# libFuzzer runs of the parsers that read external input: each harness tests/fuzz/fuzz_<name>.cpp
# is built with Debian's clang (-fsanitize=fuzzer,address,undefined) against its parser's pure
# sources alone (no MPI, no Kokkos) and run for a bounded time from its seed corpus
# (tests/fuzz/corpus/<name>/) and the inputs that once failed (tests/fuzz/regressions/<name>/).
# A crash, a sanitizer finding or a failed property stops the run and fails this script; the input
# is left in <build>/artifacts/. Turn it into a regression test by fixing the parser and copying
# the input to tests/fuzz/regressions/<name>/ (ctest's fuzz_replay_<name> replays that folder).
#
# Usage: ./scripts/fuzz.sh [name...]     (default: every harness)
# Environment:
#   SPMD_FUZZ_SECONDS    time per harness (default 60)
#   SPMD_FUZZ_BUILD_DIR  build folder (default: <repo>/build-fuzz)
#   SPMD_SKIP_APT=1      do not install clang / compiler-rt when missing
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SPMD_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${SPMD_FUZZ_SECONDS:-60}
log() { printf '[spmd fuzz] %s\n' "$*" >&2; }

# Each harness and the parser sources it links (pure C++: no MPI, no Kokkos).
declare -A sources=(
  [matrix_market]="src/sparse/matrix_market_parse.cpp"
)
names=("$@")
((${#names[@]})) || names=("${!sources[@]}")

# clang 14 and its compiler-rt (libFuzzer and the sanitizer runtimes) from Debian.
pkgs=(clang-14 libclang-rt-14-dev)
if [[ "${SPMD_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
      log "installing Debian packages: ${missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    else
      log "missing Debian packages; run as root:  apt-get install -y ${missing[*]}"
      exit 1
    fi
  fi
fi
cxx=$(command -v clang++-14 || command -v clang++)

mkdir -p "$build/artifacts"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
for name in "${names[@]}"; do
  [[ -n "${sources[$name]:-}" ]] || { log "unknown harness '$name' (known: ${!sources[*]})"; exit 2; }
  exe=$build/fuzz_$name
  log "building $exe"
  # shellcheck disable=SC2086
  (cd "$root" && "$cxx" -std=c++17 -g -O1 -Wall -Wextra -fsanitize=fuzzer,address,undefined \
     -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Isrc/sparse \
     "tests/fuzz/fuzz_$name.cpp" ${sources[$name]} -o "$exe")
  corpus=$build/corpus-$name  # grows from run to run on the same machine; seeds are read-only
  mkdir -p "$corpus"
  dict=()
  [[ -f "$root/tests/fuzz/$name.dict" ]] && dict=(-dict="$root/tests/fuzz/$name.dict")
  log "fuzzing $name for ${seconds}s"
  "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name-" "${dict[@]}" \
    "$corpus" "$root/tests/fuzz/corpus/$name" "$root/tests/fuzz/regressions/$name" 2>"$build/$name.log" ||
    { tail -60 "$build/$name.log" >&2
      log "FAILED: $name; the input is in $build/artifacts/ (reproduce: $exe <input>)"; exit 1; }
  grep -E '^(stat::|#[0-9]+[[:space:]]+(INITED|DONE))' "$build/$name.log" >&2 || true
done
