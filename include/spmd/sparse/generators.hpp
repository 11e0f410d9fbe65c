#pragma once
/// \file sparse/generators.hpp
/// Model matrices, generated in parallel where they are stored: each rank builds only its own
/// rows (no global assembly anywhere).
///
/// poisson2d(comm, nx, ny) and poisson3d(comm, nx, ny, nz) (and the N-d poisson(comm, shape)):
/// the standard, unscaled finite-difference Laplacian with homogeneous Dirichlet boundaries on
/// the interior unknowns of a grid of extents n_0 x n_1 (x n_2); every grid point is an unknown
/// (the boundary values themselves are not unknowns).
///   * Unknown numbering: row-major, last axis fastest: k = i * ny + j in 2-D,
///     k = (i * ny + j) * nz + l in 3-D. N = product of the extents rows and columns.
///   * Row k: A(k, k) = 2 * dim (4 in 2-D, 6 in 3-D); A(k, m) = -1 for each grid neighbour m of
///     k (one step along one axis, inside the grid: 5-point / 7-point stencil); nothing else.
///     Rows of points next to the boundary simply have fewer -1 entries.
///   * Entries of a row are stored in increasing column order.
///   * nnz = N (1 + 2 dim) - 2 * sum over axes d of N / n_d.
///   * Symmetric positive definite; eigenvalues 2 sum_d (1 - cos(pi m_d / (n_d + 1))),
///     m_d = 1..n_d.
///   * Rows are balanced-block distributed over the communicator (spmd::Distribution<1> of N
///     rows: the first N mod p ranks own one row more); columns likewise (square).
/// convection_diffusion2d(comm, nx, ny, peclet): the nonsymmetric upwind convection-diffusion
/// operator on the same grid and numbering (below), for GMRES and BiCGStab.
/// To build the same matrix in PETSc (peer comparisons): a MATAIJ of global size N x N with
/// PETSC_DECIDE local sizes (PetscSplitOwnership gives the same balanced blocks), and per owned
/// row k one MatSetValues with the columns and values above; or DMDA-free code such as PETSc's
/// KSP tutorial ex2 (which numbers k = i * ny + j the same way in 2-D).

#include <Kokkos_Core.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "spmd/sparse/csr_matrix.hpp"

namespace spmd::sparse {

namespace impl {

/// The stencil rows of the D-dimensional Laplacian: per local row, its entry count, or its
/// entries (columns ascending).
template <int D, class T>
struct PoissonRows {
  Kokkos::Array<index_t, D> n;       // grid extents
  Kokkos::Array<index_t, D> stride;  // row-major strides
  index_t first;                     // global index of the first owned row

  /// Grid coordinate along axis d of unknown k.
  KOKKOS_INLINE_FUNCTION index_t coord(index_t k, int d) const { return (k / stride[d]) % n[d]; }
  /// Number of entries of local row i.
  KOKKOS_INLINE_FUNCTION index_t count(int i) const {
    const index_t k = first + i;
    index_t c = 1;
    for (int d = 0; d < D; ++d) {
      const index_t x = coord(k, d);
      c += (x > 0) + (x + 1 < n[d]);
    }
    return c;
  }
  /// Writes local row i's columns and values at col + at, val + at (ascending columns: the
  /// minus neighbours from the largest stride down, the diagonal, the plus neighbours).
  KOKKOS_INLINE_FUNCTION void fill(int i, index_t at, index_t* col, T* val) const {
    const index_t k = first + i;
    for (int d = 0; d < D; ++d)
      if (coord(k, d) > 0) {
        col[at] = k - stride[d];
        val[at++] = T(-1);
      }
    col[at] = k;
    val[at++] = T(2 * D);
    for (int d = D - 1; d >= 0; --d)
      if (coord(k, d) + 1 < n[d]) {
        col[at] = k + stride[d];
        val[at++] = T(-1);
      }
  }
};

/// The rows of the upwind convection-diffusion operator on a 2-D grid (see
/// convection_diffusion2d): the Laplacian's rows plus c_d on the diagonal and -c_d on the minus
/// neighbour along axis d.
template <class T>
struct ConvectionDiffusionRows : PoissonRows<2, T> {
  T c[2];  // h Pe w_d per axis
  KOKKOS_INLINE_FUNCTION void fill(int i, index_t at, index_t* col, T* val) const {
    const index_t k = this->first + i;
    for (int d = 0; d < 2; ++d)
      if (this->coord(k, d) > 0) {
        col[at] = k - this->stride[d];
        val[at++] = T(-1) - c[d];
      }
    col[at] = k;
    val[at++] = T(4) + c[0] + c[1];
    for (int d = 1; d >= 0; --d)
      if (this->coord(k, d) + 1 < this->n[d]) {
        col[at] = k + this->stride[d];
        val[at++] = T(-1);
      }
  }
};

/// The number of grid points of `shape`, agreed on every rank (an error for negative extents or
/// an overflow). Collective.
template <int D>
index_t grid_points(const Comm& comm, const Index<D>& shape, const char* fn) {
  index_t total = 1;
  spmd::impl::agree(comm, [&] {
    for (int d = 0; d < D; ++d) {
      if (shape[d] < 0) throw Error(str(fn, ": grid extents ", shape_str(shape), " must not be negative"));
      if (shape[d] > 0 && total > std::numeric_limits<index_t>::max() / shape[d])
        throw Error(str(fn, ": grid extents ", shape_str(shape), " overflow the index type"));
      total *= shape[d];
    }
  });
  return total;
}

/// Set a stencil generator's extents and row-major strides for `shape`. Local.
template <int D, class Gen>
void set_grid(Gen& gen, const Index<D>& shape, const Distribution<1>& rows) {
  index_t s = 1;
  for (int d = D - 1; d >= 0; --d) {
    gen.n[d] = shape[d];
    gen.stride[d] = s;
    s *= shape[d];
  }
  gen.first = rows.owned().lo[0];
}

template <class T, class M, class Gen>
CsrMatrix<T, M> stencil_matrix(const Distribution<1>& rows, index_t total, const Gen& gen, const std::string& label);

/// The D-dimensional Laplacian on `shape` (see the file comment). Collective.
template <class T, class M, int D>
CsrMatrix<T, M> poisson(const Comm& comm, const Index<D>& shape, const char* fn) {
  const index_t total = grid_points<D>(comm, shape, fn);
  const Distribution<1> rows(comm, Index<1>{total});
  PoissonRows<D, T> gen{};
  set_grid<D>(gen, shape, rows);
  return stencil_matrix<T, M>(rows, total, gen, str("spmd::sparse::poisson", D, "d"));
}

/// The matrix of a stencil generator's rows (count(i), fill(i, at, col, val) per local row),
/// built on this rank's rows of `rows` on the host. Collective.
template <class T, class M, class Gen>
CsrMatrix<T, M> stencil_matrix(const Distribution<1>& rows, index_t total, const Gen& gen, const std::string& label) {
  const int n = static_cast<int>(rows.owned().extent(0));
  using host_exec = Kokkos::DefaultHostExecutionSpace;
  const auto policy = Kokkos::RangePolicy<host_exec>(host_exec(), 0, n);
  std::vector<index_t> row_ptr(static_cast<std::size_t>(n) + 1, 0);
  index_t* rp = row_ptr.data();
  Kokkos::parallel_scan("spmd::sparse::stencil_matrix::row_ptr", policy,
                        [=](const int i, index_t& sum, const bool last) {
                          sum += gen.count(i);
                          if (last) rp[i + 1] = sum;
                        });
  std::vector<index_t> col(static_cast<std::size_t>(row_ptr.back()));
  std::vector<T> val(col.size());
  index_t* c = col.data();
  T* v = val.data();
  Kokkos::parallel_for("spmd::sparse::stencil_matrix::rows", policy, [=](const int i) { gen.fill(i, rp[i], c, v); });
  return CsrMatrix<T, M>(rows, total, std::move(row_ptr), std::move(col), std::move(val), label);
}

}  // namespace impl

/// The 5-point Laplacian on the interior unknowns of an nx x ny grid (see the file comment).
/// Collective; throws the same spmd::Error on every rank for negative extents.
template <class T = double, class M = DefaultMemorySpace>
CsrMatrix<T, M> poisson2d(const Comm& comm, index_t nx, index_t ny) {
  return impl::poisson<T, M, 2>(comm, Index<2>{nx, ny}, "spmd::sparse::poisson2d");
}

/// The 7-point Laplacian on the interior unknowns of an nx x ny x nz grid. Collective.
template <class T = double, class M = DefaultMemorySpace>
CsrMatrix<T, M> poisson3d(const Comm& comm, index_t nx, index_t ny, index_t nz) {
  return impl::poisson<T, M, 3>(comm, Index<3>{nx, ny, nz}, "spmd::sparse::poisson3d");
}

/// Upwind convection-diffusion on the interior unknowns of an nx x ny grid: -Laplace(u) +
/// Pe (w . grad u) on the unit square with homogeneous Dirichlet boundaries, velocity
/// w = (1, 1) / sqrt(2) (axis 0, axis 1), first-order upwind differences, the rows scaled by h^2
/// (h = 1 / (n_d + 1) per axis in the convection term; the diffusion stencil is poisson2d's, the
/// same for both axes). Row k (point (i, j), k = i ny + j):
///   A(k, k) = 4 + c_0 + c_1,  A(k, k - ny) = -1 - c_0,  A(k, k - 1) = -1 - c_1,
///   A(k, k + ny) = A(k, k + 1) = -1,   with c_d = Pe h_d w_d
/// (neighbours outside the grid omitted). Nonsymmetric for Pe > 0 (poisson2d at Pe = 0), an
/// M-matrix (weakly diagonally dominant, strictly in the rows next to the boundary) for every
/// Pe >= 0. The mesh Peclet number is Pe h |w| / 2. Collective; throws the same spmd::Error on
/// every rank for negative extents or a negative or non-finite Pe.
template <class T = double, class M = DefaultMemorySpace>
CsrMatrix<T, M> convection_diffusion2d(const Comm& comm, index_t nx, index_t ny, double peclet) {
  const char* fn = "spmd::sparse::convection_diffusion2d";
  comm.check(peclet >= 0 && std::isfinite(peclet),
             impl::str(fn, ": the Peclet number ", peclet, " must be finite and not negative"));
  const Index<2> shape{nx, ny};
  const index_t total = impl::grid_points<2>(comm, shape, fn);
  const Distribution<1> rows(comm, Index<1>{total});
  impl::ConvectionDiffusionRows<T> gen{};
  impl::set_grid<2>(gen, shape, rows);
  const double w = 1.0 / std::sqrt(2.0);
  gen.c[0] = static_cast<T>(peclet * w / static_cast<double>(nx + 1));
  gen.c[1] = static_cast<T>(peclet * w / static_cast<double>(ny + 1));
  return impl::stencil_matrix<T, M>(rows, total, gen, "spmd::sparse::convection_diffusion2d");
}

/// The same for any number of dimensions D (1 to 6). Collective.
template <class T = double, class M = DefaultMemorySpace, int D>
CsrMatrix<T, M> poisson(const Comm& comm, const Index<D>& shape) {
  return impl::poisson<T, M, D>(comm, shape, "spmd::sparse::poisson");
}

}  // namespace spmd::sparse
