// spmd::sparse: CsrMatrix built from each rank's rows, the Poisson generators and the Matrix
// Market reader, each checked against a serial CSR reference built on every rank from the same
// rule (the whole matrix; the sizes are small).
//
//   11 x 11 "random" pattern at 4 ranks: rows (and columns) 0..2 | 3..5 | 6..8 | 9..10.
//   Row 0 has entries only in columns 9 and 10 (all off-rank from 2 ranks on), row 1 none,
//   row 2 a repeated entry (they add up). 3 x 3 and 5 x 2 leave ranks without rows (and without
//   columns) at 4 ranks; 9 x 14 and 5 x 2 are not square, so x and y live on different
//   distributions.
#include "spmd_test.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::sparse::CsrMatrix;
using spmd::testing::fill_pattern;
using spmd::testing::pattern_value;
using spmd::testing::sentinel;
using spmd::testing::world;

namespace {

/// A whole matrix in CSR form with global indices (host, every rank).
struct Csr {
  index_t rows = 0, cols = 0;
  std::vector<index_t> ptr{0}, col;
  std::vector<double> val;
  void add(index_t j, double v) {
    col.push_back(j);
    val.push_back(v);
  }
  void end_row() { ptr.push_back(static_cast<index_t>(col.size())); }
  index_t nnz() const { return static_cast<index_t>(col.size()); }
  /// Serial y = alpha A x + beta y.
  std::vector<double> spmv(double alpha, const std::vector<double>& x, double beta, std::vector<double> y) const {
    for (index_t i = 0; i < rows; ++i) {
      double s = 0;
      for (index_t k = ptr[i]; k < ptr[i + 1]; ++k) s += val[k] * x[col[k]];
      y[i] = alpha * s + (beta == 0.0 ? 0.0 : beta * y[i]);
    }
    return y;
  }
  std::vector<double> diagonal() const {
    std::vector<double> d(static_cast<std::size_t>(rows), 0.0);
    for (index_t i = 0; i < rows; ++i)
      for (index_t k = ptr[i]; k < ptr[i + 1]; ++k)
        if (col[k] == i) d[i] += val[k];
    return d;
  }
};

/// A deterministic "random" pattern (see the file comment for its special rows).
Csr random_matrix(index_t m, index_t n) {
  Csr a;
  a.rows = m;
  a.cols = n;
  for (index_t i = 0; i < m; ++i) {
    if (i == 0) {
      a.add(n - 1, 1.5);
      if (n > 1) a.add(n - 2, -2.0);
    } else if (i != 1) {
      for (index_t j = n - 1; j >= 0; --j) {  // descending: the constructor takes any order
        const unsigned h = static_cast<unsigned>(i * 7919 + j * 104729) % 13u;
        if (h < 4 || j == i) a.add(j, 0.25 * static_cast<double>(h) + static_cast<double>(i) - 0.5 * j);
      }
      if (i == 2 && n > 3) a.add(3, 10.0);  // a repeated (row, column) entry: adds up
    }
    a.end_row();
  }
  return a;
}

Distribution<1> line(index_t n, int h = 0) {
  spmd::impl::DistributionOptions o;
  o.halo = {h};
  return Distribution<1>(world(), Index<1>{n}, o);
}

/// This rank's rows of `a` (global columns) as the constructor takes them.
CsrMatrix<double> from_rows(const Csr& a, const Distribution<1>& rows) {
  const index_t lo = rows.owned().lo[0], hi = rows.owned().hi[0];
  std::vector<index_t> ptr{0}, col;
  std::vector<double> val;
  for (index_t i = lo; i < hi; ++i) {
    for (index_t k = a.ptr[i]; k < a.ptr[i + 1]; ++k) {
      col.push_back(a.col[k]);
      val.push_back(a.val[k]);
    }
    ptr.push_back(static_cast<index_t>(col.size()));
  }
  return CsrMatrix<double>(rows, a.cols, std::move(ptr), std::move(col), std::move(val), "test::A");
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  bool ok = got.size() == want.size();
  if (!ok) ADD_FAILURE() << what << ": " << got.size() << " values, want " << want.size();
  for (std::size_t i = 0; ok && i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-12 * (1.0 + std::abs(want[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
      ok = false;
    }
  spmd::testing::expect_all(ok, what.c_str());
}

/// A's y = alpha A x + beta y against the reference, x and y with the given halos (whose
/// points must keep the sentinel), plus the global counts and the diagonal.
void check_matrix(const CsrMatrix<double>& A, const Csr& ref, double alpha, double beta, int hx = 0, int hy = 0,
                  const std::string& what = "spmv") {
  EXPECT_EQ(A.rows(), ref.rows);
  EXPECT_EQ(A.cols(), ref.cols);
  EXPECT_EQ(A.nnz(), ref.nnz());
  EXPECT_EQ(world().allreduce(A.local_nnz(), spmd::Op::sum), ref.nnz());
  Array<double, 1> x(hx == 0 ? A.col_distribution() : line(ref.cols, hx), "test::x");
  Array<double, 1> y(hy == 0 ? A.row_distribution() : line(ref.rows, hy), "test::y");
  fill_pattern(x, -4.5);
  fill_pattern(y, 1.25);
  const auto hx0 = spmd::allgather(x);
  const auto want = ref.spmv(alpha, hx0, beta, spmd::allgather(y));
  const auto x_before = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.local_with_halo());
  if (alpha == 1.0 && beta == 0.0)
    A.apply(x, y);
  else
    A.spmv(alpha, x, beta, y);
  expect_close(spmd::allgather(y), want, what);
  // Only owned points are touched: x is unchanged, y's halo keeps the sentinel.
  const auto x_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.local_with_halo());
  const auto y_after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y.local_with_halo());
  bool ok = true;
  for (std::size_t k = 0; k < x_after.extent(0); ++k) ok = ok && x_after(k) == x_before(k);
  for (int k = 0; k < hy; ++k) ok = ok && y_after(k) == sentinel && y_after(y_after.extent(0) - 1 - k) == sentinel;
  spmd::testing::expect_all(ok, (what + ": points outside the owned blocks were touched").c_str());
  auto d = A.make_vector("test::d");
  A.diagonal(d);
  if (ref.rows == ref.cols) expect_close(spmd::allgather(d), ref.diagonal(), what + ": diagonal");
}

/// The D-dimensional Laplacian by its definition (independent of the generator's code).
template <int D>
Csr laplacian(const Index<D>& n) {
  Csr a;
  index_t total = 1;
  for (int d = 0; d < D; ++d) total *= n[d];
  a.rows = a.cols = total;
  const spmd::Box<D> grid{Index<D>{}, n};
  spmd::for_each_index(grid, [&](const Index<D>& p) {
    auto number = [&](const Index<D>& q) {
      index_t k = 0;
      for (int d = 0; d < D; ++d) k = k * n[d] + q[d];
      return k;
    };
    for (int d = 0; d < D; ++d)
      for (int s : {-1, 1}) {
        Index<D> q = p;
        q[d] += s;
        if (q[d] >= 0 && q[d] < n[d]) a.add(number(q), -1.0);
      }
    a.add(number(p), 2.0 * D);
    a.end_row();
  });
  return a;
}

}  // namespace

TEST(Sparse, FromLocalRows) {
  for (const auto& mn : {std::pair<index_t, index_t>{11, 11}, {3, 3}, {9, 14}, {5, 2}, {4, 1}}) {
    const Csr ref = random_matrix(mn.first, mn.second);
    const auto A = from_rows(ref, line(mn.first));
    check_matrix(A, ref, 1.0, 0.0, 0, 0, "apply " + std::to_string(mn.first) + "x" + std::to_string(mn.second));
    check_matrix(A, ref, -2.0, 0.5, 0, 0, "spmv " + std::to_string(mn.first) + "x" + std::to_string(mn.second));
  }
}

TEST(Sparse, Halos) {
  const Csr ref = random_matrix(11, 11);
  const auto A = from_rows(ref, line(11, 1));
  check_matrix(A, ref, 1.5, -1.0, 1, 2, "halos");
  check_matrix(A, ref, 1.0, 0.0, 2, 1, "halos");
}

TEST(Sparse, LayoutMismatch) {
  const Csr ref = random_matrix(9, 14);
  const auto A = from_rows(ref, line(9));
  Array<double, 1> x(line(9), "test::x9"), y(line(9), "test::y9");
  SPMD_EXPECT_COLLECTIVE_ERROR(A.apply(x, y), "x 'test::x9' has shape {9}");
  Array<double, 1> x14(line(14), "test::x14");
  SPMD_EXPECT_COLLECTIVE_ERROR(A.apply(x14, x14), "y 'test::x14' has shape {14}");
  SPMD_EXPECT_COLLECTIVE_ERROR(A.diagonal(x14), "spmd::sparse::CsrMatrix::diagonal");
}

TEST(Sparse, ConstructorErrors) {
  const Distribution<1> rows = line(7);
  const index_t n = rows.owned().extent(0);
  const int last = world().size() - 1;
  // Only the last rank's arrays are wrong: every rank throws the same error.
  auto build = [&](int bad) {
    std::vector<index_t> ptr(static_cast<std::size_t>(n + 1), 0), col;
    std::vector<double> val;
    if (world().rank() == last) {
      if (bad == 0) ptr.push_back(0);
      if (bad == 1 && n > 0) {
        ptr.back() = 1;
        col.push_back(7);
        val.push_back(1.0);
      }
    }
    return CsrMatrix<double>(rows, 7, std::move(ptr), std::move(col), std::move(val), "test::bad");
  };
  SPMD_EXPECT_COLLECTIVE_ERROR(build(0), "row_ptr has");
  if (world().size() <= 4)  // the last rank owns rows of 7 at up to 7 ranks
    SPMD_EXPECT_COLLECTIVE_ERROR(build(1), "column index 7 of global row");
  const index_t cols = world().rank() == 0 ? 7 : 8;
  if (world().size() > 1)
    SPMD_EXPECT_COLLECTIVE_ERROR(CsrMatrix<double>(rows, cols, std::vector<index_t>(n + 1, 0), {}, {}),
                                 "different or negative column counts");
}

TEST(Sparse, Poisson) {
  const Index<2> grids2[] = {{5, 7}, {1, 2}, {3, 1}};
  for (const auto& g : grids2) {
    const auto A = spmd::sparse::poisson2d(world(), g[0], g[1]);
    const Csr ref = laplacian<2>(g);
    EXPECT_EQ(ref.nnz(), 5 * g[0] * g[1] - 2 * g[0] - 2 * g[1]);
    check_matrix(A, ref, 1.0, 0.0, 0, 0, "poisson2d " + spmd::impl::shape_str(g));
  }
  const Index<3> grids3[] = {{3, 4, 5}, {1, 1, 2}};
  for (const auto& g : grids3) {
    const auto A = spmd::sparse::poisson3d(world(), g[0], g[1], g[2]);
    const Csr ref = laplacian<3>(g);
    check_matrix(A, ref, 0.5, 2.0, 0, 0, "poisson3d " + spmd::impl::shape_str(g));
  }
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sparse::poisson2d(world(), 4, -1), "spmd::sparse::poisson2d");
}
