// cuNumeric's examples/cg.py (the function `solve`) ported line by line, with the CSR Poisson
// matrix for A and b = A u* for a known u*: the program a NumPy user writes first. It must give
// the right answer: `p = r` makes p a copy (Arrays are values), so `p = r + beta * p` never
// writes into r (with handle semantics it would, and the iteration would stall or diverge).
//
// The Python original (cuNumeric, examples/cg.py, `solve`), for reference line by line:
//   x = np.zeros(A.shape[1])
//   r = b - A.dot(x)
//   p = r
//   rsold = r.dot(r)
//   for i in range(max_iters):
//       Ap = A.dot(p)
//       alpha = rsold / (p.dot(Ap))
//       x = x + alpha * p
//       r = r - alpha * Ap
//       rsnew = r.dot(r)
//       if (i % conv_iters == 0 or i == (max_iters - 1)) and np.sqrt(rsnew) < 1e-10:
//           converged = i; break
//       beta = rsnew / rsold
//       p = r + beta * p
//       rsold = rsnew

#include <cmath>
#include <vector>

#include "spmd_test.hpp"

using spmd::index_t;
using spmd::testing::world;
using Vector = spmd::Array<double, 1>;

namespace {

/// u*(k) for unknown k of an n x n grid: smooth, nonzero everywhere.
double exact(index_t k, index_t n) {
  const double i = static_cast<double>(k / n + 1) / static_cast<double>(n + 1);
  const double j = static_cast<double>(k % n + 1) / static_cast<double>(n + 1);
  return std::sin(3.0 * i) * std::cos(2.0 * j) + 0.5;
}

/// The port; returns the iteration it converged at (-1: failure), x holds the solution.
template <class Matrix>
int solve(const Matrix& A, const Vector& b, Vector& x_out, int conv_iters, int max_iters) {
  Vector Ax = A.make_vector("Ax");
  Vector x = spmd::zeros_like(b);  // x = np.zeros(A.shape[1])
  A.apply(x, Ax);                  // A.dot(x)
  Vector r(b - Ax);                // r = b - A.dot(x)
  Vector p = r;                    // p = r
  double rsold = spmd::dot(r, r);  // rsold = r.dot(r)
  int converged = -1;
  Vector Ap = A.make_vector("Ap");
  for (int i = 0; i < max_iters; ++i) {
    A.apply(p, Ap);                                 // Ap = A.dot(p)
    const double alpha = rsold / spmd::dot(p, Ap);  // alpha = rsold / (p.dot(Ap))
    x = x + alpha * p;                              // x = x + alpha * p
    r = r - alpha * Ap;                             // r = r - alpha * Ap
    const double rsnew = spmd::dot(r, r);           // rsnew = r.dot(r)
    if ((i % conv_iters == 0 || i == max_iters - 1) && std::sqrt(rsnew) < 1e-10) {
      converged = i;
      break;
    }
    const double beta = rsnew / rsold;  // beta = rsnew / rsold
    p = r + beta * p;                   // p = r + beta * p
    rsold = rsnew;                      // rsold = rsnew
  }
  x_out = x;
  return converged;
}

/// u(k) = exact(k, n) on the device (a free function: CUDA refuses device lambdas in a TEST body).
void fill_exact(const Vector& u, const index_t n) {
  auto ua = u.accessor();
  spmd::for_each(
      u, KOKKOS_LAMBDA(index_t k) {
        ua(k) = spmd::math::sin(3.0 * static_cast<double>(k / n + 1) / static_cast<double>(n + 1)) *
                    spmd::math::cos(2.0 * static_cast<double>(k % n + 1) / static_cast<double>(n + 1)) +
                0.5;
      });
}

}  // namespace

TEST(CgPort, ConvergesToTheKnownSolution) {
  for (const index_t n : {7, 24}) {
    const auto A = spmd::sparse::poisson2d<double>(world(), n, n);
    // u* and b = A u*
    Vector u = A.make_vector("u*");
    fill_exact(u, n);
    Vector b = A.make_vector("b");
    A.apply(u, b);
    const Vector b0 = b;  // the right-hand side must come back untouched
    Vector x;
    const int it = solve(A, b, x, 1, static_cast<int>(n * n));
    ASSERT_GE(it, 0) << "n = " << n << ": the port did not converge";
    // x agrees with u* (checked against a host reference of u*, computed here)
    const auto xs = spmd::allgather(x);
    double err = 0;
    for (index_t k = 0; k < n * n; ++k) err = std::max(err, std::abs(xs[static_cast<std::size_t>(k)] - exact(k, n)));
    EXPECT_LT(err, 1e-9) << "n = " << n << ", converged at iteration " << it;
    EXPECT_EQ(spmd::allgather(b), spmd::allgather(b0)) << "b changed";
    // Exact arithmetic converges in at most n*n steps; the 5-point Laplacian needs about 2n-3n.
    EXPECT_LE(it, static_cast<int>(4 * n)) << "n = " << n;
  }
}

TEST(CgPort, CopiesAreValues) {
  // p = r, then writing p (in place or by assignment) leaves r alone; a slice still shares.
  auto r = spmd::full<double>(world(), {10}, 2.0);
  spmd::Array<double, 1> p = r;
  p = r + 3.0 * p;
  p += 1.0;
  EXPECT_EQ(spmd::allgather(r), std::vector<double>(10, 2.0));
  EXPECT_EQ(spmd::allgather(p), std::vector<double>(10, 9.0));
  auto q = spmd::zeros<double>(world(), {10});
  q = p;  // same distribution: values copied into q's storage, slices of q see them
  auto qs = q(spmd::slice(2, 5));
  q = 4.0 * p;
  EXPECT_EQ(spmd::sum(qs), 3 * 36.0);
  p = q;
  EXPECT_EQ(spmd::sum(p), 10 * 36.0);
  q = 0.0;
  EXPECT_EQ(spmd::sum(p), 10 * 36.0);  // p did not follow q
  // moves and swaps exchange storage without copying
  auto a = spmd::full<double>(world(), {6}, 1.0), c = spmd::full<double>(world(), {6}, 5.0);
  const double* before = a.local_with_halo().data();
  spmd::swap(a, c);
  EXPECT_EQ(c.local_with_halo().data(), before);
  EXPECT_EQ(spmd::sum(a), 30.0);
}
