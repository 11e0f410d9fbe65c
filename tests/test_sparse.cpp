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

#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

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
/// True where CsrMatrix takes its host forms (a host execution space, unless the testing knob
/// point_items asks for the device forms): SELL chunks of sell_heights rows; else chunks of
/// sell_device_height rows (a row per thread).
bool host_kernels() {
  return spmd::impl::host_accessible<spmd::DefaultMemorySpace>() &&
         spmd::impl::host_accessible<Kokkos::DefaultExecutionSpace::memory_space>() &&
         !spmd::testing::knobs().point_items;
}
}  // namespace

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
  /// The matrix as CsrMatrix stores it: a row that holds a column twice has its entries in
  /// column order, repeats added up in the order given; the other rows as they are.
  Csr merged() const {
    Csr m;
    m.rows = rows;
    m.cols = cols;
    for (index_t i = 0; i < rows; ++i) {
      std::vector<std::pair<index_t, double>> e;
      for (index_t k = ptr[i]; k < ptr[i + 1]; ++k) e.emplace_back(col[k], val[k]);
      std::vector<index_t> c(col.begin() + ptr[i], col.begin() + ptr[i + 1]);
      std::sort(c.begin(), c.end());
      if (std::adjacent_find(c.begin(), c.end()) != c.end()) {
        std::stable_sort(e.begin(), e.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        std::vector<std::pair<index_t, double>> sum;
        for (const auto& x : e)
          if (!sum.empty() && sum.back().first == x.first)
            sum.back().second += x.second;
          else
            sum.push_back(x);
        e = sum;
      }
      for (const auto& x : e) m.add(x.first, x.second);
      m.end_row();
    }
    return m;
  }
  /// Entries with repeated (row, column) pairs counted once (what the matrix stores).
  index_t distinct_nnz() const {
    index_t n = 0;
    for (index_t i = 0; i < rows; ++i) {
      std::vector<index_t> c(col.begin() + ptr[i], col.begin() + ptr[i + 1]);
      std::sort(c.begin(), c.end());
      n += static_cast<index_t>(std::unique(c.begin(), c.end()) - c.begin());
    }
    return n;
  }
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
  spmd::DistributionOptions o;
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
    if (!(std::abs(got[i] - want[i]) <= 1e-12 * (1.0 + std::abs(want[i])))) {  // NaN fails
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
  EXPECT_EQ(A.nnz(), ref.distinct_nnz());
  EXPECT_EQ(world().allreduce(A.local_nnz(), spmd::Op::sum), ref.distinct_nnz());
  Array<double, 1> x(hx == 0 ? A.col_distribution() : line(ref.cols, hx), spmd::label("test::x"));
  Array<double, 1> y(hy == 0 ? A.row_distribution() : line(ref.rows, hy), spmd::label("test::y"));
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

TEST(Sparse, RepeatedEntriesAddUp) {
  // Every row repeats column 0 (and its own diagonal where it has one): at 3-4 ranks a rank's
  // diagonal block is 2 x 1 with 6 entries, more than rows x columns, which cuSPARSE refuses
  // (the H200 crashed in Kokkos Kernels before the constructor added repeats up).
  for (const index_t cols : {index_t(1), index_t(3), index_t(8)}) {
    Csr a;
    a.rows = 8;
    a.cols = cols;
    for (index_t i = 0; i < a.rows; ++i) {
      a.add(0, 1.0);
      if (i < cols) a.add(i, 0.5 * static_cast<double>(i + 1));
      a.add(0, 2.0);
      a.add(0, 4.0);
      if (i < cols) a.add(i, -0.25);
      a.end_row();
    }
    const auto A = from_rows(a, line(a.rows));
    check_matrix(A, a, 1.0, 0.0, 0, 0, "repeats, " + std::to_string(cols) + " columns");
    check_matrix(A, a, -1.5, 2.0, 0, 0, "repeats, spmv, " + std::to_string(cols) + " columns");
  }
}

TEST(Sparse, Halos) {
  const Csr ref = random_matrix(11, 11);
  const auto A = from_rows(ref, line(11, 1));
  check_matrix(A, ref, 1.5, -1.0, 1, 2, "halos");
  check_matrix(A, ref, 1.0, 0.0, 2, 1, "halos");
}

TEST(Sparse, SplitPhases) {
  // The phases spmv is made of, called one by one (as a benchmark or a solver does), with other
  // work between import_begin and import_end; and the misuse of the split import.
  const Csr ref = random_matrix(11, 11);
  const auto A = from_rows(ref, line(11));
  auto x = A.make_vector("test::x"), y = A.make_vector("test::y"), z = A.make_vector("test::z");
  fill_pattern(x, 0.5);
  fill_pattern(y, -1.0);
  const auto want = ref.spmv(3.0, spmd::allgather(x), -2.0, spmd::allgather(y));
  A.import_begin(x);
  EXPECT_THROW(A.import_begin(x), spmd::Error);
  A.spmv_diagonal(3.0, x, -2.0, y);
  spmd::fill(z, 7.0);  // unrelated work while the ghosts travel
  A.import_end();
  A.spmv_offdiagonal(3.0, y);
  expect_close(spmd::allgather(y), want, "split phases");
  EXPECT_THROW(A.import_end(), spmd::Error);
  if (world().size() == 1) {
    EXPECT_EQ(A.import_plan().num_ghosts(), 0);
  } else if (world().rank() == 0) {
    EXPECT_GE(A.import_plan().num_ghosts(), 2);  // row 0's columns 9 and 10 live on the last rank
  }
  EXPECT_EQ(world().allreduce(A.import_plan().num_sent(), spmd::Op::sum),
            world().allreduce(A.import_plan().num_ghosts(), spmd::Op::sum));
  EXPECT_NE(A.import_plan().backend(), spmd::Backend::automatic);
}

TEST(Sparse, LayoutMismatch) {
  const Csr ref = random_matrix(9, 14);
  const auto A = from_rows(ref, line(9));
  Array<double, 1> x(line(9), spmd::label("test::x9")), y(line(9), spmd::label("test::y9"));
  SPMD_EXPECT_COLLECTIVE_ERROR(A.apply(x, y), "x 'test::x9' (shape {9} on process grid");
  Array<double, 1> x14(line(14), spmd::label("test::x14"));
  SPMD_EXPECT_COLLECTIVE_ERROR(A.apply(x14, x14), "y 'test::x14' (shape {14} on process grid");
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

// ---- the SELL form of the diagonal block -------------------------------------------------------

namespace {

/// A banded m x m matrix with rows of irregular length: row i has the columns i-3..i+3 that lie
/// in the matrix, less one of them on two rows of three, plus column i+4 (i-4 at the end) on some
/// of those (4 to 7 entries); every 37th row is empty; odd rows list their columns in
/// descending order.
///   block > 0:     the rows of every other block of `block` rows have only the 3 columns
///                  i-1..i+1: chunks of `block` rows pad little, chunks of 2 `block` rows much;
///   wide_from < m: from row wide_from on, every 8th row has the 25 columns i-12..i+12: their
///                  chunks pad the other rows to 25 slots, so the ranks that own such rows
///                  store their diagonal block as CSR.
Csr banded(index_t m, index_t wide_from, index_t block = 0) {
  Csr a;
  a.rows = a.cols = m;
  for (index_t i = 0; i < m; ++i) {
    const bool wide = i >= wide_from && i % 8 == 0;
    const bool narrow = block > 0 && (i / block) % 2 == 0 && !wide;
    const index_t reach = wide ? 12 : narrow ? 1 : 3;
    index_t drop = i % 3 == 0 || wide || narrow ? m : (i * 5) % 7 - 3;
    if (drop == 0) drop = 3;
    std::vector<index_t> cols;
    for (index_t d = -reach; d <= reach && i % 37 != 5; ++d)
      if (i + d >= 0 && i + d < m && d != drop) cols.push_back(i + d);
    if (i % 2 == 1) std::reverse(cols.begin(), cols.end());
    for (const index_t j : cols) a.add(j, j == i ? 8.0 + 0.01 * static_cast<double>(i) : -0.5 - 0.001 * (i - j));
    // one more column on some rows (the lengths the storage tests were tuned for; repeated
    // entries, which the constructor adds up into one, are RepeatedEntriesAddUp's)
    if (!cols.empty() && drop < m && i % 5 == 1) a.add(i + 4 < m ? i + 4 : i - 4, 0.25);
    a.end_row();
  }
  return a;
}

/// The reference of this rank's diagonal-block storage (A's distributions, a's entries): the
/// largest chunk height C of sell_heights for which chunks of C consecutive rows, each padded to
/// its longest row (the last one also to C rows), pad at most sell_max_padding of the entries;
/// CSR if none does.
spmd::sparse::BlockStorage expected_storage(const Csr& a, const CsrMatrix<double>& A) {
  const index_t lo = A.row_distribution().owned().lo[0], hi = A.row_distribution().owned().hi[0];
  const index_t clo = A.col_distribution().owned().lo[0], chi = A.col_distribution().owned().hi[0];
  std::vector<index_t> len;
  for (index_t i = lo; i < hi; ++i) {
    len.push_back(0);
    for (index_t k = a.ptr[i]; k < a.ptr[i + 1]; ++k) len.back() += a.col[k] >= clo && a.col[k] < chi;
  }
  spmd::sparse::BlockStorage s;
  s.rows = hi - lo;
  for (const index_t l : len) s.entries += l;
  s.slots = s.entries;
  std::vector<int> heights(std::begin(spmd::sparse::impl::sell_heights), std::end(spmd::sparse::impl::sell_heights));
  if (!host_kernels()) heights = {spmd::sparse::impl::sell_device_height};
  for (const int C : heights) {
    index_t slots = 0;
    for (std::size_t c = 0; c < len.size(); c += C)
      slots += C * *std::max_element(len.begin() + c, len.begin() + std::min(len.size(), c + C));
    if (slots - s.entries <= spmd::sparse::impl::sell_max_padding * s.entries) {
      s.sliced = true;
      s.chunk = C;
      s.slots = slots;
      s.chunks = (s.rows + C - 1) / C;
      break;
    }
  }
  return s;
}

/// A's diagonal block in CSR form (diagonal_block()) against this rank's rows of `a`: the
/// entries with owned columns, in the order given, with local column indices.
void check_diagonal_block(const CsrMatrix<double>& A, const Csr& a, const std::string& what) {
  const auto D = A.diagonal_block();
  const index_t lo = A.row_distribution().owned().lo[0], hi = A.row_distribution().owned().hi[0];
  const index_t clo = A.col_distribution().owned().lo[0], chi = A.col_distribution().owned().hi[0];
  const auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), D.graph.row_map);
  const auto col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), D.graph.entries);
  const auto val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), D.values);
  bool ok =
      D.numRows() == hi - lo && D.numCols() == chi - clo && ptr.extent(0) == static_cast<std::size_t>(hi - lo + 1);
  for (index_t i = lo; ok && i < hi; ++i) {
    index_t e = ptr(i - lo);
    for (index_t k = a.ptr[i]; ok && k < a.ptr[i + 1]; ++k)
      if (a.col[k] >= clo && a.col[k] < chi) {
        ok = e < ptr(i - lo + 1) && col(e) == a.col[k] - clo && val(e) == a.val[k];
        ++e;
      }
    ok = ok && e == ptr(i - lo + 1);
  }
  spmd::testing::expect_all(ok, (what + ": diagonal_block()").c_str());
}

}  // namespace

namespace {
/// Returns how many (case, rank) pairs stored the block in SELL form.
int sell_form() {
  int stored_sell = 0;
  // 803 = 16 * 50 + 3 rows: at 1 to 4 ranks no rank's row count is a multiple of a chunk height.
  // The cases and the chunk height they get at one rank (other rank counts shift the rows
  // against the chunks: the storage is checked against the reference there):
  //   regular  16   (padding 13%: irregular rows, empty rows, a partial last chunk)
  //   blocks8   8   (16 would pad 55%)
  //   blocks4   4
  //   mixed     CSR at one rank; SELL on the ranks before row m/2, CSR from it on
  //   wide      CSR on every rank: the fallback
  // In the device forms (host_kernels() false: chunks of 32 rows) the storage is checked against
  // the reference alone; the products are checked the same way.
  const index_t m = 803;
  struct Case {
    const char* name;
    index_t wide_from, block;
    int chunk;  // at one rank (1: CSR)
  };
  const Case cases[] = {
      {"regular", m, 0, 16}, {"blocks8", m, 8, 8}, {"blocks4", m, 4, 4}, {"mixed", m / 2, 0, 1}, {"wide", 0, 0, 1}};
  for (const Case& c : cases) {
    const std::string what = std::string("banded ") + c.name;
    const Csr ref = banded(m, c.wide_from, c.block);
    const auto A = from_rows(ref, line(m));
    const auto want = expected_storage(ref.merged(), A);
    const auto& got = A.diagonal_storage();
    const bool same = got.sliced == want.sliced && got.chunk == want.chunk && got.rows == want.rows &&
                      got.entries == want.entries && got.slots == want.slots && got.chunks == want.chunks;
    spmd::testing::expect_all(same, (what + ": diagonal_storage()").c_str());
    const bool host = host_kernels();
    EXPECT_EQ(got.chunk, !host ? (want.sliced ? want.chunk : 1) : world().size() == 1 ? c.chunk : want.chunk) << what;
    // Both forms are exercised at every rank count (on host spaces): the ranks that store SELL.
    const int sliced = world().allreduce(got.sliced ? 1 : 0, spmd::Op::sum);
    stored_sell += sliced;
    const int p = world().size();
    const int want_sliced = c.wide_from == 0 ? 0 : c.wide_from == m / 2 ? p / 2 : c.block == 0 ? p : sliced;
    if (host) {
      EXPECT_EQ(sliced, want_sliced) << what;
    }
    check_matrix(A, ref, 1.0, 0.0, 0, 0, what + " apply");
    check_matrix(A, ref, -2.0, 0.5, 1, 2, what + " alpha -2, beta 0.5");
    check_matrix(A, ref, 0.75, 0.0, 0, 0, what + " alpha 0.75, beta 0");
    check_matrix(A, ref, 1.0, 1.0, 0, 0, what + " alpha 1, beta 1");
    // beta == 0: y's old values are not read (NaN stays out).
    auto x = A.make_vector("test::x"), y = A.make_vector("test::y");
    fill_pattern(x, 0.5);
    spmd::fill(y, std::numeric_limits<double>::quiet_NaN());
    A.spmv(1.5, x, 0.0, y);
    expect_close(spmd::allgather(y), ref.spmv(1.5, spmd::allgather(x), 0.0, std::vector<double>(m, 0.0)),
                 what + ": beta 0 with NaN in y");
    // alpha == 0: neither A nor x is read, as by KokkosSparse::spmv (NaN in x stays out).
    spmd::fill(x, std::numeric_limits<double>::quiet_NaN());
    fill_pattern(y, 1.25);
    const auto y0 = spmd::allgather(y);
    A.spmv(0.0, x, 0.5, y);
    expect_close(spmd::allgather(y), ref.spmv(0.0, std::vector<double>(m, 0.0), 0.5, y0),
                 what + ": alpha 0 with NaN in x");
    check_diagonal_block(A, ref.merged(), what);
  }
  return stored_sell;
}
}  // namespace

TEST(Sparse, SellForm) {
  sell_form();
}

TEST(Sparse, SellFormOfDevices) {
  // the device form (chunks of a warp's rows, a row per work item) on the host
  spmd::testing::KnobsGuard guard;
  spmd::testing::knobs().point_items = true;
  EXPECT_GT(sell_form(), 0) << "no case exercised the device's SELL kernel";
}

// ---- Matrix Market -------------------------------------------------------------------------------

namespace {

/// A fresh directory per test: rank 0 makes it and removes it (after a barrier) at the end.
class TempDir {
 public:
  TempDir() {
    std::array<char, 256> name{};
    if (world().rank() == 0) {
      const char* base = std::getenv("TMPDIR");
      std::string templ = std::string(base && *base ? base : "/tmp") + "/spmd_sparse_XXXXXX";
      if (templ.size() < name.size() && mkdtemp(templ.data())) std::copy(templ.begin(), templ.end(), name.begin());
    }
    world().bcast(name.data(), static_cast<int>(name.size()), 0);
    path_ = name.data();
  }
  ~TempDir() {
    world().barrier();
    if (world().rank() == 0 && !path_.empty()) std::filesystem::remove_all(path_);
  }
  /// Rank 0 writes the file (call sync() before reading). Returns its path on every rank.
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    if (world().rank() == 0) std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  void sync() const { world().barrier(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// `a` with the entries of each row sorted by column and repeated ones summed.
Csr merged(const Csr& a) {
  Csr m;
  m.rows = a.rows;
  m.cols = a.cols;
  for (index_t i = 0; i < a.rows; ++i) {
    std::vector<std::pair<index_t, double>> row;
    for (index_t k = a.ptr[i]; k < a.ptr[i + 1]; ++k) row.emplace_back(a.col[k], a.val[k]);
    std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (std::size_t k = 0; k < row.size(); ++k) {
      if (k > 0 && row[k].first == row[k - 1].first)
        m.val.back() += row[k].second;
      else
        m.add(row[k].first, row[k].second);
    }
    m.end_row();
  }
  return m;
}

/// `a` in Matrix Market form: entries last row first, every third one split into two lines
/// that add up (the reader must sum them), comments and a blank line in between.
std::string market(const Csr& a, const std::string& banner, bool lower_only = false, bool values = true) {
  std::vector<std::string> lines;
  for (index_t i = a.rows - 1; i >= 0; --i)
    for (index_t k = a.ptr[i]; k < a.ptr[i + 1]; ++k) {
      if (lower_only && a.col[k] > i) continue;
      const std::string ij = std::to_string(i + 1) + " " + std::to_string(a.col[k] + 1);
      char v[64];
      if (!values) {
        lines.push_back(ij);
      } else if (lines.size() % 3 == 2) {
        std::snprintf(v, sizeof(v), " %.17g", a.val[k] - 1.0);
        lines.push_back(ij + v);
        lines.push_back(ij + " 1");
      } else {
        std::snprintf(v, sizeof(v), " %.17g", a.val[k]);
        lines.push_back(ij + v);
      }
    }
  std::string s = banner + "\n% written by test_sparse\n%\n" + std::to_string(a.rows) + " " + std::to_string(a.cols) +
                  " " + std::to_string(lines.size()) + "\n";
  for (std::size_t k = 0; k < lines.size(); ++k) s += lines[k] + (k == lines.size() / 2 ? "\n\n" : "\n");
  return s;
}

/// A symmetric n x n matrix (full storage) from the random pattern's lower triangle.
Csr symmetric(index_t n) {
  const Csr r = merged(random_matrix(n, n));
  std::vector<double> dense(static_cast<std::size_t>(n * n), 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t k = r.ptr[i]; k < r.ptr[i + 1]; ++k)
      if (r.col[k] <= i) dense[i * n + r.col[k]] = dense[r.col[k] * n + i] = r.val[k] + 0.5;
  Csr s;
  s.rows = s.cols = n;
  for (index_t i = 0; i < n; ++i) {
    for (index_t j = 0; j < n; ++j)
      if (dense[i * n + j] != 0.0) s.add(j, dense[i * n + j]);
    s.end_row();
  }
  return s;
}

}  // namespace

TEST(Sparse, MatrixMarket) {
  TempDir dir;
  const Csr general = merged(random_matrix(11, 11)), wide = merged(random_matrix(5, 9)), sym = symmetric(10);
  Csr ints = merged(random_matrix(6, 4)), pat = merged(random_matrix(7, 3));
  for (auto& v : ints.val) v = std::round(v);
  for (auto& v : pat.val) v = 1.0;
  const auto f1 = dir.write("general.mtx", market(general, "%%MatrixMarket matrix coordinate real general"));
  const auto f2 = dir.write("wide.mtx", market(wide, "%%MatrixMarket matrix coordinate double general"));
  const auto f3 = dir.write("sym.mtx", market(sym, "%%MatrixMarket matrix coordinate real symmetric", true));
  const auto f4 = dir.write("int.mtx", market(ints, "%%MatrixMarket matrix coordinate integer general"));
  const auto f5 =
      dir.write("pattern.mtx", market(pat, "%%MatrixMarket Matrix Coordinate Pattern General", false, false));
  const auto f6 = dir.write("empty.mtx", "%%MatrixMarket matrix coordinate real general\n3 2 0\n");
  dir.sync();
  check_matrix(spmd::sparse::read_matrix_market(world(), f1), general, 1.0, 0.0, 0, 0, "general.mtx");
  check_matrix(spmd::sparse::read_matrix_market(world(), f2), wide, 2.0, -1.0, 0, 0, "wide.mtx");
  check_matrix(spmd::sparse::read_matrix_market(world(), f3), sym, 1.0, 0.0, 0, 0, "sym.mtx");
  check_matrix(spmd::sparse::read_matrix_market(world(), f4), ints, 1.0, 0.0, 0, 0, "int.mtx");
  check_matrix(spmd::sparse::read_matrix_market(world(), f5), pat, 1.0, 0.0, 0, 0, "pattern.mtx");
  Csr none;
  none.rows = 3;
  none.cols = 2;
  none.ptr.assign(4, 0);
  check_matrix(spmd::sparse::read_matrix_market(world(), f6), none, 1.0, 0.0, 0, 0, "empty.mtx");
}

TEST(Sparse, MatrixMarketErrors) {
  TempDir dir;
  const std::string head = "%%MatrixMarket matrix coordinate real general\n% comment\n";
  // A long file whose bad line lies in a later rank's byte range (the line numbers must still be
  // those of the whole file).
  std::string many = head + "300 300 300\n";
  for (int k = 1; k <= 300; ++k) many += std::to_string(k) + " " + std::to_string(301 - k) + " 1.5\n";
  std::string late_bad = many, late_extra = many;
  late_bad.replace(late_bad.find("\n250 51 1.5\n") + 1, 10, "250 51 x.5");  // line 253
  late_extra.replace(late_extra.find("300 300 300"), 11, "300 300 299");    // line 303 is extra
  const std::pair<std::string, std::string> cases[] = {
      {"%%MatrixMarkt matrix coordinate real general\n1 1 0\n", "line 1: expected the banner"},
      {"", "line 1: the file is empty"},
      {"%%MatrixMarket matrix array real general\n1 1\n1.0\n", "line 1: unsupported format 'array'"},
      {"%%MatrixMarket matrix coordinate complex general\n1 1 0\n", "line 1: unsupported field 'complex'"},
      {"%%MatrixMarket matrix coordinate real skew-symmetric\n1 1 0\n",
       "line 1: unsupported symmetry 'skew-symmetric'"},
      {"%%MatrixMarket vector coordinate real general\n1 1 0\n", "line 1: unsupported object 'vector'"},
      {head + "3 3\n1 1 1.0\n", "line 3: expected the size line"},
      {head + "3 three 1\n", "line 3: expected the size line"},
      {head, "line 3: the size line 'rows columns entries' is missing"},
      {"%%MatrixMarket matrix coordinate real symmetric\n3 4 0\n", "line 2: a symmetric matrix must be square"},
      {head + "3 3 2\n1 1 1.0\n4 1 2.0\n", "line 5: row index 4 is outside 1..3"},
      {head + "3 3 2\n1 0 1.0\n2 2 2.0\n", "line 4: column index 0 is outside 1..3"},
      {head + "3 3 2\n1 1 1.0\n2 2 abc\n", "line 5: value 'abc' is not a real number"},
      {head + "3 3 1\n1.5 1 1.0\n", "line 4: row index '1.5' is not an integer"},
      {head + "3 3 2\n1 1 1.0\n2 2\n", "line 5: expected an entry 'row column value', found '2 2'"},
      {head + "3 3 1\n1 1 1.0 7\n", "line 4: expected an entry"},
      {head + "3 3 5\n1 1 1.0\n2 2 1.0\n3 3 1.0\n", "line 6: the file ends after 3 of the 5 entries"},
      {head + "3 3 2\n1 1 1.0\n2 2 1.0\n3 3 1.0\n", "line 6: more entries than the 2"},
      {late_bad, "line 253: value 'x.5' is not a real number"},
      {late_extra, "line 303: more entries than the 299"},
      {"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 2.5\n", "line 3: value '2.5' is not an integer"},
      {head + "3 3 2\n1 1 1.0\n2 2 nan\n", "line 5: value 'nan' is not finite"},
      {head + "3 3 1\n1 1 -1e999\n", "line 4: value '-1e999' is not finite"},
      {head + "3 3 1\n1 99999999999999999999 1\n", "line 4: column index '99999999999999999999' is not an integer"},
      {head + "-3 3 1\n", "line 3: expected the size line"},
  };
  std::vector<std::string> paths;
  for (std::size_t k = 0; k < std::size(cases); ++k)
    paths.push_back(dir.write("bad" + std::to_string(k) + ".mtx", cases[k].first));
  dir.sync();
  for (std::size_t k = 0; k < std::size(cases); ++k) {
    SCOPED_TRACE(paths[k]);
    SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sparse::read_matrix_market(world(), paths[k]),
                                 "'" + paths[k] + "' " + cases[k].second);
  }
  const std::string missing = dir.path() + "/missing.mtx";
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::sparse::read_matrix_market(world(), missing), "cannot open '" + missing + "'");
}

namespace {

/// The message of the spmd::Error that `read` throws, after checking that it throws one on
/// every rank, marked collective, with the same text everywhere (rank 0's, broadcast), and that
/// the text is printable ASCII of at most `max_len` bytes (no raw bytes of a file in it).
std::string agreed_error(const std::function<void()>& read, std::size_t max_len = 1024) {
  bool threw = false, collective = false;
  std::string msg;
  try {
    read();
  } catch (const spmd::Error& e) {
    threw = true;
    collective = e.collective();
    msg = e.what();
  }
  std::string root = msg;
  root.resize(static_cast<std::size_t>(world().bcast(static_cast<int>(root.size()), 0)));
  world().bcast(root.data(), static_cast<int>(root.size()), 0);
  EXPECT_TRUE(threw) << "no spmd::Error";
  EXPECT_TRUE(collective) << "not marked collective: " << msg;
  EXPECT_EQ(msg, root) << "the ranks' messages differ";
  EXPECT_LE(msg.size(), max_len) << msg.substr(0, 2 * max_len);
  const bool printable = std::all_of(msg.begin(), msg.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  EXPECT_TRUE(printable) << "non-printable bytes in the message";
  spmd::testing::expect_all(threw && collective && msg == root && printable && msg.size() <= max_len, "agreed_error");
  return msg;
}

#define EXPECT_HAS(msg, needle) \
  EXPECT_NE((msg).find(needle), std::string::npos) << "lacks '" << (needle) << "': " << (msg)

}  // namespace

// A size line too large for the ranks: one clear error on every rank, saying how many bytes per
// rank the row pointers alone would need, before anything is allocated (no std::bad_alloc).
TEST(Sparse, MatrixMarketHugeSize) {
  TempDir dir;
  const index_t p = world().size();
  const std::string real = "%%MatrixMarket matrix coordinate real general\n";
  const auto f1 = dir.write("huge_rows.mtx", real + "% c\n10000000000 10000000000 3\n1 1 1\n2 2 2\n3 3 3\n");
  const auto f2 = dir.write("max_rows.mtx",
                            "%%MatrixMarket matrix coordinate pattern symmetric\n"
                            "9223372036854775807 9223372036854775807 1\n1 1\n");
  const auto f3 = dir.write("huge_entries.mtx", real + "3 3 9223372036854775807\n1 1 1\n");
  const auto f4 = dir.write("huge_cols.mtx", real + "3 9223372036854775807 1\n3 9223372036854775807 2.5\n");
  dir.sync();
  // 10^10 rows: the first rank owns ceil(10^10 / p) of them, 8 bytes of row pointer each plus one.
  const index_t most = (10000000000 + p - 1) / p;
  const std::string m1 = agreed_error([&] { spmd::sparse::read_matrix_market(world(), f1); });
  EXPECT_HAS(m1, "'" + f1 + "' line 3: the size line declares 10000000000 x 10000000000 with 3 entries: ");
  EXPECT_HAS(m1, " a rank would own " + std::to_string(most) + " rows");
  EXPECT_HAS(m1, "would need " + std::to_string((most + 1) * 8) + " bytes (");
  EXPECT_HAS(m1, " per rank for its row pointers alone");
  EXPECT_HAS(m1, "use at least 5 ranks");
  const std::string m2 = agreed_error([&] { spmd::sparse::read_matrix_market(world(), f2); });
  EXPECT_HAS(m2, "line 2: the size line declares 9223372036854775807 x 9223372036854775807 with 1 entries");
  EXPECT_HAS(m2, "e+19 bytes (");
  // A huge entry count or column count allocates nothing by itself: the usual errors.
  const std::string m3 = agreed_error([&] { spmd::sparse::read_matrix_market(world(), f3); });
  EXPECT_HAS(m3, "line 3: the file ends after 1 of the 9223372036854775807 entries");
  const auto A = spmd::sparse::read_matrix_market(world(), f4);
  EXPECT_EQ(A.rows(), 3);
  EXPECT_EQ(A.cols(), std::numeric_limits<index_t>::max());
  EXPECT_EQ(A.nnz(), 1);
}

// A garbage file (or a garbage line) is never echoed raw: the message quotes a bounded excerpt
// with every non-printable byte escaped, the same on every rank.
TEST(Sparse, MatrixMarketGarbage) {
  TempDir dir;
  std::string junk("\x1b[31mEVIL\0\xff\xfe\x07", 13);
  for (int k = 0; k < 3000; ++k) junk += static_cast<char>((k * 37 + 11) % 256);
  const std::string head = "%%MatrixMarket matrix coordinate real general\n";
  std::string late = head + "200 200 200\n";
  for (int k = 1; k <= 200; ++k)
    late += std::to_string(k) + " " + std::to_string(k) + (k == 170 ? " \x07\x1b]0;title\x07\n" : " 1\n");
  const std::string cases[][2] = {
      {junk,
       "line 1: expected the banner '%%MatrixMarket matrix coordinate <field> <symmetry>', found "
       "'\\x1b[31mEVIL\\x00\\xff\\xfe\\x07"},
      {std::string(100000, '\x01'),
       "line 1: expected the banner '%%MatrixMarket matrix coordinate <field> "
       "<symmetry>', found a line of more than 1024 bytes starting '\\x01\\x01"},
      {head + "3\t3\tthree\x7f\r\n",
       "line 2: expected the size line 'rows columns entries' (three non-negative "
       "integers), found '3\\t3\\tthree\\x7f'"},
      {late, "line 172: value '\\x07\\x1b]0;title\\x07' is not a real number"},
      {head + "2 2 1\n" + std::string(200000, 'A') + "\x01\n",
       "line 3: expected an entry 'row column value', found "
       "'AAAAAAAA"},
      {head + "2 2 1\n" + junk, "line 3: row index '\\x1b[31mEVIL\\x00\\xff\\xfe\\x07' is not an integer"},
      {"%%MatrixMarket matrix coordinate r\xc3\xa9\x61l general\n1 1 0\n", "line 1: unsupported field 'r\\xc3\\xa9al'"},
  };
  std::vector<std::string> paths;
  for (std::size_t k = 0; k < std::size(cases); ++k)
    paths.push_back(dir.write("garbage" + std::to_string(k) + ".mtx", cases[k][0]));
  dir.sync();
  for (std::size_t k = 0; k < std::size(cases); ++k) {
    SCOPED_TRACE(paths[k]);
    const std::string m = agreed_error([&] { spmd::sparse::read_matrix_market(world(), paths[k]); });
    EXPECT_HAS(m, "'" + paths[k] + "' " + cases[k][1]);
  }
}

// Values too small for a double read as the nearest subnormal or zero (strtod's rounding), not as
// an error; CRLF line ends read like LF.
TEST(Sparse, MatrixMarketTinyValuesAndCrlf) {
  TempDir dir;
  const auto f = dir.write("tiny.mtx",
                           "%%MatrixMarket matrix coordinate real general\r\n% crlf\r\n3 3 3\r\n"
                           "1 1 1e-310\r\n2 2 2.5e-400\r\n3 3 -4.5\r\n");
  dir.sync();
  const auto A = spmd::sparse::read_matrix_market(world(), f);
  EXPECT_EQ(A.nnz(), 3);
  auto d = A.make_vector("test::d");
  A.diagonal(d);
  const std::vector<double> got = spmd::allgather(d);
  const std::vector<double> want{std::strtod("1e-310", nullptr), 0.0, -4.5};
  EXPECT_EQ(got, want);
}
