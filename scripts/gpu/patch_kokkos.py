#!/usr/bin/env python3
"""Apply spmdarray's CUDA 13 / Hopper patch set to an extracted Kokkos 3.4.1 source tree.

Kokkos 3.4.1 (the Kokkos in Debian's trilinos 13.2.0) predates CUDA 13 and Hopper. Each change
below is a textual edit with a check that it applied; running the script twice is harmless
(each edit is skipped when its result is already there).

Usage: patch_kokkos.py KOKKOS_SOURCE_DIR
"""
import pathlib
import re
import sys


def edit(path, old, new, count=1, regex=False):
    text = path.read_text()
    if (new in text) and not regex:
        return "already"
    if regex:
        out, n = re.subn(old, new, text)
    else:
        n = text.count(old)
        out = text.replace(old, new)
    if n < count:
        sys.exit(f"patch_kokkos: {path}: expected {count} match(es) of {old!r}, found {n}")
    path.write_text(out)
    return f"{n} edit(s)"


def main():
    src = pathlib.Path(sys.argv[1])
    done = []

    # 1. nvcc_wrapper's default sm_35 is rejected by CUDA 13.
    done.append(("nvcc_wrapper default arch",
                 edit(src / "bin/nvcc_wrapper", 'default_arch="sm_35"', 'default_arch="sm_90"')))

    # 2. half_t -> __half conversions are explicit in CUDA 13's cuda_fp16.h, and __half2double
    #    is gone: pass half_t::impl_type(val), convert to double through float.
    half = src / "core/src/Cuda/Kokkos_Cuda_Half.hpp"
    text = half.read_text()
    if "static_cast<double>(__half2float(half_t::impl_type(val)))" not in text:
        text, n1 = re.subn(r"return __half2double\(val\);",
                           "return static_cast<double>(__half2float(half_t::impl_type(val)));", text)
        text, n2 = re.subn(r"return (__half2(?:float|short_rz|ushort_rz|int_rz|uint_rz|ll_rz|ull_rz))\(val\);",
                           r"return \1(half_t::impl_type(val));", text)
        if n1 != 1 or n2 < 7:
            sys.exit(f"patch_kokkos: {half}: unexpected half conversion matches ({n1}, {n2})")
        half.write_text(text)
        done.append(("half_t conversions", f"{n1 + n2} edit(s)"))
    else:
        done.append(("half_t conversions", "already"))

    # 3. CUDA 13's cudaMemPrefetchAsync takes a cudaMemLocation and flags.
    done.append(("cudaMemPrefetchAsync", edit(
        src / "core/src/Cuda/Kokkos_CudaSpace.cpp",
        "CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, space.cuda_device(),\n"
        "                                        space.cuda_stream()));",
        "#if CUDA_VERSION >= 13000\n"
        "    cudaMemLocation location{};\n"
        "    location.type = cudaMemLocationTypeDevice;\n"
        "    location.id   = space.cuda_device();\n"
        "    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, location, 0,\n"
        "                                        space.cuda_stream()));\n"
        "#else\n"
        "    CUDA_SAFE_CALL(cudaMemPrefetchAsync(ptr, bytes, space.cuda_device(),\n"
        "                                        space.cuda_stream()));\n"
        "#endif")))

    # 4. With CMake >= 3.17 Kokkos exports CUDA::cudart, whose link interface names
    #    CUDA::cudart_static_deps; consumers' find_package(Kokkos) then fails under CMake 4.
    #    Take the bundled CudaToolkit branch instead.
    done.append(("FindTPLCUDA", edit(src / "cmake/Modules/FindTPLCUDA.cmake",
                                     'IF(CMAKE_VERSION VERSION_GREATER_EQUAL "3.17.0")',
                                     'IF(FALSE) # spmdarray: bundled CudaToolkit branch (CMake 4)')))

    # 5. Hopper: an architecture option HOPPER90 (sm_90); Kokkos aborts at start-up when kernels
    #    were built for another major compute capability.
    arch = src / "cmake/kokkos_arch.cmake"
    done.append(("HOPPER90 option", edit(
        arch, 'KOKKOS_ARCH_OPTION(AMPERE86        GPU  "NVIDIA Ampere generation CC 8.6")',
        'KOKKOS_ARCH_OPTION(AMPERE86        GPU  "NVIDIA Ampere generation CC 8.6")\n'
        'KOKKOS_ARCH_OPTION(HOPPER90        GPU  "NVIDIA Hopper generation CC 9.0")')))
    done.append(("HOPPER90 sm_90", edit(arch, "CHECK_CUDA_ARCH(AMPERE86  sm_86)",
                                        "CHECK_CUDA_ARCH(AMPERE86  sm_86)\nCHECK_CUDA_ARCH(HOPPER90  sm_90)")))
    done.append(("HOPPER90 define", edit(src / "cmake/KokkosCore_config.h.in", "#cmakedefine KOKKOS_ARCH_AMPERE86",
                                         "#cmakedefine KOKKOS_ARCH_AMPERE86\n#cmakedefine KOKKOS_ARCH_HOPPER90")))
    for name, result in done:
        print(f"patch_kokkos: {name}: {result}")


if __name__ == "__main__":
    main()
