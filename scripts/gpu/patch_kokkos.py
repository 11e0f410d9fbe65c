#!/usr/bin/env python3
"""Apply spmdarray's CUDA 13 patch set to an extracted Kokkos 4.6.01 source tree.

Kokkos 4.6 predates CUDA 13 (support came in Kokkos 4.7). Each change below is a textual edit
that checks it applied; running the script twice is harmless (an edit whose result is already
there is skipped). Kokkos 4.6 knows Hopper (Kokkos_ARCH_HOPPER90) and CMake 4 itself, and Kokkos
Kernels 4.6.02 builds unchanged with CUDA 13's cuBLAS and cuSPARSE.

Usage: patch_kokkos.py KOKKOS_SOURCE_DIR
"""
import pathlib
import sys


def edit(path, old, new, count=1):
    """Replace `old` by `new` in `path` (exactly `count` matches), unless `new` is already there."""
    text = path.read_text()
    if new in text:
        return "already"
    n = text.count(old)
    if n != count:
        sys.exit(f"patch_kokkos: {path}: expected {count} match(es) of {old!r}, found {n}")
    path.write_text(text.replace(old, new))
    return f"{n} edit(s)"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = pathlib.Path(sys.argv[1])
    done = []

    # 1. nvcc_wrapper's default sm_70 (what it compiles for when no -arch is given, as in CMake's
    #    compiler checks) is rejected by CUDA 13, which dropped Volta: make it sm_90.
    done.append(("nvcc_wrapper default arch",
                 edit(src / "bin/nvcc_wrapper", 'default_arch="sm_70"', 'default_arch="sm_90"')))

    # 2. CUDA 13's cudaMemAdvise and cudaMemPrefetchAsync take a cudaMemLocation (and the prefetch
    #    a flags argument) instead of a device number; the _v2 forms are gone.
    inst = src / "core/src/Cuda/Kokkos_Cuda_Instance.hpp"
    done.append(("cudaMemAdvise wrapper", edit(
        inst,
        "    return cudaMemAdvise(devPtr, count, advice, device);\n",
        "#if CUDART_VERSION >= 13000  // spmdarray: CUDA 13 takes a cudaMemLocation\n"
        "    cudaMemLocation location{};\n"
        "    location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost\n"
        "                                              : cudaMemLocationTypeDevice;\n"
        "    location.id   = device == cudaCpuDeviceId ? 0 : device;\n"
        "    return cudaMemAdvise(devPtr, count, advice, location);\n"
        "#else\n"
        "    return cudaMemAdvise(devPtr, count, advice, device);\n"
        "#endif\n")))
    done.append(("cudaMemPrefetchAsync wrapper", edit(
        inst,
        "    return cudaMemPrefetchAsync(devPtr, count, dstDevice,\n"
        "                                get_input_stream(stream));\n",
        "#if CUDART_VERSION >= 13000  // spmdarray: CUDA 13 takes a cudaMemLocation and flags\n"
        "    cudaMemLocation location{};\n"
        "    location.type = dstDevice == cudaCpuDeviceId ? cudaMemLocationTypeHost\n"
        "                                                 : cudaMemLocationTypeDevice;\n"
        "    location.id   = dstDevice == cudaCpuDeviceId ? 0 : dstDevice;\n"
        "    return cudaMemPrefetchAsync(devPtr, count, location, 0,\n"
        "                                get_input_stream(stream));\n"
        "#else\n"
        "    return cudaMemPrefetchAsync(devPtr, count, dstDevice,\n"
        "                                get_input_stream(stream));\n"
        "#endif\n")))
    # 3. CUDA 13's cudaGraphAddDependencies takes edge data (nullptr: plain dependencies).
    done.append(("cudaGraphAddDependencies wrapper", edit(
        inst,
        "    return cudaGraphAddDependencies(graph, from, to, numDependencies);\n",
        "#if CUDART_VERSION >= 13000  // spmdarray: CUDA 13 takes edge data\n"
        "    return cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies);\n"
        "#else\n"
        "    return cudaGraphAddDependencies(graph, from, to, numDependencies);\n"
        "#endif\n")))
    # 4. cudaMemAdvise where Kokkos calls it directly (unified-memory and debug builds only).
    space = src / "core/src/Cuda/Kokkos_CudaSpace.cpp"
    done.append(("cudaMemAdvise_v2 (unified memory)", edit(
        space,
        "      KOKKOS_IMPL_CUDA_SAFE_CALL(cudaMemAdvise_v2(\n",
        "#if CUDART_VERSION >= 13000  // spmdarray: cudaMemAdvise_v2 became cudaMemAdvise\n"
        "      KOKKOS_IMPL_CUDA_SAFE_CALL(cudaMemAdvise(\n"
        "#else\n"
        "      KOKKOS_IMPL_CUDA_SAFE_CALL(cudaMemAdvise_v2(\n"
        "#endif\n")))
    done.append(("cudaMemAdvise (UVM pinned to host, debug)", edit(
        space,
        "          cudaMemAdvise(ptr, arg_alloc_size, cudaMemAdviseSetPreferredLocation,\n"
        "                        cudaCpuDeviceId));\n",
        "          cudaMemAdvise(ptr, arg_alloc_size, cudaMemAdviseSetPreferredLocation,\n"
        "#if CUDART_VERSION >= 13000  // spmdarray: CUDA 13 takes a cudaMemLocation\n"
        "                        cudaMemLocation{cudaMemLocationTypeHost, 0}));\n"
        "#else\n"
        "                        cudaCpuDeviceId));\n"
        "#endif\n")))


    for name, result in done:
        print(f"patch_kokkos: {name}: {result}")


if __name__ == "__main__":
    main()
