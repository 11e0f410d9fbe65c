#!/usr/bin/env bash
# On the CPU machine: build the CUDA binaries for the lent GPU machines and pack them, so that a
# device call only runs (scripts/gpu/run-carried.sh there) instead of compiling.
#
# The GPU image's MPI is Open MPI 4.1 (not CUDA-aware); Debian's libopenmpi-dev (4.1.4) has the
# same ABI. So this builds against Open MPI by its own names (mpicxx.openmpi, h5pcc.openmpi),
# never through the generic mpicxx/mpirun, which stay MPICH for every other build here. With
# CUDA (Kokkos 4.6 for Hopper, scripts/build-kokkos46.sh), NCCL, parallel HDF5 (Debian's
# libhdf5-openmpi-dev), the tests, the apps and the benchmarks.
#
# ctest's files hold absolute paths, so everything lives under one fixed root, the same here and
# on the GPU machine (run-carried.sh recreates it there):
#   $SPMD_DEV_ROOT (default /tmp/spmd-dev)/src     the source tree the binaries are built from
#                                        /kokkos  a copy of the CUDA Kokkos install
#                                        /build   the build (incremental from one run to the next)
#                                        /bin     mpiexec and python3: rewritten on each machine
#                                                 (mpiexec adds --bind-to none --oversubscribe)
#                                        /lib     shared libraries the GPU image lacks (always used)
#                                        /lib-fallback  libraries it may lack (used when missing)
# and packs that tree (binaries stripped, no objects) into CARRY/spmd-dev.tar.xz, with
# run-carried.sh and gpu-lib.sh beside it.
#
# Usage: scripts/gpu/device-build.sh [CARRY]   (default <repo>/.carry; git-ignored)
# Environment: SPMD_JOBS, SPMD_DEV_ROOT, SPMD_DEV_TARGETS (build only these targets; the pack
# then holds what exists), SPMD_DEV_PACK_ONLY=1 (pack the existing build), SPMD_DEV_CMAKE_ARGS
# (more configure arguments, split at spaces), SPMD_DEV_PACK_EXCLUDE (paths under the build left
# out of the pack, split at spaces, tar's wildcards allowed, e.g. "tests/test_io apps/cfd perf/*":
# two packs of one build when the whole does not fit a device call's 64 MiB; a build of every
# target packs to ~89 MB, so split it, e.g. the solver programs (apps/cg_solver tests/test_solvers
# tests/test_preconditioners tests/test_krylov perf/bench_cg, ~37 MB) apart from the rest, and keep
# tests/libspmd_test_yield.so and apps/libspmd_comm_probe.so in both: the CLI and soak tests
# preload them), SPMD_DEV_PYTHON (a folder holding the GPU image's Python headers, python3.X/
# and x86_64-linux-gnu/python3.X/, fetched once by a device call as docs/gpu.md says: the Python extension is then built for that interpreter, with this machine's
# nanobind; SPMD_DEV_PYTHON_SOABI overrides the SOABI read from the folder's name).
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
carry=${1:-$SPMD_ROOT/.carry}
dev=${SPMD_DEV_ROOT:-/tmp/spmd-dev}
log() { printf '[spmd device-build %s] %s\n' "$(date +%T)" "$*" >&2; }
command -v nvcc >/dev/null || { log "nvcc not found"; exit 1; }
for f in /usr/bin/mpicxx.openmpi /usr/bin/mpiexec.openmpi /usr/bin/h5pcc.openmpi; do
  [[ -x $f ]] || { log "$f missing: apt-get install libopenmpi-dev libhdf5-openmpi-dev, then put the" \
                       "mpi/mpirun alternatives back to MPICH (docs/gpu.md)"; exit 1; }
done
t0=$(date +%s)
rc=0
prefix=$(spmd_k46_install cuda) || rc=$?
[[ $rc == 0 ]] || exit 1

# -- the fixed tree -----------------------------------------------------------------------------
mkdir -p "$dev/src" "$dev/bin" "$carry"
# The source: what git tracks plus untracked files it does not ignore (the working tree as it
# is), with the files' times, so the build stays incremental from one run to the next; files no
# longer in the tree are removed.
list=$(mktemp)
(cd "$SPMD_ROOT" && git ls-files -co --exclude-standard --deduplicate | while read -r f; do
   if [[ -f $f ]]; then printf '%s\n' "$f"; fi; done | sort) >"$list"
# Files whose content differs from the tree's last copy get this moment's time after the copy:
# their own time may be older than an object built from the previous content (an edit made
# while a build ran), and make would then keep the stale object.
changed=$(mktemp)
(cd "$SPMD_ROOT" && while read -r f; do cmp -s "$f" "$dev/src/$f" || printf '%s\n' "$f"; done <"$list") >"$changed"
(cd "$SPMD_ROOT" && tar -T "$list" -cf -) | tar -C "$dev/src" -xf -
(cd "$dev/src" && xargs -r -d '\n' touch <"$changed")
rm -f "$changed"
(cd "$dev/src" && find . -type f | sed 's#^\./##' | sort | comm -23 - "$list" | xargs -r -d '\n' rm -f)
rm -f "$list"
revision=$(git -C "$SPMD_ROOT" describe --always --dirty --abbrev=12)
rm -rf "$dev/kokkos" && cp -a "$prefix" "$dev/kokkos"
# This machine's launcher and interpreter (run-carried.sh writes the GPU machine's).
source "$SPMD_ROOT/scripts/gpu/gpu-lib.sh"
gpu_write_bin "$dev" /usr/bin/mpiexec.openmpi /usr/bin/python3

# -- configure and build --------------------------------------------------------------------------
build=$dev/build
python_args=()
if [[ -n "${SPMD_DEV_PYTHON:-}" ]]; then
  pyinc=$(find "$SPMD_DEV_PYTHON" -maxdepth 1 -type d -name 'python3.*' | sort | tail -1)
  [[ -n "$pyinc" && -f $pyinc/Python.h ]] || { log "SPMD_DEV_PYTHON=$SPMD_DEV_PYTHON holds no python3.X/Python.h"; exit 1; }
  pyver=${pyinc##*/python}
  soabi=${SPMD_DEV_PYTHON_SOABI:-cpython-${pyver/./}-x86_64-linux-gnu}
  py=$(spmd_python_env) || { log "the Python front's build packages (nanobind) could not be installed"; exit 1; }
  python_args=(-DSPMD_ENABLE_PYTHON=ON "-DPython_EXECUTABLE=$py" "-DSPMD_PYTHON_TARGET_INCLUDE_DIRS=$pyinc;$SPMD_DEV_PYTHON"
               "-DSPMD_PYTHON_TARGET_SOABI=$soabi")
  log "the Python extension: for Python $pyver ($soabi) from $SPMD_DEV_PYTHON"
fi
if [[ "${SPMD_DEV_PACK_ONLY:-0}" != 1 ]]; then
  log "configuring $build (Open MPI, CUDA Kokkos $prefix)"
  CMAKE_PREFIX_PATH="$dev/kokkos" spmd_setup   # Debian packages; no Kokkos 3.4.1 bootstrap
  cmake -S "$dev/src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$dev/kokkos/bin/nvcc_wrapper" \
    -DCMAKE_PREFIX_PATH="$dev/kokkos" -DKokkos_DIR="$dev/kokkos/lib/cmake/Kokkos" \
    -DKokkosKernels_DIR="$dev/kokkos/lib/cmake/KokkosKernels" \
    -DMPI_CXX_COMPILER=/usr/bin/mpicxx.openmpi -DMPI_C_COMPILER=/usr/bin/mpicc.openmpi \
    -DMPIEXEC_EXECUTABLE="$dev/bin/mpiexec" -DHDF5_C_COMPILER_EXECUTABLE=/usr/bin/h5pcc.openmpi \
    -DSPMD_PYTHON="$dev/bin/python3" -DSPMD_GIT_REVISION="$revision" \
    -DSPMD_ENABLE_NCCL=ON -DSPMD_ENABLE_HDF5=ON -DSPMD_ENABLE_TESTS=ON -DSPMD_ENABLE_APPS=ON \
    -DSPMD_ENABLE_BENCHMARKS=ON "-DSPMD_SELECTION=$(tr -s ' ' ';' <<<"${SPMD_DEV_TARGETS:-}" | sed 's/^;//;s/;$//')" \
    "${python_args[@]}" ${SPMD_DEV_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 || { cat "$build.configure.log" >&2; exit 1; }
  grep -q "Kokkos 4.6.1" "$build.configure.log" || { log "the configure did not pick Kokkos 4.6.1"; exit 1; }
  grep -Eq "openmpi" "$build/CMakeCache.txt" || { log "the configure did not pick Open MPI"; exit 1; }
  t1=$(date +%s)
  log "building (log: $build.build.log)"
  # The targets build in parallel through one spmd_selection target (CMake's Makefiles would build
  # several --target goals one after another).
  cmake --build "$build" -j "${SPMD_JOBS:-$(nproc)}" ${SPMD_DEV_TARGETS:+--target spmd_selection} -- -k \
    >"$build.build.log" 2>&1 || { grep -m30 -B2 -A6 -E 'error|Error' "$build.build.log" >&2; exit 1; }
  log "built in $(($(date +%s) - t1)) s"
fi

# -- the libraries the GPU image lacks --------------------------------------------------------------
# Every shared library the binaries need, except those the image surely has: glibc and the GCC
# runtime (g++ 13 there: newer), the CUDA driver and toolkit (CUDA 13.0 there, cuFFT included), NCCL (2.28 there),
# Open MPI 4.1 and what it needs (the MPI family we build against). Of the rest, Debian's own names
# (libhdf5_openmpi, libbenchmark.so.1debian) are always carried and used; the others go to
# lib-fallback, used on the GPU machine only for the libraries it lacks (e.g. libcurl's, libsz).
system_re='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libutil|libresolv|libstdc\+\+|libgcc_s|libgomp|libatomic)\.so'
device_re='^(libcuda|libcudart|libcublas|libcublasLt|libcusparse|libcufft|libnvJitLink|libnccl|libmpi|libopen-rte|libopen-pal|libhwloc|libevent|libevent_core|libevent_pthreads|libpmix|libfabric|libucx|libucp|libucs|libuct|libibverbs|librdmacm|libnl-3|libnl-route-3|libpsm2|libpsm_infinipath|libmunge|libudev|libz)\.so'
rm -rf "$dev/lib" "$dev/lib-fallback"
mkdir -p "$dev/lib" "$dev/lib-fallback"
mapfile -t elves < <(find "$build" "$dev/kokkos/lib" -type f \( -perm -u+x -o -name '*.so*' \) \
                      -not -path '*/CMakeFiles/*' -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
declare -A carried=()
while read -r name path; do
  [[ -n "${carried[$name]:-}" || $name =~ $system_re || $name =~ $device_re ]] && continue
  [[ $path == "$dev"/* ]] && continue   # ours (libspmdarray, Kokkos): inside the tree already
  carried[$name]=1
  if [[ $name =~ ^(libhdf5_openmpi|libbenchmark)\. ]]; then
    cp -L "$path" "$dev/lib/$name"
  else
    cp -L "$path" "$dev/lib-fallback/$name"
  fi
done < <(for e in "${elves[@]}"; do ldd "$e" 2>/dev/null; done |
         awk '$2 == "=>" && $3 ~ /^\// { n = $1; sub(/.*\//, "", n); print n, $3 }' | sort -u)
log "carried libraries: lib/ $(ls "$dev/lib" | tr '\n' ' '); lib-fallback/ $(ls "$dev/lib-fallback" | tr '\n' ' ')"

# -- pack -----------------------------------------------------------------------------------------
# The build tree without objects, static libraries and dependency files; binaries stripped.
stage=$(mktemp -d "${TMPDIR:-/tmp}/spmd-dev-pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT
excludes=()
read -ra patterns <<<"${SPMD_DEV_PACK_EXCLUDE:-}"  # (not globbed here: tar matches them)
for x in "${patterns[@]}"; do excludes+=("--exclude=${dev#/}/build/$x"); done
tar -C / --exclude='*.o' --exclude='*.a' --exclude='*.d' --exclude='CMakeFiles/*.dir' --exclude='*.log' \
  --exclude='Testing' --exclude='install-test' --exclude='consumer-build*' "${excludes[@]}" -cf - "${dev#/}" |
  tar -C "$stage" -xf -
find "$stage" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
  'head -c4 "$1" | grep -q ELF && strip --strip-unneeded "$1"' _ {} \;
cp "$SPMD_ROOT/scripts/gpu/run-carried.sh" "$SPMD_ROOT/scripts/gpu/gpu-lib.sh" "$carry/"
printf 'built %s from %s (%s) on %s\n' "$(date -u +%FT%TZ)" "$SPMD_ROOT" "$revision" "$(uname -n)" \
  >"$stage/${dev#/}/BUILD-INFO"
tar -C "$stage" -cf - "${dev#/}" | xz -T2 -6 >"$carry/spmd-dev.tar.xz.tmp"
mv "$carry/spmd-dev.tar.xz.tmp" "$carry/spmd-dev.tar.xz"
log "packed $(du -sh "$stage/${dev#/}" | cut -f1) into $carry/spmd-dev.tar.xz ($(du -h "$carry/spmd-dev.tar.xz" | cut -f1)) in $(($(date +%s) - t0)) s in all"
