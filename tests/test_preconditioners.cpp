// spmd::solvers preconditioners: Chebyshev (its eigenvalue estimate against the Laplacian's
// known spectrum, symmetry, degree 1 as scaled Jacobi), block Jacobi ILU (each rank's factors
// against a serial ILU(0) of the same block written here), and geometric multigrid (iteration
// counts bounded over sizes, odd and even, 2-D and 3-D, the V-cycle symmetric positive definite,
// tiny blocks that gather at once, and the same bits at every rank count as each rank alone).
//
// Sizes are small, and at 3-4 ranks (more ranks than the CI machine's two cores) each test runs
// fewer configurations. With 4 ranks the 2-D grids split 2 x 2; 9 x 11 gives blocks of 4-5
// points per axis, so the multigrid hierarchy moves onto rank 0 at its first coarse level.
#include "spmd_test.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using spmd::Array;
using spmd::index_t;
using spmd::testing::world;
namespace sv = spmd::solvers;

namespace {

using Vec = std::vector<double>;

double hashed(std::uint64_t k, std::uint64_t seed) {
  std::uint64_t z = k * 0x9E3779B97F4A7C15ull + seed;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(1ull << 52) - 1.0;
}
Vec random_vector(std::size_t n, std::uint64_t seed) {
  Vec v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = hashed(k, seed);
  return v;
}
double max_abs_diff(const Vec& a, const Vec& b) {
  double m = 0;
  for (std::size_t k = 0; k < a.size(); ++k) m = std::max(m, std::abs(a[k] - b[k]));
  return m;
}
bool oversubscribed() {
  return world().size() > 2;
}

template <int N>
spmd::Index<N> cube(index_t n) {
  spmd::Index<N> s;
  for (int d = 0; d < N; ++d) s[d] = n;
  return s;
}

/// The largest eigenvalue of diag(L)^-1 L for the Laplacian of `shape` (known exactly).
template <int N>
double laplacian_lmax(const spmd::Index<N>& shape) {
  double s = 0;
  for (int d = 0; d < N; ++d) s += (1 + std::cos(M_PI / static_cast<double>(shape[d] + 1))) / N;
  return s;
}
template <int N>
double laplacian_lmin(const spmd::Index<N>& shape) {
  double s = 0;
  for (int d = 0; d < N; ++d) s += (1 - std::cos(M_PI / static_cast<double>(shape[d] + 1))) / N;
  return s;
}

/// (u, M v) and (M u, v) for random u, v: the preconditioner's symmetry, and (u, M u) > 0.
template <class Op>
void check_symmetric(const Op& A, const sv::Preconditioner<typename Op::vector_type>& M, const char* what) {
  auto u = A.make_vector("u"), v = A.make_vector("v"), mu = A.make_vector("mu"), mv = A.make_vector("mv");
  spmd::random::uniform(u, spmd::random::Generator{1}, -1.0, 1.0);
  spmd::random::uniform(v, spmd::random::Generator{2}, -1.0, 1.0);
  M.apply(u, mu);
  M.apply(v, mv);
  const double a = spmd::dot(u, mv), b = spmd::dot(mu, v), c = spmd::dot(u, mu);
  EXPECT_NEAR(a, b, 1e-12 * std::max(std::abs(a), std::abs(b))) << what;
  EXPECT_GT(c, 0.0) << what;
}

}  // namespace

// ---- Chebyshev -----------------------------------------------------------------------------------

TEST(Chebyshev, LanczosEstimateBracketsTheSpectrumFromInside) {
  const spmd::Index<2> shape{24, 17};
  const sv::Laplacian<double, 2> L(world(), shape);
  sv::ChebyshevOptions o;
  o.eig_steps = 12;
  const sv::Chebyshev<sv::Laplacian<double, 2>> C(L, o);
  const double lmax = laplacian_lmax<2>(shape), lmin = laplacian_lmin<2>(shape);
  // Ritz values lie inside the spectrum; the largest converges fast.
  EXPECT_LE(C.estimated_max(), lmax * (1 + 1e-12));
  EXPECT_GE(C.estimated_max(), 0.97 * lmax);
  EXPECT_GE(C.estimated_min(), lmin * (1 - 1e-12));
  EXPECT_NEAR(C.lambda_max(), 1.1 * C.estimated_max(), 1e-12);
  EXPECT_GE(C.lambda_max(), lmax);  // the safety factor covers the top of the spectrum
}

TEST(Chebyshev, PreconditionsCgAndIsSymmetric) {
  const spmd::Index<2> shape{31, 26};
  const sv::Laplacian<double, 2> L(world(), shape);
  auto u = L.make_vector("u"), b = L.make_vector("b");
  spmd::scatter(u, random_vector(static_cast<std::size_t>(L.rows()), 3));
  L.apply(u, b);
  const Vec hu = spmd::allgather(u);
  sv::SolverOptions o;
  o.rtol = 1e-10;
  auto xj = L.make_vector("xj");
  sv::SolverOptions oj = o;
  oj.precond = sv::Precond::jacobi;
  const auto rj = sv::cg(L, b, xj, oj);
  for (int degree : {2, 5}) {
    sv::ChebyshevOptions co;
    co.degree = degree;
    const auto M = sv::chebyshev(L, co);
    EXPECT_EQ(M.kind(), sv::Precond::chebyshev);
    check_symmetric(L, M, "chebyshev");
    auto x = L.make_vector("x");
    const auto res = sv::cg(L, b, x, M, o);
    EXPECT_TRUE(res.converged) << sv::to_string(res.reason) << " " << M.describe();
    // A degree-d polynomial cuts CG's iterations by about sqrt(d) or more.
    EXPECT_LT(res.iterations, rj.iterations * 0.8 / std::sqrt(static_cast<double>(degree)) + 2)
        << "degree " << degree << ": " << res.iterations << " vs jacobi " << rj.iterations;
    EXPECT_LT(max_abs_diff(spmd::allgather(x), hu), 1e-7);
    if (oversubscribed()) break;
  }
}

TEST(Chebyshev, DegreeOneIsScaledJacobi) {
  const sv::Laplacian<double, 2> L(world(), spmd::Index<2>{13, 9});
  sv::ChebyshevOptions co;
  co.degree = 1;
  co.lambda_min = 0.5;
  co.lambda_max = 1.5;  // theta = 1: z = D^-1 r
  const auto M = sv::chebyshev(L, co);
  auto r = L.make_vector("r"), z = L.make_vector("z");
  const Vec hr = random_vector(static_cast<std::size_t>(L.rows()), 4);
  spmd::scatter(r, hr);
  M.apply(r, z);
  Vec want = hr;
  for (double& v : want) v /= 4.0;
  EXPECT_LT(max_abs_diff(spmd::allgather(z), want), 1e-15);
}

TEST(Chebyshev, PowerEstimateForANonsymmetricOperator) {
  const auto A = spmd::sparse::convection_diffusion2d(world(), 21, 17, 200.0);
  sv::ChebyshevOptions co;
  co.symmetric = false;
  co.eig_steps = 20;
  const auto M = sv::chebyshev(A, co);
  EXPECT_FALSE(M.symmetric());
  auto b = A.make_vector("b");
  b.fill(1.0);
  sv::SolverOptions o;
  o.rtol = 1e-9;
  auto x = A.make_vector("x"), xj = A.make_vector("xj");
  const auto res = sv::gmres(A, b, x, M, o);
  EXPECT_TRUE(res.converged) << sv::to_string(res.reason) << " " << res.detail;
  sv::SolverOptions oj = o;
  oj.precond = sv::Precond::jacobi;
  EXPECT_LT(res.iterations, sv::gmres(A, b, xj, oj).iterations);
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::cg(A, b, x, M, o), "is not symmetric positive definite");
  co.degree = 0;
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::chebyshev(A, co), "spmd::solvers::chebyshev: degree (0)");
}

// ---- block Jacobi ILU ----------------------------------------------------------------------------

namespace {

/// This rank's diagonal block of convection_diffusion2d (rows and columns it owns), dense.
std::vector<Vec> rank_block(const spmd::sparse::CsrMatrix<double>& A) {
  const index_t lo = A.row_distribution().owned().lo[0], hi = A.row_distribution().owned().hi[0];
  const auto n = static_cast<std::size_t>(hi - lo);
  std::vector<Vec> d(n, Vec(n, 0.0));
  auto e = A.make_vector("e"), col = A.make_vector("col");
  // Column by column through products with unit vectors restricted to this rank: A e_j (local).
  for (index_t j = 0; j < A.rows(); ++j) {
    e.fill(0.0);
    e.set({j}, 1.0);
    A.apply(e, col);
    if (j < lo || j >= hi) continue;
    const Vec c = spmd::impl::owned_to_host(col);
    for (std::size_t i = 0; i < n; ++i) d[i][static_cast<std::size_t>(j - lo)] = c[i];
  }
  return d;
}

/// Serial ILU(0) of a dense matrix restricted to its nonzero pattern (IKJ variant), then
/// z = U^-1 L^-1 r.
Vec serial_ilu0_solve(std::vector<Vec> a, const Vec& r) {
  const std::size_t n = r.size();
  std::vector<std::vector<bool>> nz(n, std::vector<bool>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) nz[i][j] = a[i][j] != 0.0;
  for (std::size_t i = 1; i < n; ++i)
    for (std::size_t k = 0; k < i; ++k) {
      if (!nz[i][k]) continue;
      a[i][k] /= a[k][k];
      for (std::size_t j = k + 1; j < n; ++j)
        if (nz[i][j]) a[i][j] -= a[i][k] * a[k][j];
    }
  Vec y = r;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (nz[i][k]) y[i] -= a[i][k] * y[k];
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t k = i + 1; k < n; ++k)
      if (nz[i][k]) y[i] -= a[i][k] * y[k];
    y[i] /= a[i][i];
  }
  return y;
}

}  // namespace

TEST(BlockIlu, EachRanksFactorsAreTheSerialIlu0OfItsBlock) {
  const auto A = spmd::sparse::convection_diffusion2d(world(), 9, 8, 60.0);
  const auto M = sv::block_ilu(A);
  EXPECT_EQ(M.kind(), sv::Precond::ilu);
  EXPECT_FALSE(M.symmetric());
  auto r = A.make_vector("r"), z = A.make_vector("z");
  spmd::scatter(r, random_vector(static_cast<std::size_t>(A.rows()), 5));
  M.apply(r, z);
  const auto block = rank_block(A);
  const Vec want = serial_ilu0_solve(block, spmd::impl::owned_to_host(r));
  const double err = max_abs_diff(spmd::impl::owned_to_host(z), want);
  EXPECT_LT(err, 1e-12) << "rank " << world().rank();
  spmd::testing::expect_all(err < 1e-12, "block ILU(0) against the serial ILU(0)");
}

TEST(BlockIlu, PreconditionsGmresAndBicgstab) {
  const auto A = spmd::sparse::convection_diffusion2d(world(), 23, 19, 300.0);
  auto b = A.make_vector("b");
  b.fill(1.0);
  const auto M = sv::block_ilu(A);
  sv::SolverOptions o;
  o.rtol = 1e-9;
  sv::SolverOptions oj = o;
  oj.precond = sv::Precond::jacobi;
  auto x = A.make_vector("x"), xj = A.make_vector("xj");
  const auto rg = sv::gmres(A, b, x, M, o);
  EXPECT_TRUE(rg.converged) << sv::to_string(rg.reason);
  EXPECT_LT(rg.iterations, sv::gmres(A, b, xj, oj).iterations);
  if (!oversubscribed()) {
    auto x2 = A.make_vector("x2");
    const auto rb = sv::bicgstab(A, b, x2, M, o);
    EXPECT_TRUE(rb.converged) << sv::to_string(rb.reason) << " " << rb.detail;
  }
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::cg(A, b, x, M, o), "block Jacobi ILU(0)");
}

TEST(BlockIlu, ZeroPivotIsAnError) {
  // A = [[0, 1], [1, 0]]: every diagonal block at one rank has a zero pivot.
  const spmd::Distribution<1> rows(world(), spmd::Index<1>{2});
  std::vector<index_t> ptr{0}, col;
  std::vector<double> val;
  for (index_t i = rows.owned().lo[0]; i < rows.owned().hi[0]; ++i) {
    col.push_back(1 - i);
    val.push_back(1.0);
    ptr.push_back(static_cast<index_t>(col.size()));
  }
  const spmd::sparse::CsrMatrix<double> A(rows, 2, ptr, col, val, "exchange");
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::block_ilu(A), "zero or non-finite pivots");
}

// ---- multigrid -----------------------------------------------------------------------------------

namespace {

/// MG-preconditioned CG on the Laplacian of `shape` from x = 0 to rtol 1e-8 with b = L u* (u*
/// random): converged, at most `bound` iterations, x = u* to the accuracy of the tolerance.
template <int N>
int mg_cg(const spmd::Index<N>& shape, int bound, const sv::MultigridOptions& mo = {}) {
  const sv::Laplacian<double, N> L(world(), shape);
  auto u = L.make_vector("u"), b = L.make_vector("b"), x = L.make_vector("x");
  spmd::random::uniform(u, spmd::random::Generator{7}, -1.0, 1.0);
  L.apply(u, b);
  const auto M = sv::multigrid(L, mo);
  EXPECT_EQ(M.kind(), sv::Precond::multigrid);
  sv::SolverOptions o;
  o.rtol = 1e-8;
  o.max_iters = 100;
  const auto res = sv::cg(L, b, x, M, o);
  const std::string what =
      spmd::impl::shape_str(shape) + " at " + std::to_string(world().size()) + " ranks: " + M.describe();
  EXPECT_TRUE(res.converged) << what << ": " << sv::to_string(res.reason);
  EXPECT_LE(res.iterations, bound) << what;
  auto e = L.make_vector("e");
  e = x - u;
  EXPECT_LT(spmd::norm_inf(e), 1e-5) << what;
  return res.iterations;
}

}  // namespace

TEST(Multigrid, IterationsBoundedOverSizes2d) {
  // 2^k - 1 (the coarse grids nest exactly), even and mixed sizes.
  for (const auto& s :
       {spmd::Index<2>{31, 31}, spmd::Index<2>{64, 64}, spmd::Index<2>{100, 37}, spmd::Index<2>{127, 127}}) {
    if (oversubscribed() && s[0] == 127) continue;
    mg_cg<2>(s, 12);
  }
}

TEST(Multigrid, IterationsBoundedOverSizes3d) {
  for (const auto& s : {spmd::Index<3>{15, 15, 15}, spmd::Index<3>{24, 20, 17}, spmd::Index<3>{31, 31, 31}}) {
    if (oversubscribed() && s[0] == 31) continue;
    mg_cg<3>(s, 13);
  }
}

TEST(Multigrid, VCycleIsSymmetricPositiveDefinite) {
  for (auto smoother : {sv::MultigridOptions::Smoother::chebyshev, sv::MultigridOptions::Smoother::jacobi}) {
    sv::MultigridOptions mo;
    mo.smoother = smoother;
    const sv::Laplacian<double, 2> L2(world(), spmd::Index<2>{40, 33});
    check_symmetric(L2, sv::multigrid(L2, mo), "2-D");
    const sv::Laplacian<double, 3> L3(world(), spmd::Index<3>{12, 14, 11});
    check_symmetric(L3, sv::multigrid(L3, mo), "3-D");
  }
}

TEST(Multigrid, JacobiSmootherAndOneDimension) {
  sv::MultigridOptions mo;
  mo.smoother = sv::MultigridOptions::Smoother::jacobi;
  mg_cg<2>(spmd::Index<2>{63, 50}, 16, mo);
  mg_cg<1>(spmd::Index<1>{1000}, 6);
}

TEST(Multigrid, TinyBlocksGatherOntoOneRank) {
  // 9 x 11 on up to 4 ranks: blocks of a few points; the first coarse level is on rank 0.
  const sv::Laplacian<double, 2> L(world(), spmd::Index<2>{9, 11});
  sv::MultigridOptions mo;
  mo.coarse_points = 4;
  const sv::Multigrid<double, 2, spmd::DefaultMemorySpace> M(L, mo);
  EXPECT_EQ(M.levels(), 3);  // 9 x 11, 4 x 5, 1 x 2
  EXPECT_EQ(M.gather_level(), world().size() > 1 ? 1 : -1);
  mg_cg<2>(spmd::Index<2>{9, 11}, 10, mo);
  mg_cg<2>(spmd::Index<2>{2, 3}, 2);  // the operator's grid itself is the coarsest level
}

TEST(Multigrid, SameBitsAtEveryRankCount) {
  // With reproducible sums, CG + multigrid on all ranks gives the iterations and x of each rank
  // solving alone: the V-cycle does the same arithmetic at every decomposition.
  const spmd::Comm self = world().split(world().rank(), 0);
  const spmd::Index<2> shape{47, 36};
  Vec xs[2];
  int its[2];
  for (int k = 0; k < 2; ++k) {
    const spmd::Comm& comm = k == 0 ? world() : self;
    const sv::Laplacian<double, 2> L(comm, shape);
    auto b = L.make_vector("b"), x = L.make_vector("x");
    spmd::random::uniform(b, spmd::random::Generator{9}, -1.0, 1.0);
    sv::SolverOptions o;
    o.rtol = 1e-9;
    o.reproducible = true;
    const auto res = sv::cg(L, b, x, sv::multigrid(L), o);
    EXPECT_TRUE(res.converged);
    its[k] = res.iterations;
    xs[k] = spmd::allgather(x);
  }
  EXPECT_EQ(its[0], its[1]);
  EXPECT_EQ(xs[0], xs[1]) << "x differs between " << world().size() << " ranks and one";
}

TEST(Multigrid, ArgumentErrors) {
  const sv::Laplacian<double, 2> L(world(), spmd::Index<2>{17, 17});
  sv::MultigridOptions mo;
  mo.smoothing_steps = 0;
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::multigrid(L, mo), "spmd::solvers::multigrid: smoothing_steps (0)");
  mo = {};
  mo.chebyshev_ratio = 1.5;
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::multigrid(L, mo), "chebyshev_ratio (1.5) in (0, 1)");
  // An elongated grid: coarsening stops at 2 points along axis 0 with 3000 along axis 1.
  const sv::Laplacian<double, 2> E(world(), spmd::Index<2>{5, 12000});
  SPMD_EXPECT_COLLECTIVE_ERROR(sv::multigrid(E), "is larger than the direct solve takes");
}
