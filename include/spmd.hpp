#pragma once
/// \file spmd.hpp
/// Umbrella header of spmdarray: MPI-native SPMD distributed N-d arrays on Kokkos.

#include "spmd/config.hpp"
#include "spmd/error.hpp"
#include "spmd/comm.hpp"
#include "spmd/runtime.hpp"
#include "spmd/box.hpp"
#include "spmd/distribution.hpp"
#include "spmd/array.hpp"
#include "spmd/halo.hpp"
#include "spmd/algorithm.hpp"
#include "spmd/reduce.hpp"
#include "spmd/gather.hpp"
#include "spmd/math.hpp"
#include "spmd/redistribute.hpp"
#include "spmd/blas.hpp"
#include "spmd/slice.hpp"
#include "spmd/expr.hpp"
#include "spmd/sparse.hpp"
#include "spmd/solvers.hpp"
#if SPMD_HAVE_HDF5
#include "spmd/io/checkpoint.hpp"
#endif
