# Spack package for spmdarray. Use with: spack repo add <checkout>/spack && spack install spmdarray
from spack.package import *


class Spmdarray(CMakePackage):
    """MPI-native SPMD distributed N-dimensional arrays on Kokkos: halo exchange, reductions,
    element-wise kernels, and (as they land) slicing, BLAS, sparse CG and HDF5 checkpoints."""

    homepage = "https://example.invalid/spmdarray"
    git = "https://example.invalid/spmdarray.git"

    maintainers("spmdarray-developers")
    license("BSD-3-Clause")

    version("main", branch="main")

    variant("apps", default=True, description="Build the applications (heat, ...)")
    variant("hdf5", default=False, description="Parallel HDF5 checkpoints")
    variant("nccl", default=False, description="NCCL communication backend (needs +cuda Kokkos)")
    variant("tests", default=False, description="Build and register the test suite")

    depends_on("cmake@3.16:", type="build")
    depends_on("mpi")
    depends_on("kokkos@3.4:")
    depends_on("kokkos-kernels@3.4:")
    depends_on("cli11", when="+apps")
    depends_on("nlohmann-json", when="+apps")
    depends_on("hdf5+mpi", when="+hdf5")
    depends_on("nccl", when="+nccl")
    depends_on("kokkos+cuda", when="+nccl")
    depends_on("googletest", type=("build", "test"), when="+tests")

    def cmake_args(self):
        return [
            self.define_from_variant("SPMD_ENABLE_APPS", "apps"),
            self.define_from_variant("SPMD_ENABLE_HDF5", "hdf5"),
            self.define_from_variant("SPMD_ENABLE_NCCL", "nccl"),
            self.define_from_variant("SPMD_ENABLE_TESTS", "tests"),
            self.define("SPMD_ENABLE_BENCHMARKS", False),
            self.define("MPIEXEC_EXECUTABLE", self.spec["mpi"].prefix.bin.mpiexec),
        ]
