// spmd::blas: level 1 on 1-D arrays, gemv and gemm (SUMMA) on 2-D process grids, each against a
// serial reference computed here from the gathered inputs. Shapes are uneven and small enough
// that at 3-4 ranks some ranks own nothing.
//
//   gemm 7 x 5 times 5 x 6 on a 2 x 2 grid: A's columns split 3 | 2, B's rows split 3 | 2 as
//   well; with a 1 x 4 grid A's columns split 2 | 1 | 1 | 1 and B's rows are whole, so the panels
//   are cut at 2, 3, 4 (and at the panel width).
#include "spmd_test.hpp"

#include <cmath>

using spmd::Array;
using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::testing::fill_pattern;
using spmd::testing::world;

namespace {

Distribution<1> line(index_t n, int h = 0) {
  spmd::DistributionOptions o;
  o.halo = {h};
  return Distribution<1>(world(), Index<1>{n}, o);
}
Distribution<2> plane(index_t m, index_t n, std::vector<int> dims, int h = 0) {
  spmd::DistributionOptions o;
  o.dims = std::move(dims);
  o.halo = {h};
  return Distribution<2>(world(), Index<2>{m, n}, o);
}

/// Relative closeness of two host arrays (same length).
void expect_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  bool ok = got.size() == want.size();
  for (std::size_t i = 0; ok && i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-12 * (1.0 + std::abs(want[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
      ok = false;
    }
  spmd::testing::expect_all(ok, what);
}

/// Serial y = alpha A x + beta y on row-major host arrays.
std::vector<double> ref_gemv(double alpha, const std::vector<double>& A, const std::vector<double>& x, double beta,
                             std::vector<double> y) {
  const std::size_t m = y.size(), n = x.size();
  for (std::size_t i = 0; i < m; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < n; ++j) s += A[i * n + j] * x[j];
    y[i] = alpha * s + beta * y[i];
  }
  return y;
}

void check_gemv(index_t m, index_t n, std::vector<int> dims, int ha, int hx, double beta) {
  auto A = spmd::empty<double>(plane(m, n, std::move(dims), ha));
  auto x = spmd::empty<double>(line(n, hx));
  auto y = spmd::empty<double>(line(m));
  fill_pattern(A);
  fill_pattern(x, 0.5);
  fill_pattern(y, -3.0);
  const auto want = ref_gemv(1.5, spmd::allgather(A), spmd::allgather(x), beta, spmd::allgather(y));
  spmd::blas::gemv(1.5, A, x, beta, y);
  expect_close(spmd::allgather(y), want, "gemv");
}

void check_gemm(index_t m, index_t k, index_t n, std::vector<int> dims, index_t panel, double beta) {
  auto A = spmd::empty<double>(plane(m, k, std::move(dims), k > 4 ? 1 : 0));
  const auto& g = A.distribution().dims();  // B and C on A's grid, however it was chosen
  auto B = spmd::empty<double>(plane(k, n, {g[0], g[1]}, 0));
  auto C = spmd::empty<double>(plane(m, n, {g[0], g[1]}, m > 4 && n > 4 ? 1 : 0));
  fill_pattern(A);
  fill_pattern(B, 0.25);
  fill_pattern(C, -1.0);
  const auto a = spmd::allgather(A), b = spmd::allgather(B);
  auto want = spmd::allgather(C);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = 0;
      for (index_t l = 0; l < k; ++l) s += a[i * k + l] * b[l * n + j];
      want[i * n + j] = 0.5 * s + beta * want[i * n + j];
    }
  spmd::blas::GemmPlan<double, spmd::DefaultMemorySpace> plan(A, B, C, panel);
  plan.apply(0.5, A, B, beta, C);
  expect_close(spmd::allgather(C), want, "gemm");
}

}  // namespace

TEST(Blas, Level1) {
  for (index_t n : {index_t(13), index_t(2)}) {
    const int h = n > 4 ? 1 : 0;  // no halo where blocks may be empty
    auto x = spmd::empty<double>(line(n, h));
    auto y = spmd::empty<double>(line(n, h));
    fill_pattern(x);
    fill_pattern(y, -7.0);
    const auto hx = spmd::allgather(x), hy = spmd::allgather(y);
    double dot = 0, sq = 0, inf = 0;
    std::vector<double> axpby(hx.size()), scaled(hx.size());
    for (std::size_t i = 0; i < hx.size(); ++i) {
      dot += hx[i] * hy[i];
      sq += hy[i] * hy[i];
      inf = std::max(inf, std::abs(hy[i]));
      axpby[i] = 2.0 * hx[i] - 0.5 * hy[i];
      scaled[i] = 3.0 * axpby[i];
    }
    EXPECT_NEAR(spmd::blas::dot(x, y), dot, 1e-12 * std::abs(dot));
    EXPECT_NEAR(spmd::blas::nrm2(y), std::sqrt(sq), 1e-12 * std::sqrt(sq));
    EXPECT_EQ(spmd::blas::nrminf(y), inf);
    spmd::blas::axpby(2.0, x, -0.5, y);
    expect_close(spmd::allgather(y), axpby, "axpby");
    spmd::blas::scal(3.0, y);
    expect_close(spmd::allgather(y), scaled, "scal");
    spmd::copyto(y, x);  // destination first (blas::copy(x, y) is gone)
    expect_close(spmd::allgather(y), hx, "copyto");
  }
}

TEST(Blas, Level1ShapeMismatch) {
  auto x = spmd::zeros<double>(world(), {13});
  auto y = spmd::zeros<double>(world(), {12});
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::blas::axpby(1.0, x, 1.0, y), "spmd::blas::axpby");
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::blas::dot(x, y), "spmd::blas::dot");
}

TEST(Blas, Gemv) {
  const int p = world().size();
  check_gemv(7, 5, {0, 0}, 1, 1, 0.0);
  check_gemv(7, 5, {1, p}, 0, 0, 2.0);
  check_gemv(3, 2, {p, 1}, 0, 0, -1.0);  // n < p: ranks own no rows
}

TEST(Blas, GemvShapeMismatch) {
  auto A = spmd::zeros<double>(plane(4, 3, {0, 0}));
  auto x = spmd::zeros<double>(line(4));
  auto y = spmd::zeros<double>(line(4));
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::blas::gemv(1.0, A, x, 0.0, y), "A {4, 3}, x {4}, y {4}");
}

TEST(Blas, Gemm) {
  const int p = world().size();
  check_gemm(7, 5, 6, {0, 0}, 256, 0.0);
  check_gemm(7, 5, 6, {1, p}, 2, 1.5);   // panels cut by block edges and by the width
  check_gemm(3, 2, 5, {p, 1}, 1, -1.0);  // k < p: B's rows are empty on some ranks
  check_gemm(3, 0, 2, {0, 0}, 4, 2.0);   // k == 0: C = beta C
}

TEST(Blas, GemmShapeMismatch) {
  auto A = spmd::zeros<double>(plane(4, 3, {0, 0}));
  auto B = spmd::zeros<double>(plane(4, 3, {0, 0}));
  auto C = spmd::zeros<double>(plane(4, 3, {0, 0}));
  SPMD_EXPECT_COLLECTIVE_ERROR(spmd::blas::gemm(1.0, A, B, 0.0, C), "A {4, 3}, B {4, 3}, C {4, 3}");
  const int p = world().size();
  if (p > 1) {  // same shapes that fit, but B on another grid
    auto A2 = spmd::zeros<double>(plane(4, 3, {p, 1}));
    auto B2 = spmd::zeros<double>(plane(3, 4, {1, p}));
    auto C2 = spmd::zeros<double>(plane(4, 4, {p, 1}));
    SPMD_EXPECT_COLLECTIVE_ERROR(spmd::blas::gemm(1.0, A2, B2, 0.0, C2), "must share one process grid");
  }
}
