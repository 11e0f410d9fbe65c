#pragma once
/// \file sparse.hpp
/// The sparse module: spmd::sparse::CsrMatrix (row-distributed CSR, ghost import plan,
/// overlapped SpMV), the model-matrix generators and the Matrix Market reader.

#include "spmd/sparse/csr_matrix.hpp"
#include "spmd/sparse/generators.hpp"
#include "spmd/sparse/matrix_market.hpp"
#include "spmd/sparse/symmetry.hpp"
