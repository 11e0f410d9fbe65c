#pragma once
/// \file solvers/ilu.hpp
/// Block Jacobi with a local incomplete LU factorisation: each rank factors its diagonal block
/// of a CsrMatrix (the rows it owns and the columns it owns, sparse/csr_matrix.hpp) as
/// A_rr ~ L U with the sparsity pattern of A_rr (ILU(0); ILU(k) with IluOptions::fill_level),
/// and the preconditioner solves z = U^-1 L^-1 r on every rank at once, with no communication.
/// The couplings between ranks' blocks are dropped, so the iteration counts grow with the rank
/// count (as PETSc's PCBJACOBI + PCILU's do).
///
///   auto M = spmd::solvers::block_ilu(A);          // A: spmd::sparse::CsrMatrix
///   spmd::solvers::gmres(A, b, x, M, opts);        // ILU is not symmetric: not for CG
///
/// The factorisation and the triangular solves are Kokkos Kernels' (KokkosSparse::[Experimental::]
/// spiluk_symbolic / spiluk_numeric and sptrsv_symbolic / sptrsv_solve, instantiated for
/// double with int ordinals and offsets in the Kokkos Kernels build here). Both schedule the
/// rows by level (the rows of a level depend only on earlier levels) and run one kernel per
/// level: a 5-point grid block of m x m rows in natural order has 2m - 1 levels, so a triangular
/// solve is 2m - 1 kernel launches of at most m rows each. On a CPU that is cheap; on a GPU each
/// launch costs microseconds and uses a sliver of the device (docs/api/solvers.md says what it
/// costs). Kokkos Kernels 3.4's numeric factorisation also allocates a work array of (rows of
/// the largest level) x (rows) ints, O(n^1.5) for a 2-D grid block of n rows: a block that would
/// need more than IluOptions::max_work_bytes is refused with an error. Kokkos Kernels 3.4 also
/// replaces a zero pivot by 1e6 silently; here a pivot of 1e6 (or a non-finite one) is an error.

#include <Kokkos_Core.hpp>
#include <KokkosKernels_Handle.hpp>
#include <KokkosSparse_spiluk.hpp>
#include <KokkosSparse_sptrsv.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "spmd/array.hpp"
#include "spmd/comm.hpp"
#include "spmd/error.hpp"
#include "spmd/impl/local_views.hpp"
#include "spmd/sparse/csr_matrix.hpp"
#include "spmd/solvers/options.hpp"
#include "spmd/solvers/preconditioner.hpp"

namespace spmd::solvers {

/// How a block ILU preconditioner is built.
struct IluOptions {
  int fill_level = 0;                                   //!< ILU(k): 0 keeps A's pattern
  std::int64_t max_work_bytes = std::int64_t(1) << 30;  //!< the largest factorisation work array allowed (see above)
};

namespace impl {

/// Where Kokkos Kernels keeps spiluk_* and sptrsv_*: 4.6 moved them out of Experimental (the old
/// names are deprecated there).
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40600
namespace kk_ilu = ::KokkosSparse;
#else
namespace kk_ilu = ::KokkosSparse::Experimental;
#endif

/// Counts U's pivots (the first entry of each row) that are not finite, or 1e6: Kokkos Kernels
/// 3.4's spiluk_numeric writes 1e6 where it met a zero pivot.
template <class RowMap, class Values, class T>
struct ZeroPivots {
  RowMap ptr;
  Values val;
  KOKKOS_INLINE_FUNCTION void operator()(const int i, T& bad) const {
    const T u = val(ptr(i));
    if (u == T(1e6) || !(u - u == T(0))) bad += T(1);
  }
};

}  // namespace impl

/// Block Jacobi ILU of a CsrMatrix (see the file comment).
template <class T, class M>
class BlockIlu {
 public:
  using matrix_type = sparse::CsrMatrix<T, M>;          ///< the matrix it factors
  using vector_type = Array<T, 1, M>;                   ///< the vectors it applies to
  using value_type = T;                                 ///< their element type
  using execution_space = typename M::execution_space;  ///< where it runs

  /// Factor each rank's diagonal block of A on `exec`. Collective; throws the same spmd::Error on
  /// every rank for a zero or non-finite pivot, or a work array above the limit, naming the rank.
  BlockIlu(const execution_space& exec, const matrix_type& A, const IluOptions& opts = {}) : opts_(opts) {
    const char* fn = "spmd::solvers::block_ilu";
    std::string error;
    if (opts.fill_level < 0) error = spmd::impl::str(fn, ": fill_level (", opts.fill_level, ") must not be negative");
    rows_ = static_cast<int>(A.row_distribution().owned().extent(0));
    tmp_ = A.make_vector("spmd::solvers::block_ilu::y");
    if (error.empty() && rows_ > 0) {
      try {
        factor(exec, A);
      } catch (const std::exception& e) {
        error = spmd::impl::str(fn, ": rank ", A.comm().rank(), ": ", e.what());
      }
    }
    A.comm().check(error.empty(), error);
    double bad = static_cast<double>(zero_pivots_);
    bad = A.comm().allreduce(bad, spmd::Op::sum);
    if (bad > 0)
      throw Error::replicated(spmd::impl::str(fn, ": ILU(", opts.fill_level, ") met ", bad,
                                              " zero or non-finite pivots (the diagonal blocks of '", A.label(),
                                              "' have no incomplete LU factorisation)"));
  }
  /// On a default instance. Collective.
  explicit BlockIlu(const matrix_type& A, const IluOptions& opts = {}) : BlockIlu(execution_space(), A, opts) {}

  /// z = U^-1 L^-1 r on each rank's block. Local (no communication).
  void apply(const execution_space& exec, const vector_type& r, const vector_type& z) const {
    if (rows_ == 0) return;
    const spmd::impl::Region region("spmd::solvers::block_ilu::apply");
    spmd::impl::on_default_instance(exec, "spmd::solvers::block_ilu::apply", [&] {
      const auto rv = spmd::impl::vec(r);
      const auto yv = spmd::impl::vec(tmp_);
      const auto zv = spmd::impl::vec(z);
      impl::kk_ilu::sptrsv_solve(lh_.get(), lptr_, lcol_, lval_, rv, yv);
      impl::kk_ilu::sptrsv_solve(uh_.get(), uptr_, ucol_, uval_, yv, zv);
    });
  }
  /// The preconditioner's kind (the option that names it). Local.
  Precond kind() const { return Precond::ilu; }
  /// ILU of a nonsymmetric block is not symmetric: not for CG. Local.
  bool symmetric() const { return false; }
  /// One line for logs and verdicts: the kind and how it was built. Local.
  std::string describe() const {
    return spmd::impl::str("block Jacobi ILU(", opts_.fill_level, ") (Kokkos Kernels spiluk + sptrsv, ", levels_,
                           " levels on rank 0's block)");
  }
  /// The number of levels of this rank's factorisation (kernel launches per triangular solve).
  /// Local.
  int levels() const { return levels_; }

 private:
  using Handle = KokkosKernels::Experimental::KokkosKernelsHandle<int, int, T, execution_space, M, M>;
  using ints = Kokkos::View<int*, M>;
  using values = Kokkos::View<T*, M>;

  void factor(const execution_space& exec, const matrix_type& A) {
    using namespace KokkosSparse::Experimental;
    const auto block = A.diagonal_block();
    auto ptr = block.graph.row_map;
    auto col = block.graph.entries;
    auto val = block.values;
    const int n = rows_;
    const int nnz = static_cast<int>(col.extent(0));
    constexpr bool host = spmd::impl::host_accessible<typename execution_space::memory_space>();
    Handle kh;
    const int est = (opts_.fill_level + 1) * nnz + n;
#if defined(KOKKOSKERNELS_VERSION) && KOKKOSKERNELS_VERSION >= 40000
    // Kokkos Kernels 4 has one algorithm (team policy) for host and device alike.
    (void)host;
    kh.create_spiluk_handle(SPILUKAlgorithm::SEQLVLSCHD_TP1, n, est, est);
#else
    kh.create_spiluk_handle(host ? SPILUKAlgorithm::SEQLVLSCHD_RP : SPILUKAlgorithm::SEQLVLSCHD_TP1, n, est, est);
#endif
    auto* ih = kh.get_spiluk_handle();
    ints lptr("spmd::solvers::block_ilu::L_ptr", n + 1), uptr("spmd::solvers::block_ilu::U_ptr", n + 1);
    ints lcol("spmd::solvers::block_ilu::L_col", est), ucol("spmd::solvers::block_ilu::U_col", est);
    spmd::impl::fence(exec, "spmd::solvers::block_ilu::factor");
    impl::kk_ilu::spiluk_symbolic(&kh, opts_.fill_level, ptr, col, lptr, lcol, uptr, ucol);
    const std::int64_t work =
        static_cast<std::int64_t>(ih->get_level_maxrows()) * n * static_cast<std::int64_t>(sizeof(int));
    if (work > opts_.max_work_bytes)
      throw Error(spmd::impl::str("Kokkos Kernels' ILU factorisation of this rank's block (", n, " rows, ",
                                  ih->get_num_levels(), " levels of up to ", ih->get_level_maxrows(),
                                  " rows) would allocate a work array of ", work,
                                  " bytes, more than IluOptions::", "max_work_bytes (", opts_.max_work_bytes,
                                  "): use more ranks or another preconditioner"));
    levels_ = static_cast<int>(ih->get_num_levels());
    Kokkos::resize(lcol, ih->get_nnzL());
    Kokkos::resize(ucol, ih->get_nnzU());
    values lval("spmd::solvers::block_ilu::L_val", ih->get_nnzL()),
        uval("spmd::solvers::block_ilu::U_val", ih->get_nnzU());
    impl::kk_ilu::spiluk_numeric(&kh, opts_.fill_level, ptr, col, val, lptr, lcol, lval, uptr, ucol, uval);
    kh.destroy_spiluk_handle();
    // L (unit diagonal last in each row) and U (diagonal first) are what sptrsv takes.
    T bad = 0;
    Kokkos::parallel_reduce("spmd::solvers::block_ilu::pivots", Kokkos::RangePolicy<execution_space>(exec, 0, n),
                            impl::ZeroPivots<ints, values, T>{uptr, uval}, bad);
    zero_pivots_ = static_cast<std::int64_t>(bad);
    lptr_ = lptr;
    lcol_ = lcol;
    lval_ = lval;
    uptr_ = uptr;
    ucol_ = ucol;
    uval_ = uval;
    lh_ = std::make_shared<Handle>();
    uh_ = std::make_shared<Handle>();
    const auto algo = SPTRSVAlgorithm::SEQLVLSCHD_TP1;
    lh_->create_sptrsv_handle(algo, n, true);
    uh_->create_sptrsv_handle(algo, n, false);
    impl::kk_ilu::sptrsv_symbolic(lh_.get(), lptr_, lcol_);
    impl::kk_ilu::sptrsv_symbolic(uh_.get(), uptr_, ucol_);
    spmd::impl::fence(exec, "spmd::solvers::block_ilu::factor");
  }

  IluOptions opts_;
  int rows_ = 0;
  int levels_ = 0;
  std::int64_t zero_pivots_ = 0;
  ints lptr_, lcol_, uptr_, ucol_;
  values lval_, uval_;
  std::shared_ptr<Handle> lh_, uh_;
  vector_type tmp_;
};

/// The block Jacobi ILU preconditioner of A (see the file comment), built on `exec`.
/// Collective.
template <class T, class M>
Preconditioner<Array<T, 1, M>> block_ilu(const typename M::execution_space& exec, const sparse::CsrMatrix<T, M>& A,
                                         const IluOptions& opts = {}) {
  return BlockIlu<T, M>(exec, A, opts);
}
/// block_ilu() on a default instance. Collective.
template <class T, class M>
Preconditioner<Array<T, 1, M>> block_ilu(const sparse::CsrMatrix<T, M>& A, const IluOptions& opts = {}) {
  return BlockIlu<T, M>(A, opts);
}

}  // namespace spmd::solvers
