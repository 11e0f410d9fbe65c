#pragma once
// Fused vector kernels of the Krylov solvers: each iteration's vector updates run as few passes
// over memory as the algorithm allows, and the local parts of its dot products are summed in the
// same pass (several sums in one reduction), ready for one MPI_Allreduce.
//
// The bodies are per-point functors at local owned coordinates (CUDA: no generic device
// lambdas); they run on the library's kernel layer (spmd/impl/kernels.hpp: row chunks with the
// partial sums in locals on host spaces, one point per thread on devices), over the owned points
// of the solver's vectors (N-d, with or without halo), on the solver's execution space instance.

#include <Kokkos_Core.hpp>

#include <array>
#include <string>
#include <utility>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/impl/exact_sum.hpp"
#include "spmd/impl/kernels.hpp"

namespace spmd::solvers::impl {

using spmd::impl::Sums;

/// s.v[k] += a b: the fast sums (floating point, in the order the kernel layer folds them) or,
/// with SolverOptions::reproducible, the exact ones (impl/exact_sum.hpp). The sum bodies below
/// take either.
template <class T, int K>
KOKKOS_FORCEINLINE_FUNCTION void add_product(Sums<T, K>& s, const int k, const T a, const T b) {
  s.v[k] += a * b;
}
template <int K, class T>
KOKKOS_FORCEINLINE_FUNCTION void add_product(spmd::impl::ExactSums<K>& s, const int k, const T a, const T b) {
  spmd::impl::exact_add_product(s.s[k], static_cast<double>(a), static_cast<double>(b));
}

/// Run body(i...) over the owned points of `like` (local owned coordinates), on `exec`. Local.
template <class T, int N, class M, class Body>
void for_points(const typename M::execution_space& exec, const char* label, const Array<T, N, M>& like,
                const Body& body) {
  spmd::impl::for_points(exec, label, spmd::impl::owned_extents(like.owned()), body);
}

/// Sum K values of body(sums, i...) over the owned points of `like`: this rank's partial sums.
/// Waits for the kernel. Local.
template <int K, class T, int N, class M, class Body>
Sums<T, K> sum_points(const typename M::execution_space& exec, const char* label, const Array<T, N, M>& like,
                      const Body& body) {
  return spmd::impl::reduce_points<spmd::impl::SumsRule<T, K>>(exec, label, spmd::impl::owned_extents(like.owned()),
                                                               body);
}

/// Kernel-side access to a vector's owned points.
template <class V>
using Acc = spmd::impl::OwnedAccess<typename V::view_type, V::rank>;

// ---- CG ------------------------------------------------------------------------------------------

/// r = b - q, p = z = D r (D = diag(A)^-1 or I); sums (b.b, r.r, r.z).
template <class A, class T, bool Jacobi>
struct CgStart {
  A b, q, r, p, dinv;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T bi = b(i...);
    const T ri = bi - q(i...);
    T zi = ri;
    if constexpr (Jacobi) zi = dinv(i...) * ri;
    r(i...) = ri;
    p(i...) = zi;
    add_product(s, 0, bi, bi);
    add_product(s, 1, ri, ri);
    add_product(s, 2, ri, zi);
  }
};

/// sums (p.q).
template <class A, class T>
struct Dot {
  A p, q;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    add_product(s, 0, p(i...), q(i...));
  }
};

/// r -= alpha q; sums (r.r, r.z) with z = D r.
template <class A, class T, bool Jacobi>
struct CgResidual {
  A r, q, dinv;
  T alpha;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T ri = r(i...) - alpha * q(i...);
    r(i...) = ri;
    T zi = ri;
    if constexpr (Jacobi) zi = dinv(i...) * ri;
    add_product(s, 0, ri, ri);
    add_product(s, 1, ri, zi);
  }
};

/// x += alpha p, then p = z + beta p with z = D r: the last iteration's solution update and the
/// next direction in one pass.
template <class A, class T, bool Jacobi>
struct CgDirection {
  A x, p, r, dinv;
  T alpha, beta;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T pi = p(i...);
    x(i...) += alpha * pi;
    T zi = r(i...);
    if constexpr (Jacobi) zi *= dinv(i...);
    p(i...) = zi + beta * pi;
  }
};

/// r = b - q; sums (b.b, r.r) (CG with a preconditioner object: z = M r follows).
template <class A, class T>
struct CgStartResidual {
  A b, q, r;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T bi = b(i...);
    const T ri = bi - q(i...);
    r(i...) = ri;
    add_product(s, 0, bi, bi);
    add_product(s, 1, ri, ri);
  }
};

/// p = z; sums (r.z).
template <class A, class T>
struct CopyDot {
  A p, z, r;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T zi = z(i...);
    p(i...) = zi;
    add_product(s, 0, r(i...), zi);
  }
};

/// sums (r.r, r.z).
template <class A, class T>
struct Dot2 {
  A r, z;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T ri = r(i...);
    add_product(s, 0, ri, ri);
    add_product(s, 1, ri, z(i...));
  }
};

/// x += alpha p, then p = z + beta p (CG with a preconditioner object).
template <class A, class T>
struct CgDirectionZ {
  A x, p, z;
  T alpha, beta;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T pi = p(i...);
    x(i...) += alpha * pi;
    p(i...) = z(i...) + beta * pi;
  }
};

/// t = x + a z.
template <class A, class T>
struct AddScaled {
  A t, x, z;
  T a;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    t(i...) = x(i...) + a * z(i...);
  }
};

/// y += a x.
template <class A, class T>
struct Axpy {
  A y, x;
  T a;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    y(i...) += a * x(i...);
  }
};

/// sums ((b - q).(b - q)): the squared norm of the residual b - A x with q = A x.
template <class A, class T>
struct ResidualNorm {
  A b, q;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T ri = b(i...) - q(i...);
    add_product(s, 0, ri, ri);
  }
};

/// x = 0.
template <class A, class T>
struct Zero {
  A x;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    x(i...) = T(0);
  }
};

/// d = 1 / d; sums (number of zero or non-finite diagonal entries, number of negative ones).
template <class A, class T>
struct Invert {
  A d;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(Sums<T, 2>& s, I... i) const {
    const T v = d(i...);
    const bool bad = v == T(0) || !(v - v == T(0));  // zero, NaN or infinite
    d(i...) = bad ? T(0) : T(1) / v;
    if (bad) s.v[0] += T(1);
    if (v < T(0)) s.v[1] += T(1);
  }
};

/// z = d r (pointwise).
template <class A, class T>
struct Multiply {
  A z, d, r;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    z(i...) = d(i...) * r(i...);
  }
};

/// z = r.
template <class A, class T>
struct Copy {
  A z, r;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    z(i...) = r(i...);
  }
};

// ---- BiCGStab (van der Vorst 1992, right preconditioned) ---------------------------------------

/// r = b - q, rh = r (the shadow residual), p = v = 0; sums (b.b, r.r).
template <class A, class T>
struct BicgStart {
  A b, q, r, rh, p, v;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T bi = b(i...);
    const T ri = bi - q(i...);
    r(i...) = ri;
    rh(i...) = ri;
    p(i...) = T(0);
    v(i...) = T(0);
    add_product(s, 0, bi, bi);
    add_product(s, 1, ri, ri);
  }
};

/// p = r + beta (p - omega v), and ph = D p with Jacobi (ph is p otherwise).
template <class A, class T, bool Jacobi>
struct BicgDirection {
  A p, r, v, ph, dinv;
  T beta, omega;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T pi = r(i...) + beta * (p(i...) - omega * v(i...));
    p(i...) = pi;
    if constexpr (Jacobi) ph(i...) = dinv(i...) * pi;
  }
};

/// sums (rh.v, v.v).
template <class A, class T>
struct BicgSigma {
  A rh, v;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T vi = v(i...);
    add_product(s, 0, rh(i...), vi);
    add_product(s, 1, vi, vi);
  }
};

/// s = r - alpha v, and sh = D s with Jacobi (sh is s otherwise).
template <class A, class T, bool Jacobi>
struct BicgHalf {
  A s, r, v, sh, dinv;
  T alpha;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T si = r(i...) - alpha * v(i...);
    s(i...) = si;
    if constexpr (Jacobi) sh(i...) = dinv(i...) * si;
  }
};

/// sums (t.s, t.t, s.s).
template <class A, class T>
struct BicgOmega {
  A t, s;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& sum, I... i) const {
    const T ti = t(i...), si = s(i...);
    add_product(sum, 0, ti, si);
    add_product(sum, 1, ti, ti);
    add_product(sum, 2, si, si);
  }
};

/// x += alpha ph + omega sh, r = s - omega t; sums (rh.r, r.r).
template <class A, class T>
struct BicgUpdate {
  A x, ph, sh, r, s, t, rh;
  T alpha, omega;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& sum, I... i) const {
    x(i...) += alpha * ph(i...) + omega * sh(i...);
    const T ri = s(i...) - omega * t(i...);
    r(i...) = ri;
    add_product(sum, 0, rh(i...), ri);
    add_product(sum, 1, ri, ri);
  }
};

// ---- Chebyshev polynomial preconditioner and its eigenvalue estimate ---------------------------

/// The first Chebyshev step for z ~ A^-1 r from z = 0: d = c D r (D = diag(A)^-1 or I), z = d,
/// res = r.
template <class A, class T, bool Jacobi>
struct ChebStart {
  A d, z, res, r, dinv;
  T c;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T ri = r(i...);
    T di = ri;
    if constexpr (Jacobi) di *= dinv(i...);
    di *= c;
    d(i...) = di;
    z(i...) = di;
    res(i...) = ri;
  }
};

/// A later step, after w = A d: res -= w; d = a d + c D res; z += d.
template <class A, class T, bool Jacobi>
struct ChebStep {
  A res, w, d, z, dinv;
  T a, c;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T ri = res(i...) - w(i...);
    res(i...) = ri;
    T si = ri;
    if constexpr (Jacobi) si *= dinv(i...);
    const T di = a * d(i...) + c * si;
    d(i...) = di;
    z(i...) += di;
  }
};

/// Lanczos on D A (D = diag(A)^-1 or I) in the D^-1 inner product: u = D u - alpha q - beta p;
/// sums (u . D^-1 u).
template <class A, class T, bool Jacobi>
struct LanczosUpdate {
  A u, q, p, dinv;
  T alpha, beta;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    T ui = u(i...);
    if constexpr (Jacobi) ui *= dinv(i...);
    ui -= alpha * q(i...) + beta * p(i...);
    u(i...) = ui;
    T wi = ui;
    if constexpr (Jacobi) wi /= dinv(i...);
    add_product(s, 0, ui, wi);
  }
};

/// sums (v . D^-1 v) (D = diag(A)^-1 or I).
template <class A, class T, bool Jacobi>
struct WeightedNorm {
  A v, dinv;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    const T vi = v(i...);
    T wi = vi;
    if constexpr (Jacobi) wi /= dinv(i...);
    add_product(s, 0, vi, wi);
  }
};

/// v *= a.
template <class A, class T>
struct Scale {
  A v;
  T a;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    v(i...) *= a;
  }
};

/// u = D u (D = diag(A)^-1 or I); sums (u . u) (power iteration).
template <class A, class T, bool Jacobi>
struct PowerStep {
  A u, dinv;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& s, I... i) const {
    T ui = u(i...);
    if constexpr (Jacobi) {
      ui *= dinv(i...);
      u(i...) = ui;
    }
    add_product(s, 0, ui, ui);
  }
};

// ---- pipelined CG (Ghysels & Vanroose 2014, Algorithm 4 with Jacobi as M) ---------------------

/// r = b - n; u = D r (Jacobi only; u is r otherwise).
template <class A, class T, bool Jacobi>
struct PcgResidual {
  A b, n, r, u, dinv;
  template <class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(I... i) const {
    const T ri = b(i...) - n(i...);
    r(i...) = ri;
    if constexpr (Jacobi) u(i...) = dinv(i...) * ri;
  }
};

/// m = D w (Jacobi only); z = q = s = p = 0; sums (r.u, w.u, r.r, b.b). `Jacobi`: u, m, q are
/// vectors of their own (a preconditioner); `Diag`: it is the Jacobi diagonal, applied here (a
/// preconditioner object computed u = M r and m = M w before).
template <class A, class T, bool Jacobi, bool Diag = Jacobi>
struct PcgStart {
  A b, r, u, w, m, z, q, s, p, dinv;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& sum, I... i) const {
    const T ri = r(i...), wi = w(i...), bi = b(i...);
    T ui = ri;
    if constexpr (Jacobi) {
      ui = u(i...);
      if constexpr (Diag) m(i...) = dinv(i...) * wi;
      q(i...) = T(0);
    }
    z(i...) = T(0);
    s(i...) = T(0);
    p(i...) = T(0);
    add_product(sum, 0, ri, ui);
    add_product(sum, 1, wi, ui);
    add_product(sum, 2, ri, ri);
    add_product(sum, 3, bi, bi);
  }
};

/// Residual replacement, after r = b - A x, u = D r, w = A u and s = A p were recomputed:
/// m = D w and q = D s (Jacobi only; m is w and q is s otherwise; a preconditioner object,
/// Diag false, computed m = M w and q = M s before); sums (r.u, w.u, r.r).
template <class A, class T, bool Jacobi, bool Diag = Jacobi>
struct PcgReplace {
  A r, u, w, m, s, q, dinv;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& sum, I... i) const {
    const T ri = r(i...), wi = w(i...);
    T ui = ri;
    if constexpr (Jacobi) {
      ui = u(i...);
      if constexpr (Diag) {
        m(i...) = dinv(i...) * wi;
        q(i...) = dinv(i...) * s(i...);
      }
    }
    add_product(sum, 0, ri, ui);
    add_product(sum, 1, wi, ui);
    add_product(sum, 2, ri, ri);
  }
};

/// One pipelined CG iteration's vector work in one pass (n = A m was just computed):
///   z = n + beta z;  q = m + beta q;  s = w + beta s;  p = u + beta p;
///   x += alpha p;    r -= alpha s;    u -= alpha q;   w -= alpha z;   m = D w;
/// and the next iteration's sums (r.u, w.u, r.r). Without a preconditioner u is r, m is w and
/// q is s, and those lines drop out; with a preconditioner object (Diag false) m = M w is
/// computed after this pass.
template <class A, class T, bool Jacobi, bool Diag = Jacobi>
struct PcgUpdate {
  A n, z, m, q, w, s, u, p, x, r, dinv;
  T alpha, beta;
  template <class S, class... I>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(S& sum, I... i) const {
    const T wi = w(i...), ri = r(i...);
    const T zi = n(i...) + beta * z(i...);
    const T si = wi + beta * s(i...);
    T ui = ri, qi = si;
    if constexpr (Jacobi) {
      ui = u(i...);
      qi = m(i...) + beta * q(i...);
      q(i...) = qi;
    }
    const T pi = ui + beta * p(i...);
    z(i...) = zi;
    s(i...) = si;
    p(i...) = pi;
    x(i...) += alpha * pi;
    const T rn = ri - alpha * si;
    const T wn = wi - alpha * zi;
    r(i...) = rn;
    w(i...) = wn;
    T un = rn;
    if constexpr (Jacobi) {
      un = ui - alpha * qi;
      u(i...) = un;
      if constexpr (Diag) m(i...) = dinv(i...) * wn;
    }
    add_product(sum, 0, rn, un);
    add_product(sum, 1, wn, un);
    add_product(sum, 2, rn, rn);
  }
};

}  // namespace spmd::solvers::impl
