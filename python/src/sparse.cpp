// Sparse matrices and CG of the binding: spmd::sparse::CsrMatrix<double> (from each rank's CSR
// rows, or the library's generators), y = A x, the diagonal, and spmd::solvers::cg with the
// library's verdict. Only float64 matrices (the Python layer converts or refuses the others).

#include "sparse.hpp"
#include "result.hpp"

#include <spmd/solvers/cg.hpp>
#include <spmd/sparse.hpp>

#include <algorithm>
#include <climits>
#include <optional>

namespace spmd::py {

using Matrix = sparse::CsrMatrix<double>;
using Vector = Matrix::vector_type;

struct CsrBox {
  std::optional<Matrix> m;
};

namespace {

Registry<CsrBox>& boxes() {
  static Registry<CsrBox> r;
  return r;
}

Csr wrap(Matrix m) {
  Csr c{std::make_shared<CsrBox>()};
  c.box->m.emplace(std::move(m));
  boxes().add(c.box);
  return c;
}

const Matrix& matrix(const Csr& a) {
  if (!a.box || !a.box->m) throw Error::replicated("spmdarray.sparse: the matrix was released (spmdarray finalized)");
  return *a.box->m;
}

bool fits(const Holder& x, const Distribution<1>& d) {
  return x.dtype() == DType::f64 && x.prank() == 1 && x.whole() && x.array<double, 1>().distribution().same_layout(d);
}

const Vector& vector_of(const char* fn, const char* what, const Holder& x, const Distribution<1>& d) {
  if (!fits(x, d))
    throw Error::replicated(
        impl::str(fn, ": internal error: ", what, " is not a whole float64 vector laid out as (", d.describe(), ")"));
  return x.array<double, 1>();
}

}  // namespace

std::pair<index_t, index_t> owned_rows(const Comm& comm, index_t n) {
  const Distribution<1> d(comm, Index<1>{n});
  return {d.owned().lo[0], d.owned().hi[0]};
}

Csr csr_from_local(const Comm& comm, index_t nrows, index_t ncols, index_t block_cols, const index_t* indptr,
                   std::size_t n_indptr, const index_t* indices, const double* data, std::size_t n_entries,
                   const std::string& label) {
  const char* fn = "spmdarray.sparse.csr_matrix";
  const int me = comm.rank();
  const index_t local_rows = static_cast<index_t>(n_indptr) - 1;
  // the column count: the same on every rank, and the one given
  index_t range[2] = {block_cols, -block_cols};
  comm.allreduce(range, 2, Op::max);
  std::string err;
  if (ncols >= 0 && block_cols != ncols)
    err = impl::str(fn, ": rank ", me, "'s block has ", block_cols, " columns; the matrix has ", ncols,
                    " (shape[1]): each rank's block holds whole rows, every column");
  comm.check(err.empty(), err);
  if (range[0] != -range[1])
    throw Error::replicated(impl::str(fn, ": the ranks' blocks have different column counts (from ", -range[1], " to ",
                                      range[0], "): each rank's block holds whole rows of the same matrix"));
  // the row count: the given one, or the sum of the blocks
  const index_t total = nrows >= 0 ? nrows : comm.allreduce(std::max<index_t>(local_rows, 0), Op::sum);
  index_t agreed[2] = {total, -total};
  comm.allreduce(agreed, 2, Op::max);
  if (agreed[0] != -agreed[1])
    throw Error::replicated(
        impl::str(fn, ": the ranks pass different row counts (shape[0] from ", -agreed[1], " to ", agreed[0], ")"));
  const Distribution<1> rows(comm, Index<1>{total});
  const index_t lo = rows.owned().lo[0], want = rows.owned().extent(0);
  if (local_rows != want)
    err = impl::str(fn, ": rank ", me, "'s block has ", local_rows, " rows; rank ", me, " owns rows [", lo, ", ",
                    lo + want, ") of ", total, " (those of a 1-D spmdarray vector of length ", total,
                    ", spmdarray.sparse.owned_rows(", total, ")): ", want, " rows expected");
  else if (n_indptr > 0 && static_cast<std::size_t>(std::max<index_t>(indptr[n_indptr - 1], 0)) != n_entries)
    err = impl::str(fn, ": rank ", me, "'s block: indptr[-1] is ", indptr[n_indptr - 1], " but ", n_entries,
                    " entries are given");
  comm.check(err.empty(), err);
  std::vector<index_t> rp(indptr, indptr + n_indptr), col(indices, indices + n_entries);
  std::vector<double> val(data, data + n_entries);
  return wrap(Matrix(rows, range[0], std::move(rp), std::move(col), std::move(val),
                     label.empty() ? std::string("spmdarray.sparse.csr_matrix") : label));
}

Csr csr_poisson(const Comm& comm, const std::vector<index_t>& shape) {
  if (shape.size() == 2) return wrap(sparse::poisson2d<double>(comm, shape[0], shape[1]));
  if (shape.size() == 3) return wrap(sparse::poisson3d<double>(comm, shape[0], shape[1], shape[2]));
  throw Error::replicated(impl::str("spmdarray.sparse.poisson: a grid of 2 or 3 extents (", shape.size(), " given)"));
}

Csr csr_convection_diffusion2d(const Comm& comm, index_t nx, index_t ny, double peclet) {
  return wrap(sparse::convection_diffusion2d<double>(comm, nx, ny, peclet));
}

CsrInfo csr_info(const Csr& a) {
  const Matrix& m = matrix(a);
  CsrInfo i;
  i.rows = m.rows();
  i.cols = m.cols();
  i.nnz = m.nnz();
  i.local_nnz = m.local_nnz();
  i.row_lo = m.row_distribution().owned().lo[0];
  i.row_hi = m.row_distribution().owned().hi[0];
  i.col_lo = m.col_distribution().owned().lo[0];
  i.col_hi = m.col_distribution().owned().hi[0];
  i.label = m.label();
  return i;
}

Comm csr_comm(const Csr& a) {
  return matrix(a).comm();
}

bool csr_fits_columns(const Csr& a, const Holder& x) {
  return fits(x, matrix(a).col_distribution());
}
bool csr_fits_rows(const Csr& a, const Holder& x) {
  return fits(x, matrix(a).row_distribution());
}

Holder csr_matvec(const Csr& a, const Holder& x) {
  const Matrix& m = matrix(a);
  const Vector& xv = vector_of("spmdarray.sparse.csr_matrix.dot", "x", x, m.col_distribution());
  Vector y = m.make_vector("spmdarray.sparse.dot");
  m.apply(xv, y);
  return holder_of(std::move(y));
}

Holder csr_diagonal(const Csr& a) {
  const Matrix& m = matrix(a);
  Vector d = m.make_vector("spmdarray.sparse.diagonal");
  m.diagonal(d);
  return holder_of(std::move(d));
}

CgOutcome csr_cg(const Csr& a, const Holder& b, const Holder& x, double rtol, double atol, int max_iters, bool jacobi,
                 bool reproducible, bool history) {
  const Matrix& m = matrix(a);
  const char* fn = "spmdarray.linalg.cg";
  const Vector& bv = vector_of(fn, "b", b, m.row_distribution());
  const Vector& xv = vector_of(fn, "x", x, m.row_distribution());
  solvers::SolverOptions o;
  o.rtol = rtol;
  o.atol = atol;
  o.max_iters = max_iters;
  o.precond = jacobi ? solvers::Precond::jacobi : solvers::Precond::none;
  o.reproducible = reproducible;
  o.keep_history = history;
  const solvers::SolveResult r = solvers::cg(m, bv, xv, o);
  x.parent->halo_stale = true;
  CgOutcome out;
  out.converged = r.converged;
  out.reason = solvers::to_string(r.reason);
  out.detail = r.detail;
  out.iterations = r.iterations;
  out.residual = r.residual;
  out.true_residual = r.true_residual;
  out.history = r.history;
  return out;
}

void release_matrices() {
  boxes().release_all([](CsrBox& b) { b.m.reset(); });
}

}  // namespace spmd::py
