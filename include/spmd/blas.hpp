#pragma once
/// \file blas.hpp
/// Distributed BLAS over Kokkos Kernels (namespace spmd::blas).
///
/// Level 1, on 1-D Arrays: axpby, scal, dot, nrm2, nrminf, with the BLAS argument order (no
/// blas::copy: its source-first order is gone; use spmd::copyto(y, x), destination first).
/// They are spmd's own fused expressions and reductions (expr.hpp, reduce.hpp: one kernel layer,
/// any execution space instance), with the BLAS semantics for zero scalars (beta == 0: y is not
/// read; alpha == 0: x is not read).
///
/// Level 2 and 3, on block-distributed 2-D Arrays (process grid pr x pc):
///   gemv  y = alpha A x + beta y    (GemvPlan; gemv builds one and applies it once)
///   gemm  C = alpha A B + beta C    (GemmPlan, SUMMA; gemm builds one and applies it once)
/// A rank's row-major (LayoutRight) block is, read as column-major, the transposed block, so the
/// local products run as KokkosBlas::gemv / gemm on LayoutLeft views of the transposes, without
/// copies: (A B)^T = B^T A^T. Kokkos Kernels 3.4 takes no execution space instance: with an
/// instance other than the default, the local products are ordered after and before the
/// instance's work by fences (impl::on_default_instance).

#include <Kokkos_Core.hpp>
#include <KokkosBlas2_gemv.hpp>
#include <KokkosBlas3_gemm.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/algorithm.hpp"
#include "spmd/array.hpp"
#include "spmd/expr.hpp"
#include "spmd/impl/local_views.hpp"
#include "spmd/redistribute.hpp"
#include "spmd/reduce.hpp"

namespace spmd::blas {

namespace impl {
using spmd::impl::str;

template <class T, class M>
void require_1d_alike(const char* fn, const Array<T, 1, M>& x, const Array<T, 1, M>& y) {
  spmd::impl::check_same_layout(fn, x, y);
}

/// Row and column communicators of a 2-D process grid: `row` holds the ranks of this rank's
/// process row ordered by column coordinate, `col` those of its process column ordered by row.
struct GridComms {
  Comm row, col;
  explicit GridComms(const Distribution<2>& d)
      : row(d.comm().split(d.coords()[0], d.coords()[1])), col(d.comm().split(d.coords()[1], d.coords()[0])) {}
};

inline ProcessGrid grid_of(int p) {
  return ProcessGrid{{p}};
}
}  // namespace impl

// ---- Level 1 -------------------------------------------------------------------------------------

/// y = alpha x + beta y on `exec`. x and y distributed alike. Local (no communication), but
/// throws the same spmd::Error on every rank for arrays not distributed alike.
template <class T, class M>
void axpby(const typename M::execution_space& exec, const T& alpha, const Array<T, 1, M>& x, const T& beta,
           const Array<T, 1, M>& y) {
  impl::require_1d_alike("spmd::blas::axpby", x, y);
  if (alpha == T(0) && beta == T(0))
    assign(exec, y, T(0));
  else if (alpha == T(0))
    assign(exec, y, beta * y);
  else if (beta == T(0))
    assign(exec, y, alpha * x);
  else
    assign(exec, y, alpha * x + beta * y);
}
/// axpby on a default instance.
template <class T, class M>
void axpby(const T& alpha, const Array<T, 1, M>& x, const T& beta, const Array<T, 1, M>& y) {
  axpby(typename M::execution_space(), alpha, x, beta, y);
}

/// x = alpha x (alpha == 0: x = 0, NaNs included). Local.
template <class T, class M>
void scal(const typename M::execution_space& exec, const T& alpha, const Array<T, 1, M>& x) {
  if (alpha == T(0))
    assign(exec, x, T(0));
  else
    assign(exec, x, alpha * x);
}
/// scal on a default instance.
template <class T, class M>
void scal(const T& alpha, const Array<T, 1, M>& x) {
  scal(typename M::execution_space(), alpha, x);
}

/// Sum of x(i) y(i). Collective.
template <class T, class M>
T dot(const typename M::execution_space& exec, const Array<T, 1, M>& x, const Array<T, 1, M>& y) {
  std::string err;  // agreed in the reduction's own all-reduce (spmd::impl::combine_ranks)
  try {
    impl::require_1d_alike("spmd::blas::dot", x, y);
  } catch (const Error& e) {
    err = e.what();
  }
  if (!err.empty()) spmd::impl::fail_reduction<spmd::impl::Combine::sum, T>(x.comm(), err);
  return spmd::dot(exec, x, y);
}
/// dot on a default instance. Collective.
template <class T, class M>
T dot(const Array<T, 1, M>& x, const Array<T, 1, M>& y) {
  return dot(typename M::execution_space(), x, y);
}

/// sqrt(sum x(i)^2). Collective.
template <class T, class M>
spmd::impl::real_t<T> nrm2(const typename M::execution_space& exec, const Array<T, 1, M>& x) {
  return spmd::norm2(exec, x);
}
/// nrm2 on a default instance. Collective.
template <class T, class M>
spmd::impl::real_t<T> nrm2(const Array<T, 1, M>& x) {
  return spmd::norm2(x);
}

/// max |x(i)| (0 for an empty array). Collective.
template <class T, class M>
T nrminf(const typename M::execution_space& exec, const Array<T, 1, M>& x) {
  return spmd::norm_inf(exec, x);
}
/// nrminf on a default instance. Collective.
template <class T, class M>
T nrminf(const Array<T, 1, M>& x) {
  return spmd::norm_inf(x);
}

// ---- Level 2: gemv ---------------------------------------------------------------------------------

/// A plan for y = alpha A x + beta y with A (m x n) on a pr x pc process grid, x (n) and y (m)
/// 1-D arrays on A's communicator (any 1-D distributions).
///
/// Data movement per apply:
///   1. x goes to every process row: rank (r, c) receives the columns of its block of A,
///      x[col block c], in one redistribution whose destination is replicated over the process
///      rows (one Distribution<1> of n over each row communicator);
///   2. local KokkosBlas::gemv of the owned block: partial y over the block's rows;
///   3. the partial results are summed over each process row (one all-reduce on the row
///      communicator; NCCL for device data where the build has it);
///   4. process column 0 holds y[row block r] on rank (r, 0); one redistribution sends it to y's
///      own distribution (then y = that + beta y, unless beta is 0).
/// The plan holds the row/column communicators, both redistribution plans and the buffers.
template <class T, class M = DefaultMemorySpace>
class GemvPlan {
 public:
  /// Collective over A's communicator; throws the same spmd::Error on every rank for shapes or
  /// communicators that do not fit.
  GemvPlan(const Array<T, 2, M>& A, const Array<T, 1, M>& x, const Array<T, 1, M>& y)
      : a_dist_(checked(A, x, y)),
        grid_(a_dist_),
        x_row_(Distribution<1>(grid_.row, Index<1>{A.extent(1)}, impl::grid_of(a_dist_.dims()[1])),
               Label{"spmd::blas::x_row"}),
        y_col_(Distribution<1>(grid_.col, Index<1>{A.extent(0)}, impl::grid_of(a_dist_.dims()[0])),
               Label{"spmd::blas::y_col"}),
        x_plan_(A.comm(), x.distribution(), spmd::impl::Selection<1, 1>::identity(), x_row_.distribution(),
                Backend::automatic, "spmd::blas::gemv"),
        y_plan_(A.comm(), a_dist_.coords()[1] == 0 ? y_col_.distribution() : Distribution<1>(),
                spmd::impl::Selection<1, 1>::identity(), y.distribution(), Backend::automatic, "spmd::blas::gemv"),
        y_tmp_(y.distribution(), Label{"spmd::blas::y_tmp"}),
        x_dist_(x.distribution()),
        y_dist_(y.distribution()) {}

  /// y = alpha A x + beta y on `exec`. A, x, y on the plan's distributions. Collective.
  void apply(const typename M::execution_space& exec, const T& alpha, const Array<T, 2, M>& A, const Array<T, 1, M>& x,
             const T& beta, const Array<T, 1, M>& y) const {
    const char* fn = "spmd::blas::GemvPlan::apply";
    const spmd::impl::Region region("spmd::blas::gemv");
    if (A.distribution() != a_dist_ || x.distribution() != x_dist_ || y.distribution() != y_dist_)
      throw Error::replicated(impl::str(fn, ": arrays are not on the distributions the plan was built for"));
    x_plan_.apply(exec, x_row_, x);
    const auto yp = spmd::impl::vec(y_col_);
    if (A.owned().extent(0) > 0) {
      if (A.owned().extent(1) > 0)
        spmd::impl::on_default_instance(exec, "spmd::blas::gemv local product", [&] {
          KokkosBlas::gemv("T", alpha, spmd::impl::transposed_block(A), spmd::impl::vec(x_row_), T(0), yp);
        });
      else
        Kokkos::deep_copy(exec, yp, T(0));
    }
    spmd::allreduce(exec, grid_.row, yp, Op::sum);
    const Array<T, 1, M> src = a_dist_.coords()[1] == 0 ? spmd::impl::share(y_col_) : Array<T, 1, M>();
    if (beta == T(0)) {
      y_plan_.apply(exec, y, src);
      return;
    }
    y_plan_.apply(exec, y_tmp_, src);
    axpby(exec, T(1), y_tmp_, beta, y);
  }
  /// apply() on a default instance. Collective.
  void apply(const T& alpha, const Array<T, 2, M>& A, const Array<T, 1, M>& x, const T& beta,
             const Array<T, 1, M>& y) const {
    apply(typename M::execution_space(), alpha, A, x, beta, y);
  }

 private:
  static const Distribution<2>& checked(const Array<T, 2, M>& A, const Array<T, 1, M>& x, const Array<T, 1, M>& y) {
    const char* fn = "spmd::blas::gemv";
    spmd::impl::agree(A.comm(), [&] {
      if (x.comm() != A.comm() || y.comm() != A.comm())
        throw Error(impl::str(fn, ": A, x and y must live on one communicator"));
      if (x.extent(0) != A.extent(1) || y.extent(0) != A.extent(0))
        throw Error(impl::str(fn, ": shapes do not fit y = A x: A ", spmd::impl::shape_str(A.shape()), ", x ",
                              spmd::impl::shape_str(x.shape()), ", y ", spmd::impl::shape_str(y.shape())));
    });
    return A.distribution();
  }

  Distribution<2> a_dist_;
  impl::GridComms grid_;
  Array<T, 1, M> x_row_, y_col_;
  spmd::impl::RegionPlan<T, 1, 1, M> x_plan_, y_plan_;
  Array<T, 1, M> y_tmp_;
  Distribution<1> x_dist_, y_dist_;
};

/// y = alpha A x + beta y (see GemvPlan; keep a plan to repeat). Collective.
template <class T, class M>
void gemv(const typename M::execution_space& exec, const T& alpha, const Array<T, 2, M>& A, const Array<T, 1, M>& x,
          const T& beta, const Array<T, 1, M>& y) {
  GemvPlan<T, M>(A, x, y).apply(exec, alpha, A, x, beta, y);
}
/// gemv on a default instance. Collective.
template <class T, class M>
void gemv(const T& alpha, const Array<T, 2, M>& A, const Array<T, 1, M>& x, const T& beta, const Array<T, 1, M>& y) {
  gemv(typename M::execution_space(), alpha, A, x, beta, y);
}

// ---- Level 3: gemm (SUMMA) -------------------------------------------------------------------------

/// A plan for C = alpha A B + beta C with A (m x k), B (k x n), C (m x n) on one pr x pc process
/// grid of one communicator (blocks of any sizes: they may differ by one, or be empty).
///
/// SUMMA: the inner index k is walked in panels. A panel never crosses a block edge of A's
/// columns (k over pc) nor of B's rows (k over pr), so each panel has one owner column c of A
/// and one owner row r of B, whatever the two block sizes are; panels are at most `panel` wide.
/// For each panel the owners copy it out, A's panel is broadcast along process rows (row
/// communicator, root c), B's along process columns (column communicator, root r), and every
/// rank adds alpha A_panel B_panel to its block of C with KokkosBlas::gemm (beta on the first).
/// Device data is staged through pinned host buffers for MPI_Bcast when MPI is not CUDA-aware.
template <class T, class M = DefaultMemorySpace>
class GemmPlan {
 public:
  /// Collective over the arrays' communicator; throws the same spmd::Error on every rank for
  /// shapes, grids or communicators that do not fit.
  GemmPlan(const Array<T, 2, M>& A, const Array<T, 2, M>& B, const Array<T, 2, M>& C, index_t panel = 256)
      : a_(checked(A, B, C, panel)), b_(B.distribution()), c_(C.distribution()), grid_(a_) {
    const index_t K = A.extent(1);
    const int pr = a_.dims()[0], pc = a_.dims()[1];
    index_t widest = 0;
    for (index_t k0 = 0; k0 < K;) {
      const int ca = spmd::impl::block_of(K, pc, k0), rb = spmd::impl::block_of(K, pr, k0);
      index_t k1 = std::min(spmd::impl::block_start(K, pc, ca) + spmd::impl::block_extent(K, pc, ca),
                            spmd::impl::block_start(K, pr, rb) + spmd::impl::block_extent(K, pr, rb));
      k1 = std::min(k1, k0 + panel);
      panels_.push_back(Panel{k0, k1, ca, rb});
      widest = std::max(widest, k1 - k0);
      k0 = k1;
    }
    const auto mloc = static_cast<std::size_t>(A.owned().extent(0)),
               nloc = static_cast<std::size_t>(B.owned().extent(1));
    const auto w = static_cast<std::size_t>(widest);
    a_panel_ =
        buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::blas::gemm::a_panel")), mloc * w);
    b_panel_ =
        buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::blas::gemm::b_panel")), w * nloc);
    staged_ = !spmd::impl::host_accessible<M>() && !spmd::impl::mpi_cuda_aware();
    if (staged_) {
      a_host_ = host_buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::blas::gemm::a_staging")),
                            mloc * w);
      b_host_ = host_buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("spmd::blas::gemm::b_staging")),
                            w * nloc);
    }
  }

  /// C = alpha A B + beta C on `exec`. Arrays on the plan's distributions. Collective.
  void apply(const typename M::execution_space& exec, const T& alpha, const Array<T, 2, M>& A, const Array<T, 2, M>& B,
             const T& beta, const Array<T, 2, M>& C) const {
    const char* fn = "spmd::blas::GemmPlan::apply";
    const spmd::impl::Region region("spmd::blas::gemm");
    if (A.distribution() != a_ || B.distribution() != b_ || C.distribution() != c_)
      throw Error::replicated(spmd::impl::str(fn, ": arrays are not on the distributions the plan was built for"));
    const int mloc = static_cast<int>(A.owned().extent(0)), nloc = static_cast<int>(B.owned().extent(1));
    const auto ct = spmd::impl::transposed_block(C);  // n_loc x m_loc, column-major
    const index_t ka = A.owned().lo[1], kb = B.owned().lo[0];
    const int my_c = a_.coords()[1], my_r = a_.coords()[0];
    bool first = true;
    for (const auto& p : panels_) {
      const int w = static_cast<int>(p.k1 - p.k0);
      // Row-major panels: A_panel (mloc x w), B_panel (w x nloc); read column-major they are
      // A_panel^T (w x mloc) and B_panel^T (nloc x w).
      const Kokkos::View<T**, Kokkos::LayoutRight, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>> ap(a_panel_.data(), mloc,
                                                                                                  w),
          bp(b_panel_.data(), w, nloc);
      if (my_c == p.owner_col && mloc > 0) {
        const int lo = static_cast<int>(p.k0 - ka);
        Kokkos::deep_copy(exec, ap, Kokkos::subview(A.local(), Kokkos::ALL, std::make_pair(lo, lo + w)));
      }
      if (my_r == p.owner_row && nloc > 0) {
        const int lo = static_cast<int>(p.k0 - kb);
        Kokkos::deep_copy(exec, bp, Kokkos::subview(B.local(), std::make_pair(lo, lo + w), Kokkos::ALL));
      }
      bcast(exec, grid_.row, a_panel_, a_host_, static_cast<std::size_t>(mloc) * w, p.owner_col);
      bcast(exec, grid_.col, b_panel_, b_host_, static_cast<std::size_t>(w) * nloc, p.owner_row);
      if (mloc > 0 && nloc > 0) {
        const LL apt(a_panel_.data(), w, mloc), bpt(b_panel_.data(), nloc, w);
        const T b = first ? beta : T(1);
        spmd::impl::on_default_instance(exec, "spmd::blas::gemm local product",
                                        [&] { KokkosBlas::gemm("N", "N", alpha, bpt, apt, b, ct); });
      }
      first = false;
    }
    if (first) {  // k == 0: C = beta C (every rank alike)
      if (beta == T(0))
        assign(exec, C, T(0));
      else
        assign(exec, C, beta * C);
    }
  }
  /// apply() on a default instance. Collective.
  void apply(const T& alpha, const Array<T, 2, M>& A, const Array<T, 2, M>& B, const T& beta,
             const Array<T, 2, M>& C) const {
    apply(typename M::execution_space(), alpha, A, B, beta, C);
  }

  /// Number of panels per apply. Local.
  int num_panels() const { return static_cast<int>(panels_.size()); }

 private:
  using buffer = Kokkos::View<T*, M>;
  using host_buffer = Kokkos::View<T*, typename spmd::impl::staging_space<M>::type>;
  using LL = Kokkos::View<T**, Kokkos::LayoutLeft, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  struct Panel {
    index_t k0, k1;
    int owner_col, owner_row;
  };
  /// MPI_Bcast of buf[0..n) over `comm` from `root`, staged through `host` for device data.
  void bcast(const typename M::execution_space& exec, const Comm& comm, const buffer& buf, const host_buffer& host,
             std::size_t n, int root) const {
    if (comm.size() == 1 || n == 0) return;
    const auto part = Kokkos::subview(buf, std::make_pair(std::size_t(0), n));
    if (!staged_) {
      spmd::impl::fence(exec, "spmd::blas::gemm before MPI_Bcast");
      bcast_bytes(comm, buf.data(), n, root);
      return;
    }
    const auto hpart = Kokkos::subview(host, std::make_pair(std::size_t(0), n));
    if (comm.rank() == root) Kokkos::deep_copy(exec, hpart, part);
    spmd::impl::fence(exec, "spmd::blas::gemm before MPI_Bcast");
    bcast_bytes(comm, host.data(), n, root);
    if (comm.rank() != root) Kokkos::deep_copy(exec, part, hpart);
  }
  static void bcast_bytes(const Comm& comm, T* data, std::size_t n, int root) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes > static_cast<std::size_t>(INT_MAX))
      throw Error(spmd::impl::str("spmd::blas::gemm: a panel of ", n, " elements is too large for one MPI_Bcast"));
    SPMD_MPI_CHECK(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm.raw()), "spmd::blas::gemm");
  }
  static const Distribution<2>& checked(const Array<T, 2, M>& A, const Array<T, 2, M>& B, const Array<T, 2, M>& C,
                                        index_t panel) {
    const char* fn = "spmd::blas::gemm";
    using spmd::impl::shape_str;
    spmd::impl::agree(A.comm(), [&] { checks(fn, A, B, C, panel); });
    return A.distribution();
  }
  static void checks(const char* fn, const Array<T, 2, M>& A, const Array<T, 2, M>& B, const Array<T, 2, M>& C,
                     index_t panel) {
    using spmd::impl::shape_str;
    if (B.comm() != A.comm() || C.comm() != A.comm())
      throw Error(spmd::impl::str(fn, ": A, B and C must live on one communicator"));
    if (A.extent(1) != B.extent(0) || C.extent(0) != A.extent(0) || C.extent(1) != B.extent(1))
      throw Error(spmd::impl::str(fn, ": shapes do not fit C = A B: A ", shape_str(A.shape()), ", B ",
                                  shape_str(B.shape()), ", C ", shape_str(C.shape())));
    if (B.distribution().dims() != A.distribution().dims() || C.distribution().dims() != A.distribution().dims())
      throw Error(spmd::impl::str(fn, ": A, B and C must share one process grid; they have ",
                                  shape_str(A.distribution().dims()), ", ", shape_str(B.distribution().dims()), ", ",
                                  shape_str(C.distribution().dims())));
    if (panel < 1) throw Error(spmd::impl::str(fn, ": panel width ", panel, " must be at least 1"));
  }

  Distribution<2> a_, b_, c_;
  impl::GridComms grid_;
  std::vector<Panel> panels_;
  bool staged_ = false;
  buffer a_panel_, b_panel_;
  host_buffer a_host_, b_host_;
};

/// C = alpha A B + beta C by SUMMA (see GemmPlan; keep a plan to repeat). Collective.
template <class T, class M>
void gemm(const typename M::execution_space& exec, const T& alpha, const Array<T, 2, M>& A, const Array<T, 2, M>& B,
          const T& beta, const Array<T, 2, M>& C) {
  GemmPlan<T, M>(A, B, C).apply(exec, alpha, A, B, beta, C);
}
/// gemm on a default instance. Collective.
template <class T, class M>
void gemm(const T& alpha, const Array<T, 2, M>& A, const Array<T, 2, M>& B, const T& beta, const Array<T, 2, M>& C) {
  gemm(typename M::execution_space(), alpha, A, B, beta, C);
}

}  // namespace spmd::blas
