#!/usr/bin/env python3
"""Checks the Spack recipe (spack/spack_repo/spmdarray/packages/spmdarray/package.py) without
Spack: loads it against spack_standin.py and compares, for several specs, the CMake arguments
and the dependency constraints with what they must be; checks the conflicts, that the Kokkos
versions CI builds satisfy the recipe's ranges (and a few that must not), and the stand-alone
tests' commands (the consumer gets nothing but the install prefix).

Usage: test_recipe.py [--table]     (--table prints the spec -> arguments table as Markdown)
Run by ctest as `spack_recipe` (label package).
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECIPE = os.path.join(ROOT, "spack", "spack_repo", "spmdarray", "packages", "spmdarray", "package.py")
sys.path.insert(0, HERE)
import spack_standin as sd  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def B(name, on):
    return f"-D{name}:BOOL={'ON' if on else 'OFF'}"


def S(name, value):
    return f"-D{name}:STRING={value}"


P = "/opt/spack"
KOKKOS = [S("Kokkos_ROOT", f"{P}/kokkos"), S("KokkosKernels_ROOT", f"{P}/kokkos-kernels"),
          S("MPI_CXX_COMPILER", f"{P}/mpich/bin/mpicxx"), S("Random123_ROOT", f"{P}/random123")]


def common(shared=True, hdf5=True, nccl=False, apps=True, tests=False, fftw=True):
    return [B("BUILD_SHARED_LIBS", shared), B("SPMD_ENABLE_HDF5", hdf5), B("SPMD_ENABLE_NCCL", nccl),
            S("SPMD_ENABLE_FFTW", "ON" if fftw else "OFF"), B("SPMD_ENABLE_APPS", apps), B("SPMD_ENABLE_TESTS", tests), B("SPMD_ENABLE_BENCHMARKS", False)]


# spec -> (exact cmake_args, dependency constraints that must hold, dependencies that must be absent)
CASES = [
    ("spmdarray+openmp",
     common() + KOKKOS + [S("HDF5_ROOT", f"{P}/hdf5"), S("FFTW_ROOT", f"{P}/fftw")],
     ["kokkos+openmp+serial+shared", "fftw+openmp", "kokkos@3.4.01,4.6", "kokkos-kernels@3.4.01,4.6", "kokkos-kernels+shared",
      "hdf5+mpi", "zlib-api",
      "mpi", "cxx", "c", "cli11", "nlohmann-json", "random123"],
     ["nccl", "googletest", "cuda"]),
    ("spmdarray+cuda cuda_arch=90 +nccl",
     common(nccl=True) + KOKKOS + [S("CMAKE_CXX_COMPILER", f"{P}/kokkos/bin/nvcc_wrapper"),
                                   S("HDF5_ROOT", f"{P}/hdf5"), S("NCCL_ROOT", f"{P}/nccl"),
                                   S("FFTW_ROOT", f"{P}/fftw")],
     ["kokkos+cuda+cuda_lambda+openmp cuda_arch=90", "kokkos-kernels+cuda cuda_arch=90", "nccl cuda_arch=90",
      "hdf5+mpi", "kokkos@4.6", "kokkos-kernels@4.6", "cuda@13.0"],
     ["googletest"]),
    ("spmdarray~hdf5~fftw",
     common(hdf5=False, fftw=False) + KOKKOS,
     ["kokkos+openmp+serial", "mpi", "random123"],
     ["hdf5", "zlib-api", "c", "nccl", "fftw"]),
    ("spmdarray+shared~apps",
     common(apps=False) + KOKKOS + [S("HDF5_ROOT", f"{P}/hdf5"), S("FFTW_ROOT", f"{P}/fftw")],
     ["kokkos+openmp"],
     ["cli11", "nlohmann-json"]),
    ("spmdarray~shared~openmp+tests",
     common(shared=False, tests=True) + KOKKOS + [S("HDF5_ROOT", f"{P}/hdf5"), S("FFTW_ROOT", f"{P}/fftw"),
                                                  S("MPIEXEC_EXECUTABLE", f"{P}/mpich/bin/mpiexec")],
     ["kokkos+serial", "googletest", "fftw"],
     []),
]

CONFLICTS = [
    ("spmdarray+nccl", "needs +cuda"),
    ("spmdarray+cuda", "cuda_arch"),
    ("spmdarray~openmp~serial", "host backend"),
]


def dep_constraints_hold(spec, text):
    c = sd.parse(text)
    if c.name not in spec.deps:
        return False
    d = spec.deps[c.name]
    if not all(v in d.constraint_versions for v in c.versions):
        return False
    return all(d.variants.get(k) == v for k, v in c.variants.items())


def main():
    cls = sd.load_recipe(RECIPE)
    table = []
    for text, want_args, want_deps, absent in CASES:
        spec = cls.concretize(text)
        pkg = cls(spec)
        args = [a for a in pkg.cmake_args() if a]
        check(args == want_args, f"{text}: cmake_args\n  got  {args}\n  want {want_args}")
        for d in want_deps:
            check(dep_constraints_hold(spec, d), f"{text}: depends on {d} (have {spec.deps.get(sd.parse(d).name)})")
        for d in absent:
            check(d not in spec.deps, f"{text}: must not depend on {d}")
        table.append((text, str(spec), args))

    # ~shared leaves Kokkos' library type to the user (a static spmdarray links either).
    check("shared" not in cls.concretize("spmdarray~shared").deps["kokkos"].variants, "~shared: kokkos unconstrained")

    for text, needle in CONFLICTS:
        try:
            cls.concretize(text)
            check(False, f"{text}: must conflict ({needle})")
        except sd.ConflictError as e:
            check(needle in str(e), f"{text}: conflict message {e!r} should say {needle!r}")

    # The Kokkos versions CI builds must satisfy the recipe's ranges; others must not.
    rng = {a[0].split("@")[0]: a[0].split("@")[1] for a, kw in cls.directives("depends_on")
           if a[0].startswith("kokkos") and "@" in a[0] and kw.get("when") is None}
    setup = open(os.path.join(ROOT, "scripts", "setup.sh")).read()
    k46 = open(os.path.join(ROOT, "scripts", "build-kokkos46.sh")).read()
    built = {"kokkos": [re.search(r"^kokkos_version=(\S+)", setup, re.M).group(1)],
             "kokkos-kernels": [re.search(r"^kokkos_version=(\S+)", setup, re.M).group(1)]}
    m = re.search(r"^k=kokkos-(\d+\.\d+\.\d+) kk=kokkos-kernels-(\d+\.\d+\.\d+)$", k46, re.M)
    check(m is not None, "scripts/build-kokkos46.sh names its archives (k=kokkos-X kk=kokkos-kernels-Y)")
    if m:
        built["kokkos"].append(m.group(1))
        built["kokkos-kernels"].append(m.group(2))
    check(len(built["kokkos"]) == 2 and len(built["kokkos-kernels"]) == 2, f"CI versions found: {built}")
    # +cuda: only the 4.6 series (the one CI builds for CUDA) and the CUDA 13.0 it builds with.
    cuda = cls.concretize("spmdarray+cuda cuda_arch=90")
    for pkgname in ("kokkos", "kokkos-kernels"):
        versions = cuda.deps[pkgname].constraint_versions
        check(all(sd.version_satisfies(built[pkgname][1], v) for v in versions),
              f"+cuda: {pkgname}@{built[pkgname][1]} (built for CUDA) satisfies {versions}")
        check(not all(sd.version_satisfies(built[pkgname][0], v) for v in versions),
              f"+cuda: {pkgname}@{built[pkgname][0]} (host only) is refused by {versions}")
    nvcc = re.search(r"release (\d+\.\d+)", subprocess.run(["nvcc", "--version"], capture_output=True,
                                                            text=True).stdout) if shutil.which("nvcc") else None
    if nvcc:
        check(all(sd.version_satisfies(nvcc.group(1), v) for v in cuda.deps["cuda"].constraint_versions),
              f"+cuda: the nvcc CI builds with ({nvcc.group(1)}) is in cuda@{cuda.deps['cuda'].constraint_versions}")
    for pkgname, versions in built.items():
        check(pkgname in rng, f"the recipe bounds {pkgname}'s version")
        for v in versions:
            check(sd.version_satisfies(v, rng.get(pkgname, "")), f"{pkgname}@{v} (built by CI) in @{rng.get(pkgname)}")
        for v in ("3.7.02", "4.5.01", "4.7.00", "5.0.0"):
            check(not sd.version_satisfies(v, rng.get(pkgname, "0")), f"{pkgname}@{v} (never built) outside the range")

    # Release versions and the url: every version() but main has a sha256; url names a tarball
    # of the form release.sh makes.
    for v, kw in cls.versions().items():
        if v != "main":
            check(re.fullmatch(r"[0-9a-f]{64}", kw.get("sha256", "")), f"version {v} has a sha256")
    check(cls.versions().get("main", {}).get("branch") == "main", "version('main', branch='main')")
    check(re.fullmatch(r"https://github\.com/spmdarray/spmdarray/releases/download/v(\S+)/spmdarray-\1\.tar\.gz",
                       cls.url), f"url {cls.url}")
    check(cls.git == "https://github.com/spmdarray/spmdarray.git", f"git {cls.git}")

    # Stand-alone tests: cmake gets only the prefix (and the compiler), then 1 and 2 ranks.
    # The stand-in's compiler is whatever CXX says (Spack's compiler wrapper); fix it here so that
    # the expectation below does not depend on the machine (a GPU image sets CXX=/opt/gcc/bin/g++).
    os.environ["CXX"] = "/usr/bin/c++"
    for text in ("spmdarray+openmp", "spmdarray+cuda cuda_arch=90"):
        spec = cls.concretize(text)
        pkg = cls(spec)
        sd.Recorder.calls.clear()
        with tempfile.TemporaryDirectory() as tmp:
            pkg.test_suite = types.SimpleNamespace(current_test_cache_dir=tmp)
            tests = sorted(n for n in dir(pkg) if n.startswith("test_") and callable(getattr(pkg, n)))
            check(tests == ["test_consumer_np1", "test_consumer_np2"], f"stand-alone tests {tests}")
            for n in tests:
                getattr(pkg, n)()
            calls = sd.Recorder.calls
            configure = [c for c in calls if "-S" in c]
            check(len(configure) == 1, f"{text}: the consumer is configured once ({len(configure)})")
            defs = [a for a in configure[0] if a.startswith("-D")] if configure else []
            cxx = f"{P}/kokkos/bin/nvcc_wrapper" if "+cuda" in text else "/usr/bin/c++"
            check(defs == [S("CMAKE_BUILD_TYPE", "Release"), S("CMAKE_CXX_COMPILER", cxx),
                           S("CMAKE_PREFIX_PATH", f"{P}/spmdarray")], f"{text}: consumer configure {defs}")
            check(configure and configure[0][configure[0].index("-S") + 1] == os.path.join(tmp, "tests", "consumer"),
                  "the consumer sources come from the test cache")
            runs = [c[1:3] for c in calls if c[0].endswith("/bin/mpiexec")]
            check(runs == [["-n", "1"], ["-n", "2"]], f"{text}: mpiexec runs {runs}")
    check(sd.cached_test_sources == [] or "tests/consumer" in sd.cached_test_sources[0], "cached sources")
    hook = [f for f in vars(cls).values() if getattr(f, "_run_after", None) == ("install",)]
    check(len(hook) == 1, "one run_after('install') hook caches the consumer sources")
    if hook:
        hook[0](cls(cls.concretize("spmdarray")))
        check(sd.cached_test_sources == [os.path.join("tests", "consumer")], f"cached {sd.cached_test_sources}")
    check(os.path.isfile(os.path.join(ROOT, "tests", "consumer", "CMakeLists.txt")), "tests/consumer exists")

    if "--table" in sys.argv:
        print("| spec | concretized (stand-in) | cmake_args |\n|---|---|---|")
        for text, conc, args in table:
            print(f"| `{text}` | `{conc}` | {' '.join('`' + a + '`' for a in args)} |")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(f"spack recipe: {len(CASES)} specs, {len(CONFLICTS)} conflicts, versions and stand-alone tests ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
