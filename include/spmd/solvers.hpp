#pragma once
/// \file solvers.hpp
/// Krylov solvers on distributed arrays (namespace spmd::solvers): the linear-operator concept,
/// the matrix-free N-d Laplacian, CG and pipelined CG (symmetric positive definite), GMRES(m),
/// flexible GMRES and BiCGStab (nonsymmetric), and the preconditioners they share: Jacobi,
/// Chebyshev polynomial, block Jacobi with local ILU(0), geometric multigrid.
/// See docs/api/solvers.md.

#include "spmd/solvers/operator.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"
#include "spmd/solvers/laplacian.hpp"
#include "spmd/solvers/cg.hpp"
#include "spmd/solvers/gmres.hpp"
#include "spmd/solvers/bicgstab.hpp"
#include "spmd/solvers/chebyshev.hpp"
#include "spmd/solvers/multigrid.hpp"
#include "spmd/solvers/ilu.hpp"
