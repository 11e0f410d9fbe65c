# Copyright spmdarray developers. See the spmdarray repository for details.
#
# SPDX-License-Identifier: BSD-3-Clause
#
# Spack recipe for spmdarray (Spack >= 1.0, package API v2). Use it from a checkout:
#   spack repo add <checkout>/spack/spack_repo/spmdarray
#   spack install spmdarray +openmp        (see spack/README.md)
# Loaded by tests in the project without Spack (spack/test/test_recipe.py, ctest label
# `package`), against a small stand-in of Spack's directive API.
import os

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *


class Spmdarray(CMakePackage, CudaPackage):
    """MPI-native SPMD distributed N-dimensional arrays for C++17 on Kokkos: each rank owns
    a Kokkos::View block of a globally indexed array; halo exchange, reductions, NumPy-style
    slices and fused expressions, BLAS, distributed sparse matrices and CG, and parallel HDF5
    checkpoints, on CPUs (OpenMP) or GPUs (CUDA)."""

    homepage = "https://github.com/spmdarray/spmdarray"
    git = "https://github.com/spmdarray/spmdarray.git"
    # Release tarballs are made by scripts/release.sh (git archive of the tag vX.Y.Z, top
    # folder spmdarray-X.Y.Z/) and attached to the GitHub release of that tag; release.sh
    # prints the sha256 and adds the version() line below.
    url = "https://github.com/spmdarray/spmdarray/releases/download/v0.1.0/spmdarray-0.1.0.tar.gz"

    license("BSD-3-Clause")

    test_requires_compiler = True

    version("main", branch="main")
    # Released versions (added by `scripts/release.sh X.Y.Z --update-recipe`), newest first:

    # Kokkos backends. spmdarray follows the Kokkos it is built with; these variants ask for a
    # Kokkos that provides them (Spack's kokkos builds only Serial by default).
    variant("openmp", default=True, description="Kokkos OpenMP backend (threads on CPUs)")
    variant("serial", default=True, description="Kokkos Serial backend")
    variant("shared", default=True, description="Build libspmdarray as a shared library")
    variant("hdf5", default=True, description="Parallel HDF5 checkpoints (spmd::io)")
    variant("nccl", default=False, description="NCCL communication backend (needs +cuda)")
    variant("fftw", default=True, description="FFTW3 for spmd::fft on host arrays (cuFFT serves +cuda)")
    variant("apps", default=True, description="Build and install the apps (heat, cg_solver, ...)")
    variant("tests", default=False, description="Build the test suite (ctest, 1-4 MPI ranks)")

    depends_on("cxx", type="build")
    depends_on("c", type="build", when="+hdf5")  # FindHDF5 test-compiles a C program
    depends_on("cmake@3.16:", type="build")

    depends_on("mpi")
    # The Kokkos releases CI builds and tests: 3.4.1 on the host (scripts/setup.sh) and the 4.6
    # series (scripts/build-kokkos46.sh: Kokkos 4.6.01 with Kokkos Kernels 4.6.02; on the host in
    # the sanitizer stage and scripts/kokkos46-test.sh, for CUDA in scripts/cuda-build.sh and on
    # the H100/H200 runs).
    depends_on("kokkos@3.4.01,4.6")
    depends_on("kokkos-kernels@3.4.01,4.6")
    # A shared libspmdarray links Kokkos: a static Kokkos would be copied into it and into every
    # program (spmdarray's CMake refuses that), so +shared asks for shared Kokkos libraries.
    depends_on("kokkos+shared", when="+shared")
    depends_on("kokkos-kernels+shared", when="+shared")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos+serial", when="+serial")
    conflicts("~openmp ~serial", msg="spmdarray needs a Kokkos host backend: +openmp or +serial")

    # CUDA: built and tested with Kokkos 4.6 and CUDA 13.0 only (Kokkos 3.4.1 predates CUDA 13
    # and Hopper). Kokkos 4.6 needs the project's CUDA 13 patch set (scripts/gpu/patch_kokkos.py),
    # and Spack's kokkos@4.6 refuses CUDA 13: give such a Kokkos as an external (spack/README.md).
    depends_on("kokkos@4.6", when="+cuda")
    depends_on("kokkos-kernels@4.6", when="+cuda")
    depends_on("cuda@13.0", when="+cuda")
    # The Kokkos (and Kokkos Kernels) must be built for the same GPU, with device lambdas
    # (KOKKOS_LAMBDA in every kernel); the compiler is the one Kokkos names (nvcc_wrapper).
    for _arch in CudaPackage.cuda_arch_values:
        _cuda = f"+cuda cuda_arch={_arch}"
        depends_on(f"kokkos+cuda+cuda_lambda cuda_arch={_arch}", when=_cuda)
        depends_on(f"kokkos-kernels+cuda cuda_arch={_arch}", when=_cuda)
        depends_on(f"nccl cuda_arch={_arch}", when=f"+nccl {_cuda}")
    conflicts("+cuda", when="cuda_arch=none", msg="+cuda needs a cuda_arch (e.g. cuda_arch=90)")

    depends_on("nccl", when="+nccl")
    conflicts("+nccl", when="~cuda", msg="the NCCL backend (+nccl) needs +cuda")

    depends_on("hdf5+mpi", when="+hdf5")
    depends_on("zlib-api", when="+hdf5")  # CRC-32 checksums of the checkpoint datasets

    # double and float (Spack's fftw builds both by default); its OpenMP threads with +openmp
    depends_on("fftw@3:+openmp", when="+fftw+openmp")
    depends_on("fftw@3:", when="+fftw~openmp")

    depends_on("random123")  # header-only: spmd/random.hpp (Philox); a dependency of consumers too

    depends_on("cli11", when="+apps")
    depends_on("nlohmann-json", when="+apps")
    depends_on("googletest", type="build", when="+tests")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            self.define_from_variant("SPMD_ENABLE_HDF5", "hdf5"),
            self.define_from_variant("SPMD_ENABLE_NCCL", "nccl"),
            self.define("SPMD_ENABLE_FFTW", "ON" if spec.satisfies("+fftw") else "OFF"),
            self.define_from_variant("SPMD_ENABLE_APPS", "apps"),
            self.define_from_variant("SPMD_ENABLE_TESTS", "tests"),
            self.define("SPMD_ENABLE_BENCHMARKS", False),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
            self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix),
            self.define("MPI_CXX_COMPILER", spec["mpi"].mpicxx),
            self.define("Random123_ROOT", spec["random123"].prefix),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", self["kokkos"].kokkos_cxx))
        if spec.satisfies("+hdf5"):
            args.append(self.define("HDF5_ROOT", spec["hdf5"].prefix))
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        if spec.satisfies("+fftw"):
            args.append(self.define("FFTW_ROOT", spec["fftw"].prefix))
        if spec.satisfies("+tests"):
            args.append(self.define("MPIEXEC_EXECUTABLE", spec["mpi"].prefix.bin.mpiexec))
        return args

    # ---- stand-alone tests: `spack test run spmdarray` -------------------------------------
    # tests/consumer is a project outside the spmdarray tree: find_package(spmdarray) and one
    # halo exchange + reduction checked against its closed form. It is configured with nothing
    # but the install prefix: the installed spmdarrayConfig.cmake finds Kokkos, Kokkos Kernels,
    # MPI (and HDF5) where the build found them.
    consumer_src = join_path("tests", "consumer")

    @run_after("install")
    def cache_consumer_sources(self):
        cache_extra_test_sources(self, [self.consumer_src])

    def _consumer(self):
        """Configure and build the cached consumer once; return the executable's path."""
        src = join_path(self.test_suite.current_test_cache_dir, self.consumer_src)
        build = join_path(self.test_suite.current_test_cache_dir, "consumer-build")
        exe = join_path(build, "consumer")
        if not os.path.exists(exe):
            cxx = self["kokkos"].kokkos_cxx if self.spec.satisfies("+cuda") else os.environ["CXX"]
            cmake = which(self.spec["cmake"].prefix.bin.cmake)
            cmake(
                "-S",
                src,
                "-B",
                build,
                self.define("CMAKE_BUILD_TYPE", "Release"),
                self.define("CMAKE_CXX_COMPILER", cxx),
                self.define("CMAKE_PREFIX_PATH", self.prefix),
            )
            cmake("--build", build)
        return exe

    def _run_consumer(self, ranks):
        mpiexec = which(self.spec["mpi"].prefix.bin.mpiexec)
        out = mpiexec("-n", str(ranks), self._consumer(), output=str, error=str)
        assert "consumer: sum" in out and ": ok" in out, f"consumer at {ranks} rank(s): {out}"

    def test_consumer_np1(self):
        """build tests/consumer against the installed spmdarray and run it on 1 MPI rank"""
        self._run_consumer(1)

    def test_consumer_np2(self):
        """run tests/consumer on 2 MPI ranks (a halo exchange across ranks)"""
        self._run_consumer(2)
