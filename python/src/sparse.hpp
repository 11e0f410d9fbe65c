#pragma once
// Sparse matrices and CG of the binding (sparse.cpp): spmd::sparse::CsrMatrix<double> behind an
// opaque handle (this header does not include Kokkos Kernels), its generators, y = A x, and
// spmd::solvers::cg on it.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core.hpp"

namespace spmd::py {

struct CsrBox;  // holds one spmd::sparse::CsrMatrix<double> (sparse.cpp)

/// A distributed CSR matrix as Python holds it. Its storage is released at interpreter exit
/// (release_matrices), before Kokkos and MPI end, whoever still holds the handle.
struct Csr {
  std::shared_ptr<CsrBox> box;
};

/// The rows [lo, hi) this rank owns of a 1-D array of n elements on comm (a balanced block: the
/// row distribution of every CsrMatrix and of spmdarray.zeros(n)). Collective (a Distribution).
std::pair<index_t, index_t> owned_rows(const Comm& comm, index_t n);

/// A matrix from each rank's own rows in CSR form with global column indices: indptr (local rows
/// + 1 entries), indices and data (indptr.back() entries). nrows: the global row count, or -1 for
/// the sum of the ranks' local rows; ncols: every rank's block's column count (block_cols) must
/// be ncols (when ncols >= 0) and the same on every rank. Checks, with the same spmdarray.Error on
/// every rank, that each rank passes exactly the rows it owns (owned_rows), then the library's
/// own checks (offsets, column range). Collective.
Csr csr_from_local(const Comm& comm, index_t nrows, index_t ncols, index_t block_cols, const index_t* indptr,
                   std::size_t n_indptr, const index_t* indices, const double* data, std::size_t n_entries,
                   const std::string& label);
/// spmd::sparse::poisson2d / poisson3d on a grid of `shape` (2 or 3 extents). Collective.
Csr csr_poisson(const Comm& comm, const std::vector<index_t>& shape);
/// spmd::sparse::convection_diffusion2d(comm, nx, ny, peclet). Collective.
Csr csr_convection_diffusion2d(const Comm& comm, index_t nx, index_t ny, double peclet);

struct CsrInfo {
  index_t rows = 0, cols = 0, nnz = 0, local_nnz = 0, row_lo = 0, row_hi = 0, col_lo = 0, col_hi = 0;
  std::string label;
};
/// Global counts (agreed at construction), this rank's rows and entries. Local.
CsrInfo csr_info(const Csr& a);
/// The matrix's communicator. Local.
Comm csr_comm(const Csr& a);
/// True when x is a whole float64 1-D array laid out as the matrix's columns (x of A x). Local.
bool csr_fits_columns(const Csr& a, const Holder& x);
/// True when x is a whole float64 1-D array laid out as the matrix's rows. Local.
bool csr_fits_rows(const Csr& a, const Holder& x);
/// A x as a new 1-D float64 array on the row distribution (x must fit the columns).
/// Neighbour-collective.
Holder csr_matvec(const Csr& a, const Holder& x);
/// The diagonal A(i, i) as a new 1-D float64 array on the row distribution. Local.
Holder csr_diagonal(const Csr& a);

/// How spmd::solvers::cg ended (SolveResult, reason as its name).
struct CgOutcome {
  bool converged = false;
  std::string reason, detail;
  int iterations = 0;
  double residual = 0.0, true_residual = 0.0;
  std::vector<double> history;
};
/// spmd::solvers::cg(A, b, x, options) with x the initial guess, overwritten by the solution;
/// b and x fit the rows, distinct arrays. Collective.
CgOutcome csr_cg(const Csr& a, const Holder& b, const Holder& x, double rtol, double atol, int max_iters, bool jacobi,
                 bool reproducible, bool history);

/// Release every matrix's storage (interpreter exit). Local.
void release_matrices();

}  // namespace spmd::py
