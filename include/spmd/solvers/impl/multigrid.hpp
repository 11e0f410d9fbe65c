#pragma once
// The work of the geometric multigrid preconditioner (solvers/multigrid.hpp has the method,
// its hierarchy, smoothers and costs): impl::MultigridHierarchy, the levels and the V-cycle
// behind spmd::solvers::Multigrid, and the slice helpers of its stencils.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/distribution.hpp"
#include "spmd/error.hpp"
#include "spmd/expr.hpp"
#include "spmd/gather.hpp"
#include "spmd/halo.hpp"
#include "spmd/impl/region_plan.hpp"
#include "spmd/slice.hpp"
#include "spmd/solvers/chebyshev.hpp"
#include "spmd/solvers/laplacian.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"
namespace spmd::solvers::impl {

/// The slices of one axis each, as an N-d selection.
template <int N>
using Slices = std::array<Slice, N>;

template <class A, std::size_t R, std::size_t... D>
auto take(const A& a, const std::array<Slice, R>& s, std::index_sequence<D...>) {
  return a(s[D]...);
}
/// a(s[0], ..., s[N-1]). Local.
template <class A, std::size_t R>
auto take(const A& a, const std::array<Slice, R>& s) {
  return take(a, s, std::make_index_sequence<R>{});
}
/// s moved by off[d] along every axis d. Local.
template <int N>
Slices<N> shifted(const Slices<N>& s, const std::array<int, N>& off) {
  Slices<N> o = s;
  for (int d = 0; d < N; ++d) o[d] = slice(s[d].start + off[d], s[d].stop + off[d], s[d].step);
  return o;
}
/// The offset along every axis of stencil point K of the 3^N box, each in {-1, 0, 1}.
template <int N>
constexpr std::array<int, N> box_offset(std::size_t k) {
  std::array<int, N> off{};
  for (int d = N - 1; d >= 0; --d) {
    off[d] = static_cast<int>(k % 3) - 1;
    k /= 3;
  }
  return off;
}
/// prod_d w[off_d + 1]: the weight of a separable 3-point stencil's point.
template <int N>
double box_weight(const std::array<int, N>& off, const double (&w)[3]) {
  double p = 1;
  for (int d = 0; d < N; ++d) p *= w[off[d] + 1];
  return p;
}
/// sum over the 3^N box of w(o) a(s + o): one fused expression of 3^N halo reads.
template <int N, class A, std::size_t... K>
auto box_stencil(const A& a, const Slices<N>& s, const double (&w)[3], std::index_sequence<K...>) {
  using T = typename A::value_type;
  return (... + (static_cast<T>(box_weight<N>(box_offset<N>(K), w)) * take(a, shifted<N>(s, box_offset<N>(K)))));
}
/// The unit offset -e_d (sign -1) or +e_d.
template <int N>
std::array<int, N> unit(int d, int sign) {
  std::array<int, N> o{};
  o[d] = sign;
  return o;
}
/// sum over the 2N face neighbours of a(s +- e_d).
template <int N, class A, std::size_t... D>
auto face_sum(const A& a, const Slices<N>& s, std::index_sequence<D...>) {
  return (... + (take(a, shifted<N>(s, unit<N>(static_cast<int>(D), -1))) +
                 take(a, shifted<N>(s, unit<N>(static_cast<int>(D), 1)))));
}

/// MultigridOptions after the public class's checks (solvers/multigrid.hpp), with the Jacobi
/// weight's default filled in.
struct MultigridSettings {
  bool jacobi = false;  // the smoother: weighted Jacobi (else Chebyshev)
  int smoothing_steps = 2;
  double chebyshev_ratio = 0.25;
  double jacobi_weight = 0;
  index_t coarse_points = 512;
  index_t gather_points = 4096;
  int max_levels = 30;
};

/// The levels and the V-cycle of a multigrid preconditioner (solvers/multigrid.hpp).
template <class T, int N, class M>
class MultigridHierarchy {
 public:
  using operator_type = Laplacian<T, N, M>;             ///< the operator of the finest level
  using vector_type = Array<T, N, M>;                   ///< the vectors it applies to
  using value_type = T;                                 ///< their element type
  using execution_space = typename M::execution_space;  ///< where it runs

  /// The hierarchy for L (settings already checked), built on `exec`. Collective; throws the
  /// same spmd::Error on every rank for a coarsest level too large for the direct solve.
  MultigridHierarchy(const execution_space& exec, const operator_type& L, const MultigridSettings& s)
      : o_(s), comm_(L.distribution().comm()) {
    const char* fn = "spmd::solvers::multigrid";
    std::array<int, N> dims{};
    for (int d = 0; d < N; ++d) dims[d] = L.distribution().dims()[d];
    Index<N> n = L.distribution().shape();
    bool root_only = comm_.size() == 1;  // levels on a communicator of one rank
    add_level(n, false, dims);
    while (static_cast<int>(lv_.size()) < o_.max_levels && points(n) > o_.coarse_points) {
      Index<N> nc;
      bool can = true;
      for (int d = 0; d < N; ++d) {
        nc[d] = (n[d] - 1) / 2;
        can = can && n[d] >= 3;
      }
      if (!can) break;
      const bool coarsest = points(nc) <= o_.coarse_points;
      bool gather = false;
      if (!root_only) {
        index_t per_rank = 1;
        for (int d = 0; d < N; ++d) {
          const index_t block = (nc[d] + 2) / dims[d];
          per_rank *= block;
          gather = gather || block < 2;
        }
        gather = gather || per_rank < o_.gather_points || coarsest;
      }
      if (gather) {
        gather_ = static_cast<int>(lv_.size());
        root_only = true;
      }
      lv_.back().has_coarse = true;
      add_level(nc, root_only, dims);
      n = nc;
    }
    if (points(n) > max_direct)
      throw Error::replicated(spmd::impl::str(fn, ": the coarsest level (", spmd::impl::shape_str(n), ", ", points(n),
                                              " points) is larger than the direct solve takes (", max_direct,
                                              "): a grid this elongated stops the full coarsening early"));
    if (gather_ > 0) make_gather_plans();
    factor_coarsest();
    (void)exec;
  }

  /// z = one V-cycle applied to r (from z = 0), on `exec`. Collective (halo exchanges; the
  /// moves onto rank 0 and back).
  void apply(const execution_space& exec, const vector_type& r, const vector_type& z) const {
    const spmd::impl::Region region("spmd::solvers::multigrid::apply");
    Level& f = lv_[0];
    assign(exec, take(f.b, f.I), take(r, all_slices(r)), label("in"));
    vcycle(exec, 0);
    assign(exec, take(z, all_slices(z)), take(f.x, f.I), label("out"));
  }
  /// One line for logs and verdicts: the kind and how it was built. Local.
  std::string describe() const {
    std::string s = spmd::impl::str("multigrid V(", o_.smoothing_steps, ",", o_.smoothing_steps, ") ",
                                    o_.jacobi ? "jacobi" : "chebyshev", ", ", lv_.size(), " levels ",
                                    spmd::impl::shape_str(lv_.front().n), " .. ", spmd::impl::shape_str(lv_.back().n));
    if (gather_ > 0)
      s += spmd::impl::str(", on rank 0 from level ", gather_, " (", spmd::impl::shape_str(lv_[gather_].n), ")");
    return s;
  }
  /// The number of levels. Local.
  int levels() const { return static_cast<int>(lv_.size()); }
  /// The unknowns per axis of level l. Local.
  const Index<N>& level_shape(int l) const { return lv_[static_cast<std::size_t>(l)].n; }
  /// The first level held by rank 0 alone (-1: none). Local.
  int gather_level() const { return gather_; }

 private:
  /// Points the dense coarsest solve takes at most.
  static constexpr index_t max_direct = 4096;
  using Plan = spmd::impl::RegionPlan<T, N, N, M, N>;

  struct Level {
    Index<N> n;
    bool root_only = false;   // on rank 0's own communicator (null arrays elsewhere)
    bool has_coarse = false;  // a coarser level follows
    vector_type x, xo, b, r, t;
    Slices<N> I, C;   // interior; the coarse level's points (padded indices)
    double lmax = 0;  // largest eigenvalue of D^-1 A
    bool here() const { return !x.is_null(); }
  };

  static index_t points(const Index<N>& n) {
    index_t p = 1;
    for (int d = 0; d < N; ++d) p *= n[d];
    return p;
  }
  static Label label(const char* what) { return Label{spmd::impl::str("spmd::solvers::multigrid::", what)}; }
  template <class V>
  static Slices<N> all_slices(const V& v) {
    Slices<N> s;
    for (int d = 0; d < N; ++d) s[d] = slice(0, v.extent(d));
    return s;
  }

  void add_level(const Index<N>& n, bool root_only, const std::array<int, N>& dims) {
    Level l;
    l.n = n;
    l.root_only = root_only && comm_.size() > 1;
    Index<N> padded;
    for (int d = 0; d < N; ++d) {
      padded[d] = n[d] + 2;
      l.I[d] = slice(1, n[d] + 1);
      l.C[d] = slice(2, 2 * ((n[d] - 1) / 2) + 1, 2);
      l.lmax += (1 + std::cos(3.14159265358979323846 / static_cast<double>(n[d] + 1))) / N;
    }
    const std::string name = spmd::impl::str("spmd::solvers::multigrid::level", lv_.size());
    Distribution<N> dist;
    if (!l.root_only) {
      std::vector<int> g(dims.begin(), dims.end());
      if (root_only) g.assign(N, 1);
      dist = Distribution<N>(comm_, padded, halo(1), ProcessGrid{g});
    } else if (comm_.rank() == 0) {
      dist = Distribution<N>(Comm(MPI_COMM_SELF), padded, halo(1));
    }
    if (!dist.is_null()) {
      l.x = vector_type(dist, Label{name + "::x"});
      l.xo = vector_type(dist, Label{name + "::x_old"});
      l.b = vector_type(dist, Label{name + "::b"});
      l.r = vector_type(dist, Label{name + "::r"});
      l.t = vector_type(dist, Label{name + "::t"});
    }
    lv_.push_back(std::move(l));
  }

  /// The strided moves between the last level on every rank and the first on rank 0.
  /// Collective.
  void make_gather_plans() {
    const Level& f = lv_[static_cast<std::size_t>(gather_ - 1)];
    const Level& c = lv_[static_cast<std::size_t>(gather_)];
    spmd::impl::Selection<N, N> fine, coarse;
    for (int d = 0; d < N; ++d) {
      fine.start[d] = 2;
      fine.step[d] = 2;
      fine.map[d] = d;
      coarse.start[d] = 1;
      coarse.step[d] = 1;
      coarse.map[d] = d;
    }
    const Distribution<N> cd = c.here() ? c.x.distribution() : Distribution<N>();
    down_ = std::make_shared<Plan>(comm_, f.x.distribution(), fine, cd, coarse, c.n, Backend::automatic,
                                   "spmd::solvers::multigrid");
    up_ = std::make_shared<Plan>(comm_, cd, coarse, f.x.distribution(), fine, c.n, Backend::automatic,
                                 "spmd::solvers::multigrid");
  }

  /// The dense Cholesky factor of the coarsest level's Laplacian (on the ranks that hold it).
  /// Local.
  void factor_coarsest() {
    const Level& c = lv_.back();
    const index_t m = points(c.n);
    coarse_rhs_.assign(static_cast<std::size_t>(m), 0.0);
    if (!c.here()) return;
    if (c.x.comm().size() == 1) {
      host_b_ = Kokkos::create_mirror_view(Kokkos::HostSpace(), c.b.local_with_halo());
      host_x_ = Kokkos::create_mirror_view(Kokkos::HostSpace(), c.x.local_with_halo());
    }
    std::vector<double> a(static_cast<std::size_t>(m * m), 0.0);
    index_t stride[N];
    index_t s = 1;
    for (int d = N - 1; d >= 0; --d) {
      stride[d] = s;
      s *= c.n[d];
    }
    for (index_t k = 0; k < m; ++k) {
      a[static_cast<std::size_t>(k * m + k)] = 2.0 * N;
      for (int d = 0; d < N; ++d) {
        const index_t g = (k / stride[d]) % c.n[d];
        if (g > 0) a[static_cast<std::size_t>(k * m + k - stride[d])] = -1;
        if (g + 1 < c.n[d]) a[static_cast<std::size_t>(k * m + k + stride[d])] = -1;
      }
    }
    for (index_t j = 0; j < m; ++j) {  // a = L L^T, L in the lower triangle
      double djj = a[static_cast<std::size_t>(j * m + j)];
      for (index_t k = 0; k < j; ++k)
        djj -= a[static_cast<std::size_t>(j * m + k)] * a[static_cast<std::size_t>(j * m + k)];
      const double ljj = std::sqrt(djj);
      a[static_cast<std::size_t>(j * m + j)] = ljj;
      for (index_t i = j + 1; i < m; ++i) {
        double v = a[static_cast<std::size_t>(i * m + j)];
        for (index_t k = 0; k < j; ++k)
          v -= a[static_cast<std::size_t>(i * m + k)] * a[static_cast<std::size_t>(j * m + k)];
        a[static_cast<std::size_t>(i * m + j)] = v / ljj;
      }
    }
    chol_ = std::move(a);
  }

  /// x = A^-1 b on the coarsest level (its interior, row-major). Collective over the level's
  /// ranks (rank 0 alone, unless the operator's grid itself is the coarsest level).
  void direct(const execution_space& exec, const Level& c) const {
    const bool alone = c.x.comm().size() == 1;
    if (alone) {
      // host copies made once (the arrays themselves in host memory); the storage of a 1-rank
      // array with halo 1 is n_d + 4 per axis
      Kokkos::deep_copy(exec, host_b_, c.b.local_with_halo());
      spmd::impl::fence(exec, "spmd::solvers::multigrid::direct");
      solve_dense(c.n, 2, host_b_.data(), host_x_.data());
      Kokkos::deep_copy(exec, c.x.local_with_halo(), host_x_);
      return;
    }
    std::vector<T> padded = spmd::gather(exec, c.b);  // the whole padded grid (n_d + 2) on rank 0
    if (!padded.empty()) solve_dense(c.n, 1, padded.data(), padded.data());
    spmd::scatter(exec, c.x, padded);
  }
  /// Solve the coarsest level's system: its right side at the interior of `in`, the solution
  /// into the interior of `out` (grids stored with h layers around the n_d interior points).
  /// Local.
  void solve_dense(const Index<N>& n, int h, const T* in, T* out) const {
    const index_t m = points(n);
    std::vector<double>& f = coarse_rhs_;
    index_t k = 0;
    for_interior(n, h, [&](index_t at) { f[static_cast<std::size_t>(k++)] = static_cast<double>(in[at]); });
    const auto L = [&](index_t i, index_t j) { return chol_[static_cast<std::size_t>(i * m + j)]; };
    for (index_t i = 0; i < m; ++i) {  // L y = f
      double v = f[static_cast<std::size_t>(i)];
      for (index_t j = 0; j < i; ++j) v -= L(i, j) * f[static_cast<std::size_t>(j)];
      f[static_cast<std::size_t>(i)] = v / L(i, i);
    }
    for (index_t i = m - 1; i >= 0; --i) {  // L^T x = y
      double v = f[static_cast<std::size_t>(i)];
      for (index_t j = i + 1; j < m; ++j) v -= L(j, i) * f[static_cast<std::size_t>(j)];
      f[static_cast<std::size_t>(i)] = v / L(i, i);
    }
    k = 0;
    for_interior(n, h, [&](index_t at) { out[at] = static_cast<T>(f[static_cast<std::size_t>(k++)]); });
  }
  /// f(storage offset) for each interior point of a padded level stored with `h` layers around
  /// its n_d interior points, in row-major order. Local.
  template <class F>
  static void for_interior(const Index<N>& n, int h, const F& f) {
    index_t total = 1;
    for (int d = 0; d < N; ++d) total *= n[d];
    for (index_t k = 0; k < total; ++k) {
      index_t rest = k, off = 0, stride = 1;
      for (int d = N - 1; d >= 0; --d) {
        const index_t g = rest % n[d];
        rest /= n[d];
        off += (g + h) * stride;
        stride *= n[d] + 2 * h;
      }
      f(off);
    }
  }

  /// x(I) = p x(I) - q x_old(I) + s (b(I) + sum of x's face neighbours) into x_old, then the two
  /// swap (q == 0: x_old is not read). Collective.
  void smooth_step(const execution_space& exec, Level& l, double p, double q, double s) const {
    spmd::exchange_halo(exec, l.x, Pattern::face);
    const auto nb = face_sum<N>(l.x, l.I, std::make_index_sequence<N>{});
    const T pp = static_cast<T>(p), qq = static_cast<T>(q), ss = static_cast<T>(s);
    if (q == 0)
      assign(exec, take(l.xo, l.I), pp * take(l.x, l.I) + ss * (take(l.b, l.I) + nb), label("smooth"));
    else
      assign(exec, take(l.xo, l.I), pp * take(l.x, l.I) - qq * take(l.xo, l.I) + ss * (take(l.b, l.I) + nb),
             label("smooth"));
    spmd::swap(l.x, l.xo);
  }
  /// `smoothing_steps` steps of the smoother on level l, from x = 0 (`from_zero`) or from x.
  /// Collective.
  void smooth(const execution_space& exec, Level& l, bool from_zero) const {
    const double dinv = 1.0 / (2 * N);
    const int steps = o_.smoothing_steps;
    if (o_.jacobi) {
      const double w = o_.jacobi_weight;
      int k = 0;
      if (from_zero) {
        assign(exec, take(l.x, l.I), static_cast<T>(w * dinv) * take(l.b, l.I), label("smooth"));
        k = 1;
      }
      for (; k < steps; ++k) smooth_step(exec, l, 1 - w, 0, w * dinv);
      return;
    }
    impl::ChebyshevSteps cs(o_.chebyshev_ratio * l.lmax, l.lmax);
    const double c1 = cs.first();
    bool prev_zero = from_zero;
    if (from_zero)
      assign(exec, take(l.x, l.I), static_cast<T>(c1 * dinv) * take(l.b, l.I), label("smooth"));
    else
      smooth_step(exec, l, 1 - c1, 0, c1 * dinv);  // x_1 = x_0 + c1 D^-1 (b - A x_0); x_old = x_0
    for (int k = 1; k < steps; ++k) {
      const auto ac = cs.next();  // x_{k+1} = x_k + a (x_k - x_{k-1}) + c D^-1 (b - A x_k)
      smooth_step(exec, l, 1 + ac.first - ac.second, prev_zero ? 0.0 : ac.first, ac.second * dinv);
      prev_zero = false;
    }
  }

  /// One V-cycle from level l (x = the correction for b). Collective over the level's ranks.
  void vcycle(const execution_space& exec, int li) const {
    Level& l = lv_[static_cast<std::size_t>(li)];
    if (!l.has_coarse) {
      direct(exec, l);
      return;
    }
    Level& c = lv_[static_cast<std::size_t>(li + 1)];
    smooth(exec, l, true);
    // r = b - A x, then t(C) = 4 R r
    spmd::exchange_halo(exec, l.x, Pattern::face);
    assign(
        exec, take(l.r, l.I),
        take(l.b, l.I) - static_cast<T>(2 * N) * take(l.x, l.I) + face_sum<N>(l.x, l.I, std::make_index_sequence<N>{}),
        label("residual"));
    spmd::exchange_halo(exec, l.r, Pattern::box);
    static constexpr double fw[3] = {1.0, 2.0, 1.0};  // 4 x (1/4, 1/2, 1/4) per axis, over 4^(N-1)
    static constexpr double pw[3] = {0.5, 1.0, 0.5};
    const T scale = static_cast<T>(4.0 / std::pow(4.0, N));
    assign(exec, take(l.t, l.C), scale * box_stencil<N>(l.r, l.C, fw, std::make_index_sequence<ipow3(N)>{}),
           label("restrict"));
    if (li + 1 == gather_) {
      down_->apply(exec, c.b, l.t);
      if (c.here()) vcycle(exec, li + 1);
      up_->apply(exec, l.t, c.x);
    } else {
      assign(exec, take(c.b, c.I), take(l.t, l.C), label("to_coarse"));
      vcycle(exec, li + 1);
      assign(exec, take(l.t, l.C), take(c.x, c.I), label("from_coarse"));
    }
    spmd::exchange_halo(exec, l.t, Pattern::box);
    assign(exec, take(l.x, l.I), take(l.x, l.I) + box_stencil<N>(l.t, l.I, pw, std::make_index_sequence<ipow3(N)>{}),
           label("prolong"));
    smooth(exec, l, false);
  }
  static constexpr std::size_t ipow3(int n) { return n == 0 ? 1 : 3 * ipow3(n - 1); }

  MultigridSettings o_;
  Comm comm_;
  mutable std::vector<Level> lv_;
  int gather_ = -1;
  std::shared_ptr<Plan> down_, up_;
  std::vector<double> chol_;
  mutable std::vector<double> coarse_rhs_;
  typename vector_type::view_type::HostMirror host_b_, host_x_;  // the coarsest level's, on the host
};

}  // namespace spmd::solvers::impl
