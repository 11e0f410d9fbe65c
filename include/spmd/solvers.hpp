#pragma once
/// \file solvers.hpp
/// Krylov solvers on distributed arrays (namespace spmd::solvers): the linear-operator concept,
/// the matrix-free N-d Laplacian, CG and pipelined CG with an optional Jacobi preconditioner.
/// See docs/api/solvers.md.

#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/laplacian.hpp"
#include "spmd/solvers/cg.hpp"
