#pragma once
/// \file sparse/csr_matrix.hpp
/// spmd::sparse::CsrMatrix: a row-distributed sparse matrix in CSR form, with an overlapped,
/// plan-driven SpMV.
///
/// Rows are distributed by a 1-D Distribution (the range: where y = A x lives); columns by a
/// second one (the domain: where x lives) that is the row distribution itself for square
/// matrices and a balanced block of the column count otherwise. Each rank stores its rows as two
/// local blocks:
///
///   diagonal block      the entries whose column this rank owns in the column distribution,
///                       with local column indices (global column - first owned column). On
///                       host execution spaces in sliced ELLPACK form (impl::SellBlock, SELL-C-1:
///                       chunks of C consecutive rows stored column-major, so one core works on
///                       C rows at once) unless that would pad it by more than
///                       impl::sell_max_padding; else, and on devices, a Kokkos Kernels CrsMatrix;
///   off-diagonal block  a Kokkos Kernels CrsMatrix of the other entries, with columns
///                       compressed to ghost indices: the distinct off-rank columns sorted by
///                       owner rank, then by global column, so the ghosts owned by one peer are
///                       contiguous. It holds only the rows that have such entries
///                       (offdiagonal_rows() maps them to local rows).
///
/// The ghost import plan (GhostImport), built once in the constructor, knows which owned x
/// entries each peer needs (exchanged with one MPI_Alltoall of counts and one MPI_Alltoallv of
/// indices), holds the device index list, the message buffers (pinned host staging for device
/// memory with a host MPI), one tag, and a backend resolved once (MPI, or NCCL for device data
/// where the build has it). Received ghosts land in the ghost vector directly: the receive order
/// is the ghost order, so there is no unpack.
///
/// spmv overlaps communication with computation:
///   1. import begin: post the receives, pack the x entries peers need (one kernel), send;
///   2. y = alpha A_diag x + beta y     (impl::SellProduct or KokkosSparse::spmv on the diagonal
///                                       block);
///   3. import end: wait for the ghosts;
///   4. y += alpha A_off ghosts         (impl::OffDiagonalAdd: one kernel over the rows that
///                                       have off-rank entries, adding into those rows of y; a
///                                       beta = 1 product over all local rows would read and
///                                       write all of y for a few boundary rows).
/// The phases are public (import_begin, import_end, spmv_diagonal, spmv_offdiagonal) so that a
/// benchmark can time them apart, or a solver can put other work in the gap.
///
/// Local types: int column indices and int row offsets in each block, the types Kokkos Kernels
/// is instantiated for here; the constructor throws when a rank's rows hold more than INT_MAX
/// entries. Global indices are spmd::index_t.

#include <Kokkos_Core.hpp>
#include <KokkosSparse_CrsMatrix.hpp>
#include <KokkosSparse_spmv.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/distribution.hpp"
#include "spmd/impl/local_views.hpp"
#include "spmd/sparse/impl/ghost_import.hpp"
#include "spmd/sparse/impl/sell.hpp"
#include "spmd/impl/ndrange.hpp"
#include "spmd/impl/testing.hpp"

namespace spmd::sparse {

/// How a rank stores the diagonal block of a CsrMatrix (CsrMatrix::diagonal_storage()).
struct BlockStorage {
  bool sliced = false;  ///< SELL-C-1 (see impl::SellBlock); false: CSR (KokkosSparse::spmv)
  int chunk = 1;        ///< rows per chunk C (1 for CSR)
  index_t rows = 0;     ///< local rows
  index_t entries = 0;  ///< stored nonzeros
  index_t slots = 0;    ///< stored entries including the padding (entries for CSR)
  index_t chunks = 0;   ///< chunks (0 for CSR)
};

template <class T, class M>
class CsrMatrix;

/// What the ghost import of a CsrMatrix moves per product (CsrMatrix::import_plan()): a
/// snapshot of the plan's counts and its ghost vector (a View of the matrix's own).
template <class T, class M>
class ImportSummary {
 public:
  /// The ghost vector: x at the off-diagonal block's columns, in ghost order. Local.
  const Kokkos::View<T*, M>& ghosts() const { return ghosts_; }
  /// Ghosts (entries received) per import. Local.
  index_t num_ghosts() const { return num_ghosts_; }
  /// Entries sent per import. Local.
  index_t num_sent() const { return num_sent_; }
  /// Messages sent per import. Local.
  int num_sends() const { return num_sends_; }
  /// Messages received per import. Local.
  int num_recvs() const { return num_recvs_; }
  /// The backend (never automatic). Local.
  Backend backend() const { return backend_; }
  /// Whether device data is staged through host buffers. Local.
  bool staged() const { return staged_; }

 private:
  template <class, class>
  friend class CsrMatrix;
  ImportSummary(const Kokkos::View<T*, M>& g, index_t ghosts, index_t sent, int sends, int recvs, Backend b, bool st)
      : ghosts_(g),
        num_ghosts_(ghosts),
        num_sent_(sent),
        num_sends_(sends),
        num_recvs_(recvs),
        backend_(b),
        staged_(st) {}
  Kokkos::View<T*, M> ghosts_;
  index_t num_ghosts_ = 0, num_sent_ = 0;
  int num_sends_ = 0, num_recvs_ = 0;
  Backend backend_ = Backend::automatic;
  bool staged_ = false;
};

/// A row-distributed sparse matrix (see the file comment).
template <class T = double, class M = DefaultMemorySpace>
class CsrMatrix {
 public:
  /// The element type.
  using value_type = T;
  /// The blocks' memory space.
  using memory_space = M;
  /// The execution space of the products.
  using execution_space = typename M::execution_space;
  /// The vectors: 1-D arrays on the row (or column) distribution.
  using vector_type = Array<T, 1, M>;
  /// A rank's block as a Kokkos Kernels CSR matrix (int ordinals and offsets).
  using local_matrix_type = KokkosSparse::CrsMatrix<T, int, Kokkos::Device<execution_space, M>, void, int>;

  /// A null matrix. Local.
  CsrMatrix() = default;

  /// Build from each rank's own rows: `rows` is a 1-D Distribution of the global row count; this
  /// rank passes the rows it owns in it (rows.owned()) in CSR form with GLOBAL column indices
  /// in [0, ncols): row_ptr (one entry per owned row plus one, starting at 0, non-decreasing),
  /// col_idx and values (row_ptr.back() entries each). Columns within a row may come in any
  /// order; repeated (row, column) entries add up (into one stored entry, as SciPy's
  /// sum_duplicates: nnz() counts it once; such a row is kept in column order). Collective over rows.comm(); throws the
  /// same spmd::Error on every rank when any rank's arrays are inconsistent, a column is out of range, ncols differs
  /// between ranks, or a rank's rows hold more than INT_MAX entries.
  CsrMatrix(const Distribution<1>& rows, index_t ncols, std::vector<index_t> row_ptr, std::vector<index_t> col_idx,
            std::vector<T> values, const std::string& label = "spmd::CsrMatrix")
      : CsrMatrix(rows, ncols, impl::HostRows<T>(row_ptr, col_idx, values), label) {}

  // ---- queries (all Local) ---------------------------------------------------------------------
  /// The distribution of y (the range). Local.
  const Distribution<1>& row_distribution() const { return rows_; }
  /// The distribution of x (the domain): the row distribution for square matrices, else a
  /// balanced block of the column count on the same communicator. Local.
  const Distribution<1>& col_distribution() const { return cols_; }
  /// The rows' communicator. Local.
  const Comm& comm() const { return rows_.comm(); }
  /// Global counts. Local.
  index_t rows() const { return nrows_; }
  /// Global column count. Local.
  index_t cols() const { return ncols_; }
  /// Global entry count. Local.
  index_t nnz() const { return nnz_; }
  /// Entries of this rank's rows. Local.
  index_t local_nnz() const { return static_cast<index_t>(storage_.entries) + static_cast<index_t>(off_.nnz()); }
  /// The matrix's label. Local.
  const std::string& label() const { return label_; }
  /// True for a default-constructed matrix. Local.
  bool is_null() const { return rows_.is_null(); }
  /// The diagonal block as a Kokkos Kernels CSR matrix. Where it is stored in SELL form (see
  /// diagonal_storage()) this builds a CSR copy of it: it allocates its entries and values
  /// and takes a pass over the block, so call it outside hot loops. Local.
  local_matrix_type diagonal_block() const {
    if (storage_.sliced) return sliced_to_csr();
    return diag_;
  }
  /// How this rank stores the diagonal block: SELL-C-1 (chunks of impl::sell_heights rows on
  /// host execution spaces, of impl::sell_device_height on devices) unless its padding would
  /// exceed impl::sell_max_padding of the entries, else CSR. Local.
  const BlockStorage& diagonal_storage() const { return storage_; }
  /// The off-diagonal block holds only the rows with off-rank entries: its row r is local row
  /// offdiagonal_rows()(r). Local.
  const local_matrix_type& offdiagonal_block() const { return off_; }
  /// The local row of each row of the off-diagonal block. Local.
  const Kokkos::View<int*, M>& offdiagonal_rows() const { return off_rows_; }
  /// The global column of each ghost, in ghost order (the off-diagonal block's column indices
  /// index it). Local.
  const std::vector<index_t>& ghost_columns() const {
    static const std::vector<index_t> none;
    return ghost_cols_ ? *ghost_cols_ : none;
  }
  /// The ghost import plan's counts, backend and ghost vector. Local.
  ImportSummary<T, M> import_plan() const {
    const auto& p = *import_;
    return {p.ghosts(), p.num_ghosts(), p.num_sent(), p.num_sends(), p.num_recvs(), p.backend(), p.staged()};
  }

  /// A zero vector on the row distribution. Local.
  vector_type make_vector(const std::string& label = "spmd::sparse::vector") const {
    return vector_type(rows_, Label{label});
  }

  /// y = A x on `exec`. x on the column distribution's layout, y on the row distribution's (any
  /// halo widths: only owned points are read and written; x and y must not overlap).
  /// Neighbour-collective; throws the same spmd::Error on every rank for a vector of another
  /// layout.
  void apply(const execution_space& exec, const vector_type& x, const vector_type& y) const {
    spmv(exec, T(1), x, T(0), y);
  }
  /// apply() on a default instance. Neighbour-collective.
  void apply(const vector_type& x, const vector_type& y) const { spmv(execution_space(), T(1), x, T(0), y); }

  /// y = alpha A x + beta y on `exec` (beta == 0: y's old values are not read).
  /// Neighbour-collective.
  void spmv(const execution_space& exec, const T& alpha, const vector_type& x, const T& beta,
            const vector_type& y) const {
    const char* fn = "spmd::sparse::CsrMatrix::spmv";
    const spmd::impl::Region region("spmd::sparse::spmv");
    check_vector(fn, "x", x, cols_, "columns");
    check_vector(fn, "y", y, rows_, "rows");
    import_->begin(exec, spmd::impl::vec(x));
    local_diagonal(exec, alpha, x, beta, y);
    import_->end(exec);
    local_offdiagonal(exec, alpha, y);
  }
  /// spmv() on a default instance. Neighbour-collective.
  void spmv(const T& alpha, const vector_type& x, const T& beta, const vector_type& y) const {
    spmv(execution_space(), alpha, x, beta, y);
  }

  /// d(i) = A(i, i) on the owned rows (0 where the row has no diagonal entry), on `exec`. d on the
  /// row distribution's layout. Local; throws the same spmd::Error on every rank for another
  /// layout.
  void diagonal(const execution_space& exec, const vector_type& d) const {
    check_vector("spmd::sparse::CsrMatrix::diagonal", "d", d, rows_, "rows");
    if (diagonal_.extent(0) > 0) Kokkos::deep_copy(exec, spmd::impl::vec(d), diagonal_);
  }
  /// diagonal() on a default instance. Local.
  void diagonal(const vector_type& d) const { diagonal(execution_space(), d); }

  // ---- the phases of spmv, for benchmarks and overlap with other work ---------------------------
  /// Import step 1: pack x's entries the peers need, post receives and sends, on `exec`.
  /// Neighbour-collective.
  void import_begin(const execution_space& exec, const vector_type& x) const {
    check_vector("spmd::sparse::CsrMatrix::import_begin", "x", x, cols_, "columns");
    import_->begin(exec, spmd::impl::vec(x));
  }
  /// import_begin() on a default instance. Neighbour-collective.
  void import_begin(const vector_type& x) const { import_begin(execution_space(), x); }
  /// Import step 2: wait for the ghosts. Local (completes the neighbour-collective import).
  void import_end(const execution_space& exec) const { import_->end(exec); }
  /// import_end() on a default instance. Local.
  void import_end() const { import_->end(execution_space()); }
  /// y = alpha A_diag x + beta y (the diagonal block alone, no communication). Local.
  void spmv_diagonal(const execution_space& exec, const T& alpha, const vector_type& x, const T& beta,
                     const vector_type& y) const {
    const char* fn = "spmd::sparse::CsrMatrix::spmv_diagonal";
    check_vector(fn, "x", x, cols_, "columns");
    check_vector(fn, "y", y, rows_, "rows");
    local_diagonal(exec, alpha, x, beta, y);
  }
  /// spmv_diagonal() on a default instance. Local.
  void spmv_diagonal(const T& alpha, const vector_type& x, const T& beta, const vector_type& y) const {
    spmv_diagonal(execution_space(), alpha, x, beta, y);
  }
  /// y += alpha A_off ghosts (after import_end). Local.
  void spmv_offdiagonal(const execution_space& exec, const T& alpha, const vector_type& y) const {
    check_vector("spmd::sparse::CsrMatrix::spmv_offdiagonal", "y", y, rows_, "rows");
    local_offdiagonal(exec, alpha, y);
  }
  /// spmv_offdiagonal() on a default instance. Local.
  void spmv_offdiagonal(const T& alpha, const vector_type& y) const { spmv_offdiagonal(execution_space(), alpha, y); }

 private:
  /// The same from host views of this rank's rows (the public constructor's work). Collective.
  CsrMatrix(const Distribution<1>& rows, index_t ncols, const impl::HostRows<T>& local, const std::string& label);
  /// The constructor's local part: the diagonal and off-diagonal blocks, the diagonal, the
  /// sorted ghost columns and the blocks' entry counts. Local (allocates; may throw).
  void build_blocks(const impl::HostRows<T>& in, std::vector<index_t>& ghosts, int& dnnz, int& onnz);
  /// Where the execution space is a host space: there the diagonal block is stored in SELL form
  /// with chunks of impl::sell_heights rows and a chunk per work item (SellProduct); on devices
  /// with chunks of a warp's rows and a row per thread (SellRows); either unless that would pad
  /// it by more than impl::sell_max_padding.
  static constexpr bool host_kernels =
      spmd::impl::host_accessible<M>() && spmd::impl::host_accessible<typename execution_space::memory_space>();

  void local_diagonal(const execution_space& exec, const T& alpha, const vector_type& x, const T& beta,
                      const vector_type& y) const {
    if (storage_.rows == 0) return;
    const spmd::impl::Region region("spmd::sparse::spmv_local");
    if (storage_.sliced && storage_.chunk == impl::sell_device_height) {
      Kokkos::parallel_for("spmd::sparse::CsrMatrix::spmv_sell_rows",
                           Kokkos::RangePolicy<execution_space>(exec, 0, static_cast<int>(storage_.rows)),
                           impl::SellRows<T, M, impl::sell_device_height>{sell_operands(alpha, x, beta, y)});
      return;
    }
    if constexpr (host_kernels) {
      static_assert(std::size(impl::sell_heights) == 3, "spmd::sparse::CsrMatrix: dispatch each SELL chunk height");
      if (storage_.chunk == impl::sell_heights[0]) return sell_product<impl::sell_heights[0]>(exec, alpha, x, beta, y);
      if (storage_.chunk == impl::sell_heights[1]) return sell_product<impl::sell_heights[1]>(exec, alpha, x, beta, y);
      if (storage_.chunk == impl::sell_heights[2]) return sell_product<impl::sell_heights[2]>(exec, alpha, x, beta, y);
    }
    spmd::impl::on_default_instance(exec, "spmd::sparse::CsrMatrix::spmv diagonal block", [&] {
      KokkosSparse::spmv("N", alpha, diag_, spmd::impl::vec(x), beta, spmd::impl::vec(y));
    });
  }
  /// y = alpha A_diag x + beta y by the SELL kernel with chunks of C rows. Local.
  template <int C>
  void sell_product(const execution_space& exec, const T& alpha, const vector_type& x, const T& beta,
                    const vector_type& y) const {
    Kokkos::parallel_for("spmd::sparse::CsrMatrix::spmv_sell",
                         Kokkos::RangePolicy<execution_space>(exec, 0, static_cast<int>(storage_.chunks)),
                         impl::SellProduct<T, M, C>{sell_operands(alpha, x, beta, y), static_cast<int>(storage_.rows)});
  }
  /// The SELL kernels' operands for y = alpha A_diag x + beta y. Local.
  impl::SellOperands<T, M> sell_operands(const T& alpha, const vector_type& x, const T& beta,
                                         const vector_type& y) const {
    return {sell_.chunk_ptr, sell_.col, sell_.val, spmd::impl::vec(x), spmd::impl::vec(y), alpha, beta};
  }
  /// The CSR form of the SELL-stored diagonal block (a new copy). Local.
  local_matrix_type sliced_to_csr() const {
    const std::size_t nz = static_cast<std::size_t>(storage_.entries);
    typename impl::SellBlock<T, M>::ints col(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sparse::CsrMatrix::diag_columns"), nz);
    typename impl::SellBlock<T, M>::values val(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sparse::CsrMatrix::diag_values"), nz);
    Kokkos::parallel_for("spmd::sparse::CsrMatrix::sell_to_csr",
                         Kokkos::RangePolicy<execution_space>(execution_space(), 0, static_cast<int>(storage_.rows)),
                         impl::SellToCsr<T, M>{sell_, col, val, storage_.chunk});
    spmd::impl::fence(execution_space(), "spmd::sparse::CsrMatrix::diagonal_block");
    return local_matrix_type("spmd::sparse::CsrMatrix::diagonal_block", static_cast<int>(storage_.rows),
                             static_cast<int>(cols_.owned().extent(0)), static_cast<int>(nz), val, sell_.row_ptr, col);
  }
  void local_offdiagonal(const execution_space& exec, const T& alpha, const vector_type& y) const {
    const int nr = off_.numRows();
    if (nr == 0 || alpha == T(0)) return;  // BLAS: alpha 0 reads no x (a NaN ghost stays out of y)
    const spmd::impl::Region region("spmd::sparse::spmv_remote");
    const impl::VecView<const T, M> g(import_->ghosts().data(), import_->ghosts().extent(0));
    Kokkos::parallel_for("spmd::sparse::CsrMatrix::offdiagonal_add", Kokkos::RangePolicy<execution_space>(exec, 0, nr),
                         impl::OffDiagonalAdd<T, M>{spmd::impl::vec(y), off_rows_, off_.graph.row_map,
                                                    off_.graph.entries, off_.values, g, alpha});
  }
  void check_vector(const char* fn, const char* what, const vector_type& v, const Distribution<1>& d,
                    const char* side) const {
    if (!v.is_null() && v.distribution().same_layout(d)) return;
    throw Error::replicated(impl::str(fn, ": ", what, " '", v.label(), "' (",
                                      v.is_null() ? std::string("a null array") : v.distribution().describe(),
                                      ") does not fit the ", side, " of matrix '", label_, "' (", nrows_, " x ", ncols_,
                                      "), which are distributed as (", d.describe(), ")"));
  }

  Distribution<1> rows_, cols_;
  index_t nrows_ = 0, ncols_ = 0, nnz_ = 0;
  std::string label_;
  local_matrix_type diag_, off_;  // diag_ is empty where the diagonal block is stored in SELL form
  impl::SellBlock<T, M> sell_;    // the diagonal block in SELL form (else empty)
  BlockStorage storage_;
  Kokkos::View<int*, M> off_rows_;  // the local row of each of off_'s rows
  Kokkos::View<T*, M> diagonal_;
  std::shared_ptr<impl::GhostImport<T, M>> import_;
  std::shared_ptr<const std::vector<index_t>> ghost_cols_;  // global column of each ghost (host)
};

}  // namespace spmd::sparse

#include "spmd/sparse/impl/csr_matrix_impl.hpp"
