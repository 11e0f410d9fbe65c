#pragma once
/// \file spmd.hpp
/// Umbrella header of spmdarray: MPI-native SPMD distributed N-d arrays on Kokkos.
/// The layers, bottom up (docs/architecture.md): vocabulary (types, error, config), the
/// communicator and runtime, boxes and distributions, the communication engine and kernel layer
/// (impl/), arrays and halos, algorithms, slices, expressions, reductions, redistribution and
/// gathers, BLAS, sparse matrices, solvers, checkpoints.

#include "spmd/config.hpp"
#include "spmd/types.hpp"
#include "spmd/error.hpp"
#include "spmd/comm.hpp"
#include "spmd/runtime.hpp"
#include "spmd/backend.hpp"
#include "spmd/box.hpp"
#include "spmd/distribution.hpp"
#include "spmd/halo.hpp"
#include "spmd/array.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/math.hpp"
#include "spmd/slice.hpp"
#include "spmd/expr.hpp"
#include "spmd/overlap.hpp"
#include "spmd/reduce.hpp"
#include "spmd/axis_reduce.hpp"
#include "spmd/scan.hpp"
#include "spmd/sort.hpp"
#include "spmd/shape.hpp"
#include "spmd/random.hpp"
#include "spmd/creation.hpp"
#include "spmd/reproducible.hpp"
#include "spmd/redistribute.hpp"
#include "spmd/gather.hpp"
#include "spmd/blas.hpp"
#include "spmd/sparse.hpp"
#include "spmd/solvers.hpp"
#include "spmd/fft.hpp"
#if SPMD_HAVE_HDF5
#include "spmd/io/checkpoint.hpp"
#endif
