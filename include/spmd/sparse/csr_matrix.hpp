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
///   4. y += alpha A_off ghosts         (KokkosSparse::spmv of the off-diagonal block into a
///                                       compact buffer, then one kernel adds it into those rows
///                                       of y: a beta = 1 product over all local rows would read
///                                       and write all of y for a few boundary rows).
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
#include "spmd/blas.hpp"
#include "spmd/distribution.hpp"
#include "spmd/impl/messages.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::sparse {

namespace impl {
using spmd::impl::shape_str;
using spmd::impl::str;

/// The local block type: Kokkos Kernels' CrsMatrix with int ordinals and int offsets.
template <class T, class M>
using LocalMatrix = KokkosSparse::CrsMatrix<T, int, Kokkos::Device<typename M::execution_space, M>, void, int>;

/// A 1-D contiguous range of a View as an unmanaged LayoutLeft View (Kokkos Kernels'
/// instantiated layout). Local.
template <class T, class M>
using VecView = Kokkos::View<T*, Kokkos::LayoutLeft, M, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// One rank's rows in CSR form with global column indices, in host memory (what the
/// constructor splits into the two blocks). row_ptr has one entry per owned row plus one.
template <class T>
struct HostRows {
  template <class V>
  using host_view = Kokkos::View<const V*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  host_view<index_t> row_ptr, col;
  host_view<T> val;
  /// Views of the vectors' data (which must outlive this). Local.
  HostRows(const std::vector<index_t>& p, const std::vector<index_t>& c, const std::vector<T>& v)
      : row_ptr(p.data(), p.size()), col(c.data(), c.size()), val(v.data(), v.size()) {}
};

/// buf(k) = x(idx(k)): the x entries the peers need, in message order.
template <class T, class M>
struct GatherPack {
  Kokkos::View<T*, M> buf;
  Kokkos::View<const int*, M> idx;
  VecView<const T, M> x;
  KOKKOS_INLINE_FUNCTION void operator()(const int k) const { buf(k) = x(idx(k)); }
};

/// y(rows(r)) += z(r): the off-diagonal block's products (one per row that has off-diagonal
/// entries) added into y. The rows are distinct, so no atomics.
template <class T, class M>
struct ScatterAdd {
  VecView<T, M> y;
  Kokkos::View<const int*, M> rows;
  Kokkos::View<const T*, M> z;
  KOKKOS_INLINE_FUNCTION void operator()(const int r) const { y(rows(r)) += z(r); }
};

/// The ghost import plan of a CsrMatrix: fills the ghost vector (the x entries of the
/// off-diagonal block's columns, in ghost order) from their owners.
template <class T, class M>
class GhostImport {
 public:
  using execution_space = typename M::execution_space;

  /// `ghosts`: the distinct off-rank global columns of this rank's rows, sorted (owner order
  /// then column order, as the column distribution's blocks are increasing). Collective over
  /// cols.comm() (one MPI_Alltoall, one MPI_Alltoallv, the message-size agreement).
  GhostImport(const Distribution<1>& cols, const std::vector<index_t>& ghosts, const char* fn)
      : GhostImport(cols, ghosts, layout(cols, ghosts, fn), fn) {}
  GhostImport(const GhostImport&) = delete;
  GhostImport& operator=(const GhostImport&) = delete;

  /// Post the receives, pack the entries of `x` (this rank's owned part) the peers need, send.
  /// Neighbour-collective.
  void begin(const VecView<const T, M>& x) const {
    if (active_)
      throw Error("spmd::sparse::GhostImport::begin: an import on this matrix is in progress; call import_end() first");
    active_ = true;
    msgs_.post_receives();
    const index_t n = msgs_.send_total();
    if (n > 0)
      Kokkos::parallel_for("spmd::sparse::import::pack",
                           Kokkos::RangePolicy<execution_space>(execution_space(), 0, static_cast<int>(n)),
                           GatherPack<T, M>{msgs_.send_buffer(), send_idx_, x});
    msgs_.send();
  }
  /// Wait for the ghosts (then ghosts() holds them, in stream order on a device) and for the
  /// sends. Local call, completes a neighbour-collective operation.
  void end() const {
    if (!active_) throw Error("spmd::sparse::GhostImport::end: no import in progress (call import_begin() first)");
    active_ = false;
    msgs_.wait_receives();
    msgs_.wait_sends();
  }
  /// The ghost vector: x at the off-diagonal block's columns, in ghost order. Local.
  const Kokkos::View<T*, M>& ghosts() const { return msgs_.recv_buffer(); }
  /// Number of ghosts (received entries) and of entries sent per import. Local.
  index_t num_ghosts() const { return msgs_.recv_total(); }
  index_t num_sent() const { return msgs_.send_total(); }
  /// Messages sent / received per import. Local.
  int num_sends() const { return static_cast<int>(msgs_.sends().size()); }
  int num_recvs() const { return static_cast<int>(msgs_.recvs().size()); }
  /// The backend (never automatic) and whether device data is staged through host buffers.
  Backend backend() const { return msgs_.backend(); }
  bool staged() const { return msgs_.staged(); }

 private:
  /// Who sends what to whom: the messages, and the global indices of the owned x entries
  /// this rank sends, in message order.
  struct Layout {
    std::vector<spmd::impl::Message> sends, recvs;
    std::vector<index_t> wanted;
  };
  static Layout layout(const Distribution<1>& cols, const std::vector<index_t>& ghosts, const char* fn) {
    const Comm& comm = cols.comm();
    const auto p = static_cast<std::size_t>(comm.size());
    Layout out;
    std::vector<int> recv_count(p, 0), send_count(p, 0), rdispl(p, 0), sdispl(p, 0);
    for (std::size_t k = 0; k < ghosts.size(); ++k) {
      const int owner = cols.owner(Index<1>{ghosts[k]});
      if (out.recvs.empty() || out.recvs.back().rank != owner)
        out.recvs.push_back(spmd::impl::Message{owner, static_cast<index_t>(k), 0});
      ++out.recvs.back().count;
      ++recv_count[static_cast<std::size_t>(owner)];
    }
    SPMD_MPI_CHECK(MPI_Alltoall(recv_count.data(), 1, MPI_INT, send_count.data(), 1, MPI_INT, comm.raw()), fn);
    int nsend = 0;
    for (std::size_t q = 0; q < p; ++q) {
      sdispl[q] = nsend;
      nsend += send_count[q];
      if (q > 0) rdispl[q] = rdispl[q - 1] + recv_count[q - 1];
      if (send_count[q] > 0) out.sends.push_back(spmd::impl::Message{static_cast<int>(q), sdispl[q], send_count[q]});
    }
    out.wanted.resize(static_cast<std::size_t>(nsend));
    SPMD_MPI_CHECK(MPI_Alltoallv(ghosts.data(), recv_count.data(), rdispl.data(), mpi_type<index_t>(),
                                 out.wanted.data(), send_count.data(), sdispl.data(), mpi_type<index_t>(), comm.raw()),
                   fn);
    return out;
  }
  GhostImport(const Distribution<1>& cols, const std::vector<index_t>& ghosts, Layout&& l, const char* fn)
      : send_idx_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sparse::import::send_index"), l.wanted.size()),
        msgs_(cols.comm(), std::move(l.sends), static_cast<index_t>(l.wanted.size()), std::move(l.recvs),
              static_cast<index_t>(ghosts.size()), Backend::automatic, fn, "spmd::sparse::import") {
    // The owned x entries the peers need, as indices into the owned part of x.
    auto host = Kokkos::create_mirror_view(send_idx_);
    const index_t lo = cols.owned().lo[0];
    for (std::size_t k = 0; k < l.wanted.size(); ++k) host(k) = static_cast<int>(l.wanted[k] - lo);
    Kokkos::deep_copy(send_idx_, host);
  }

  Kokkos::View<int*, M> send_idx_;
  spmd::impl::MessagePlan<T, M> msgs_;
  mutable bool active_ = false;
};

/// Smallest position k in sorted v[0, n) with v[k] >= x (n when none). Local.
inline std::size_t lower_bound(const index_t* v, std::size_t n, index_t x) {
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// ---- the sliced ELLPACK form of the diagonal block (host execution spaces) ----------------------

/// The chunk heights C (rows per chunk) the SELL form may use, largest first, each a multiple
/// of 4: the constructor takes the largest whose padding stays within sell_max_padding.
inline constexpr int sell_heights[] = {16, 8, 4};
/// The SELL form is used while its padding stays within this fraction of the block's entries.
inline constexpr double sell_max_padding = 0.25;

/// The diagonal block in sliced ELLPACK form with sigma = 1 (SELL-C-1: the rows keep their
/// order, so y needs no permutation). The rows are cut into chunks of C consecutive rows. Chunk
/// c stores, for each of its C rows, as many slots as its longest row has entries (its width),
/// column-major: slot k of row c C + l is at chunk_ptr(c) + k C + l, so the k-th entries of the
/// C rows lie side by side. Slots past a row's end, and the rows past the last row in the last
/// chunk, are padding: value 0 and a valid column (the row's last column, or 0).
template <class T, class M>
struct SellBlock {
  using ints = typename LocalMatrix<T, M>::index_type::non_const_type;
  using offsets = typename LocalMatrix<T, M>::row_map_type::non_const_type;
  using values = typename LocalMatrix<T, M>::values_type::non_const_type;
  offsets chunk_ptr;  // first slot of each chunk (chunks + 1 entries)
  ints col;           // local column of each slot
  values val;         // value of each slot (0 in padding)
  offsets row_ptr;    // the CSR row offsets: not read by the product, only to give the CSR form back
};

/// y = alpha A x + beta y over the chunks of a SellBlock, one chunk per work item, with the
/// semantics of KokkosSparse::spmv: beta == 0: y is not read; alpha == 0: neither A nor x is
/// read. The C rows of a chunk accumulate in C independent local sums, so their multiply-add
/// chains overlap and the compiler can vectorise across them (no intrinsics).
template <class T, class M, int C>
struct SellProduct {
  Kokkos::View<const int*, M> chunk_ptr, col;
  Kokkos::View<const T*, M> val;
  VecView<const T, M> x;
  VecView<T, M> y;
  T alpha, beta;
  int rows;
  KOKKOS_INLINE_FUNCTION void operator()(const int c) const {
    const int first = chunk_ptr(c);
    const int width = alpha == T(0) ? 0 : (chunk_ptr(c + 1) - first) / C;
    T acc[C];
    for (int l = 0; l < C; ++l) acc[l] = T(0);
    for (int k = 0; k < width; ++k) {
      const int s = first + k * C;
      for (int l = 0; l < C; ++l) acc[l] += val(s + l) * x(col(s + l));
    }
    const int r = c * C;
    const int lanes = rows - r < C ? rows - r : C;
    if (beta == T(0))
      for (int l = 0; l < lanes; ++l) y(r + l) = alpha * acc[l];
    else
      for (int l = 0; l < lanes; ++l) y(r + l) = alpha * acc[l] + beta * y(r + l);
  }
};

/// The CSR columns and values of row i of a SellBlock with chunks of C rows (the inverse of
/// the constructor's placement; the row offsets are the SellBlock's row_ptr).
template <class T, class M>
struct SellToCsr {
  SellBlock<T, M> s;
  typename SellBlock<T, M>::ints col;
  typename SellBlock<T, M>::values val;
  int C;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const int slot = s.chunk_ptr(i / C) + i % C;
    for (int k = 0; k < s.row_ptr(i + 1) - s.row_ptr(i); ++k) {
      col(s.row_ptr(i) + k) = s.col(slot + k * C);
      val(s.row_ptr(i) + k) = s.val(slot + k * C);
    }
  }
};
}  // namespace impl

/// How a rank stores the diagonal block of a CsrMatrix (CsrMatrix::diagonal_storage()).
struct BlockStorage {
  bool sliced = false;  ///< SELL-C-1 (see impl::SellBlock); false: CSR (KokkosSparse::spmv)
  int chunk = 1;        ///< rows per chunk C (1 for CSR)
  index_t rows = 0;     ///< local rows
  index_t entries = 0;  ///< stored nonzeros
  index_t slots = 0;    ///< stored entries including the padding (entries for CSR)
  index_t chunks = 0;   ///< chunks (0 for CSR)
};

/// A row-distributed sparse matrix (see the file comment).
template <class T = double, class M = DefaultMemorySpace>
class CsrMatrix {
 public:
  using value_type = T;
  using memory_space = M;
  using execution_space = typename M::execution_space;
  using vector_type = Array<T, 1, M>;
  using local_matrix_type = impl::LocalMatrix<T, M>;
  /// True where the execution space is a host space: there the diagonal block is stored in SELL
  /// form unless that would pad it by more than impl::sell_max_padding (see
  /// diagonal_storage()); on devices it is always CSR.
  static constexpr bool host_kernels =
      spmd::impl::host_accessible<M>() && spmd::impl::host_accessible<typename execution_space::memory_space>();

  /// A null matrix. Local.
  CsrMatrix() = default;

  /// Build from each rank's own rows: `rows` is a 1-D Distribution of the global row count; this
  /// rank passes the rows it owns in it (rows.owned()) in CSR form with GLOBAL column indices
  /// in [0, ncols): row_ptr (one entry per owned row plus one, starting at 0, non-decreasing),
  /// col_idx and values (row_ptr.back() entries each). Columns within a row may come in any
  /// order; repeated (row, column) entries add up. Collective over rows.comm(); throws the same
  /// spmd::Error on every rank when any rank's arrays are inconsistent, a column is out of
  /// range, ncols differs between ranks, or a rank's rows hold more than INT_MAX entries.
  CsrMatrix(const Distribution<1>& rows, index_t ncols, std::vector<index_t> row_ptr, std::vector<index_t> col_idx,
            std::vector<T> values, const std::string& label = "spmd::CsrMatrix")
      : CsrMatrix(rows, ncols, impl::HostRows<T>(row_ptr, col_idx, values), label) {}

  /// Internal (used by the generators and the Matrix Market reader): the same from host views.
  /// Collective.
  CsrMatrix(const Distribution<1>& rows, index_t ncols, const impl::HostRows<T>& local, const std::string& label);

  // ---- queries (all Local) ---------------------------------------------------------------------
  /// The distribution of y (the range). Local.
  const Distribution<1>& row_distribution() const { return rows_; }
  /// The distribution of x (the domain): the row distribution for square matrices, else a
  /// balanced block of the column count on the same communicator. Local.
  const Distribution<1>& col_distribution() const { return cols_; }
  const Comm& comm() const { return rows_.comm(); }
  /// Global counts. Local.
  index_t rows() const { return nrows_; }
  index_t cols() const { return ncols_; }
  index_t nnz() const { return nnz_; }
  /// Entries of this rank's rows. Local.
  index_t local_nnz() const { return static_cast<index_t>(storage_.entries) + static_cast<index_t>(off_.nnz()); }
  const std::string& label() const { return label_; }
  bool is_null() const { return rows_.is_null(); }
  /// The diagonal block as a Kokkos Kernels CSR matrix. Where it is stored in SELL form (see
  /// diagonal_storage()) this builds a CSR copy of it: it allocates its entries and values
  /// and takes a pass over the block, so call it outside hot loops. Local.
  local_matrix_type diagonal_block() const {
    if constexpr (host_kernels)
      if (storage_.sliced) return sliced_to_csr();
    return diag_;
  }
  /// How this rank stores the diagonal block: SELL-C-1 on host execution spaces (unless its
  /// padding would exceed impl::sell_max_padding of the entries), else CSR. Local.
  const BlockStorage& diagonal_storage() const { return storage_; }
  /// The off-diagonal block holds only the rows with off-rank entries: its row r is local row
  /// offdiagonal_rows()(r). Local.
  const local_matrix_type& offdiagonal_block() const { return off_; }
  const Kokkos::View<int*, M>& offdiagonal_rows() const { return off_rows_; }
  /// The ghost import plan (message counts, backend, the ghost vector). Local.
  const impl::GhostImport<T, M>& import_plan() const { return *import_; }

  /// A zero vector on the row distribution. Local.
  vector_type make_vector(const std::string& label = "spmd::sparse::vector") const { return vector_type(rows_, label); }

  /// y = A x. x on the column distribution's layout, y on the row distribution's (any halo
  /// widths: only owned points are read and written; x and y must not overlap).
  /// Neighbour-collective; throws the same spmd::Error on every rank for a vector of another
  /// layout.
  void apply(const vector_type& x, const vector_type& y) const { spmv(T(1), x, T(0), y); }

  /// y = alpha A x + beta y (beta == 0: y's old values are not read). Neighbour-collective.
  void spmv(const T& alpha, const vector_type& x, const T& beta, const vector_type& y) const {
    const char* fn = "spmd::sparse::CsrMatrix::spmv";
    check_vector(fn, "x", x, cols_, "columns");
    check_vector(fn, "y", y, rows_, "rows");
    import_->begin(blas::impl::vec(x));
    local_diagonal(alpha, x, beta, y);
    import_->end();
    local_offdiagonal(alpha, y);
  }

  /// d(i) = A(i, i) on the owned rows (0 where the row has no diagonal entry). d on the row
  /// distribution's layout. Local; throws the same spmd::Error on every rank for another layout.
  void diagonal(const vector_type& d) const {
    check_vector("spmd::sparse::CsrMatrix::diagonal", "d", d, rows_, "rows");
    if (diagonal_.extent(0) > 0) Kokkos::deep_copy(execution_space(), blas::impl::vec(d), diagonal_);
  }

  // ---- the phases of spmv, for benchmarks and overlap with other work ---------------------------
  /// Import step 1: post receives, pack x's entries the peers need, send. Neighbour-collective.
  void import_begin(const vector_type& x) const {
    check_vector("spmd::sparse::CsrMatrix::import_begin", "x", x, cols_, "columns");
    import_->begin(blas::impl::vec(x));
  }
  /// Import step 2: wait for the ghosts. Local (completes the neighbour-collective import).
  void import_end() const { import_->end(); }
  /// y = alpha A_diag x + beta y (the diagonal block alone, no communication). Local.
  void spmv_diagonal(const T& alpha, const vector_type& x, const T& beta, const vector_type& y) const {
    const char* fn = "spmd::sparse::CsrMatrix::spmv_diagonal";
    check_vector(fn, "x", x, cols_, "columns");
    check_vector(fn, "y", y, rows_, "rows");
    local_diagonal(alpha, x, beta, y);
  }
  /// y += alpha A_off ghosts (after import_end). Local.
  void spmv_offdiagonal(const T& alpha, const vector_type& y) const {
    check_vector("spmd::sparse::CsrMatrix::spmv_offdiagonal", "y", y, rows_, "rows");
    local_offdiagonal(alpha, y);
  }

 private:
  void local_diagonal(const T& alpha, const vector_type& x, const T& beta, const vector_type& y) const {
    if (storage_.rows == 0) return;
    if constexpr (host_kernels) {
      static_assert(std::size(impl::sell_heights) == 3, "spmd::sparse::CsrMatrix: dispatch each SELL chunk height");
      if (storage_.chunk == impl::sell_heights[0]) return sell_product<impl::sell_heights[0]>(alpha, x, beta, y);
      if (storage_.chunk == impl::sell_heights[1]) return sell_product<impl::sell_heights[1]>(alpha, x, beta, y);
      if (storage_.chunk == impl::sell_heights[2]) return sell_product<impl::sell_heights[2]>(alpha, x, beta, y);
    }
    KokkosSparse::spmv("N", alpha, diag_, blas::impl::vec(x), beta, blas::impl::vec(y));
  }
  /// y = alpha A_diag x + beta y by the SELL kernel with chunks of C rows. Local.
  template <int C>
  void sell_product(const T& alpha, const vector_type& x, const T& beta, const vector_type& y) const {
    Kokkos::parallel_for("spmd::sparse::CsrMatrix::spmv_sell",
                         Kokkos::RangePolicy<execution_space>(execution_space(), 0, static_cast<int>(storage_.chunks)),
                         impl::SellProduct<T, M, C>{sell_.chunk_ptr, sell_.col, sell_.val, blas::impl::vec(x),
                                                    blas::impl::vec(y), alpha, beta, static_cast<int>(storage_.rows)});
  }
  /// The CSR form of the SELL-stored diagonal block (a new copy; host execution spaces only). Local.
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
  void local_offdiagonal(const T& alpha, const vector_type& y) const {
    const int nr = off_.numRows();
    if (nr == 0) return;
    const impl::VecView<const T, M> g(import_->ghosts().data(), import_->ghosts().extent(0));
    KokkosSparse::spmv("N", alpha, off_, g, T(0), impl::VecView<T, M>(off_y_.data(), off_y_.extent(0)));
    Kokkos::parallel_for("spmd::sparse::CsrMatrix::offdiagonal_add",
                         Kokkos::RangePolicy<execution_space>(execution_space(), 0, nr),
                         impl::ScatterAdd<T, M>{blas::impl::vec(y), off_rows_, off_y_});
  }
  void check_vector(const char* fn, const char* what, const vector_type& v, const Distribution<1>& d,
                    const char* side) const {
    if (!v.is_null() && v.distribution().same_layout(d)) return;
    throw Error(impl::str(fn, ": ", what, " '", v.label(), "' (",
                          v.is_null() ? std::string("a null array") : v.distribution().describe(),
                          ") does not fit the ", side, " of matrix '", label_, "' (", nrows_, " x ", ncols_,
                          "), which are distributed as (", d.describe(), ")"),
                true);
  }

  Distribution<1> rows_, cols_;
  index_t nrows_ = 0, ncols_ = 0, nnz_ = 0;
  std::string label_;
  local_matrix_type diag_, off_;  // diag_ is empty where the diagonal block is stored in SELL form
  impl::SellBlock<T, M> sell_;    // the diagonal block in SELL form (else empty)
  BlockStorage storage_;
  Kokkos::View<int*, M> off_rows_;  // the local row of each of off_'s rows
  Kokkos::View<T*, M> off_y_;       // off_'s products, before they are added into y
  Kokkos::View<T*, M> diagonal_;
  std::shared_ptr<impl::GhostImport<T, M>> import_;
};

// ---- the constructor ----------------------------------------------------------------------------

template <class T, class M>
CsrMatrix<T, M>::CsrMatrix(const Distribution<1>& rows, index_t ncols, const impl::HostRows<T>& in,
                           const std::string& label)
    : rows_(rows), nrows_(rows.extent(0)), ncols_(ncols), label_(label) {
  const char* fn = "spmd::sparse::CsrMatrix";
  const Comm& comm = rows.comm();
  const int me = comm.rank();
  using host_exec = Kokkos::DefaultHostExecutionSpace;
  const index_t lo = rows.owned().lo[0];
  const index_t n = rows.owned().extent(0);
  // ---- agree on the arguments: ncols from replicated data, the local arrays with one check
  std::array<index_t, 2> range{ncols, -ncols};
  comm.allreduce(range.data(), 2, Op::max);
  if (range[0] != -range[1] || ncols < 0)
    throw Error(impl::str(fn, ": '", label, "': the ranks pass different or negative column counts (from ", -range[1],
                          " to ", range[0], ")"),
                true);
  std::string err;
  const auto where = [&] { return impl::str(fn, ": '", label, "': rank ", me, " (rows [", lo, ", ", lo + n, ")): "); };
  if (in.row_ptr.extent(0) != static_cast<std::size_t>(n + 1)) {
    err = impl::str(where(), "row_ptr has ", in.row_ptr.extent(0), " entries, expected ", n + 1, " (owned rows + 1)");
  } else if (in.row_ptr(0) != 0) {
    err = impl::str(where(), "row_ptr[0] is ", in.row_ptr(0), ", expected 0");
  } else {
    for (index_t i = 0; i < n && err.empty(); ++i)
      if (in.row_ptr(i + 1) < in.row_ptr(i))
        err = impl::str(where(), "row_ptr decreases at local row ", i, " (", in.row_ptr(i), " then ", in.row_ptr(i + 1),
                        ")");
    const index_t nz = in.row_ptr(n);
    if (err.empty() && (static_cast<index_t>(in.col.extent(0)) != nz || static_cast<index_t>(in.val.extent(0)) != nz))
      err = impl::str(where(), "row_ptr ends at ", nz, " but col_idx has ", in.col.extent(0), " and values has ",
                      in.val.extent(0), " entries");
    if (err.empty() && (nz > INT_MAX || n > INT_MAX))
      err = impl::str(where(), nz, " local entries in ", n,
                      " rows do not fit the int offsets and ordinals of the local blocks (at most ", INT_MAX, ")");
    if (err.empty()) {  // the first entry with a column out of range (in parallel: nnz may be large)
      index_t first = nz;
      Kokkos::parallel_reduce(
          "spmd::sparse::CsrMatrix::check_columns", Kokkos::RangePolicy<host_exec, Kokkos::IndexType<index_t>>(0, nz),
          [&](const index_t k, index_t& m) {
            if ((in.col(k) < 0 || in.col(k) >= ncols) && k < m) m = k;
          },
          Kokkos::Min<index_t>(first));
      if (first < nz) {
        const index_t row = static_cast<index_t>(std::upper_bound(in.row_ptr.data(), in.row_ptr.data() + n + 1, first) -
                                                 in.row_ptr.data() - 1);
        err = impl::str(where(), "column index ", in.col(first), " of global row ", lo + row, " is outside [0, ", ncols,
                        ")");
      }
    }
  }
  comm.check(err.empty(), err);

  cols_ = ncols == nrows_ ? rows : Distribution<1>(comm, Index<1>{ncols});
  const index_t clo = cols_.owned().lo[0], chi = cols_.owned().hi[0];
  const int ni = static_cast<int>(n);
  const auto policy = Kokkos::RangePolicy<host_exec>(host_exec(), 0, ni);

  // ---- split into the diagonal and off-diagonal blocks (host, in parallel over rows)
  using HostInts = Kokkos::View<int*, Kokkos::HostSpace>;
  HostInts drow("spmd::sparse::CsrMatrix::diag_row_map", static_cast<std::size_t>(n + 1));
  HostInts orow("spmd::sparse::CsrMatrix::off_row_map", static_cast<std::size_t>(n + 1));
  Kokkos::parallel_for("spmd::sparse::CsrMatrix::count", policy, [&](const int i) {
    int d = 0, o = 0;
    for (index_t k = in.row_ptr(i); k < in.row_ptr(i + 1); ++k) {
      const bool mine = in.col(k) >= clo && in.col(k) < chi;
      d += mine;
      o += !mine;
    }
    drow(i + 1) = d;
    orow(i + 1) = o;
  });
  for (int i = 0; i < ni; ++i) {  // exclusive scan (cheap next to the passes over the entries)
    drow(i + 1) += drow(i);
    orow(i + 1) += orow(i);
  }
  const int dnnz = drow(ni), onnz = orow(ni);
  // The diagonal block's storage: on host execution spaces SELL-C-1 (impl::SellBlock) with the
  // largest chunk height C of impl::sell_heights whose padding stays within
  // impl::sell_max_padding of the entries (and whose slots fit an int); else, and on devices,
  // CSR for KokkosSparse::spmv. chunk_ptr: first slot of each chunk.
  using dev_map = typename local_matrix_type::row_map_type::non_const_type;
  dev_map d_chunk;
  auto chunk_ptr = Kokkos::create_mirror_view(d_chunk);
  index_t slots = dnnz;
  int C = 1, nch = 0;
  if constexpr (host_kernels) {
    static_assert(impl::sell_heights[0] % 4 == 0 && impl::sell_heights[1] % 4 == 0 && impl::sell_heights[2] % 4 == 0,
                  "spmd::sparse::CsrMatrix: SELL chunk heights are multiples of 4");
    // The longest row of each group of 4 rows: a chunk of C rows spans C / 4 groups.
    const int ngroups = (ni + 3) / 4;
    HostInts longest("spmd::sparse::CsrMatrix::sell_group_widths", static_cast<std::size_t>(ngroups));
    Kokkos::parallel_for("spmd::sparse::CsrMatrix::sell_widths",
                         Kokkos::RangePolicy<host_exec>(host_exec(), 0, ngroups), [&](const int g) {
                           for (int i = 4 * g; i - 4 * g < std::min(ni - 4 * g, 4); ++i)
                             longest(g) = std::max(longest(g), drow(i + 1) - drow(i));
                         });
    const auto width = [&](const int c, const int height) {  // of chunk c of that height
      int w = 0;
      for (int g = c * (height / 4); g < std::min(ngroups, (c + 1) * (height / 4)); ++g) w = std::max(w, longest(g));
      return w;
    };
    for (const int height : impl::sell_heights) {
      const int chunks = (ni + height - 1) / height;
      index_t total = 0;
      for (int c = 0; c < chunks; ++c) total += index_t(height) * width(c, height);
      if (total <= INT_MAX && static_cast<double>(total - dnnz) <= impl::sell_max_padding * dnnz) {
        C = height;
        nch = chunks;
        slots = total;
        break;
      }
    }
    if (C > 1) {
      d_chunk = dev_map("spmd::sparse::CsrMatrix::sell_chunk_ptr", static_cast<std::size_t>(nch + 1));
      chunk_ptr = Kokkos::create_mirror_view(d_chunk);
      for (int c = 0; c < nch; ++c) chunk_ptr(c + 1) = chunk_ptr(c) + C * width(c, C);
    }
  }
  storage_.sliced = C > 1;
  storage_.chunk = C;
  storage_.rows = n;
  storage_.entries = dnnz;
  storage_.slots = slots;
  storage_.chunks = nch;
  // Where the e-th diagonal-block entry of local row i goes in the block's columns and values.
  const auto dpos = [&](const int i, const int e) {
    return storage_.sliced ? chunk_ptr(i / C) + e * C + i % C : drow(i) + e;
  };
  // Ghosts: the distinct off-rank columns, sorted (owner order, then column order).
  std::vector<index_t> ghosts(static_cast<std::size_t>(onnz));
  Kokkos::parallel_for("spmd::sparse::CsrMatrix::off_columns", policy, [&](const int i) {
    int o = orow(i);
    for (index_t k = in.row_ptr(i); k < in.row_ptr(i + 1); ++k)
      if (in.col(k) < clo || in.col(k) >= chi) ghosts[static_cast<std::size_t>(o++)] = in.col(k);
  });
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());

  using dev_ints = typename local_matrix_type::index_type::non_const_type;
  using dev_vals = typename local_matrix_type::values_type::non_const_type;
  auto alloc = [](auto tag, const std::string& l, std::size_t len) {
    return decltype(tag)(Kokkos::view_alloc(Kokkos::WithoutInitializing, l), len);
  };
  dev_map d_map = alloc(dev_map(), "spmd::sparse::CsrMatrix::diag_row_map", static_cast<std::size_t>(n + 1));
  // The off-diagonal block keeps only the rows that have off-diagonal entries (a product over
  // every local row would read and write all of y for a few boundary rows).
  std::vector<int> off_rows;
  for (int i = 0; i < ni; ++i)
    if (orow(i + 1) > orow(i)) off_rows.push_back(i);
  const int nr = static_cast<int>(off_rows.size());
  dev_map o_map = alloc(dev_map(), "spmd::sparse::CsrMatrix::off_row_map", static_cast<std::size_t>(nr + 1));
  off_rows_ = Kokkos::View<int*, M>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sparse::CsrMatrix::off_rows"), off_rows.size());
  off_y_ = Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sparse::CsrMatrix::off_products"),
                               off_rows.size());
  dev_ints d_col = alloc(dev_ints(), "spmd::sparse::CsrMatrix::diag_columns", static_cast<std::size_t>(slots));
  dev_ints o_col = alloc(dev_ints(), "spmd::sparse::CsrMatrix::off_columns", static_cast<std::size_t>(onnz));
  dev_vals d_val = alloc(dev_vals(), "spmd::sparse::CsrMatrix::diag_values", static_cast<std::size_t>(slots));
  dev_vals o_val = alloc(dev_vals(), "spmd::sparse::CsrMatrix::off_values", static_cast<std::size_t>(onnz));
  diagonal_ = Kokkos::View<T*, M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "spmd::sparse::CsrMatrix::diagonal"),
                                  static_cast<std::size_t>(n));
  auto hd_col = Kokkos::create_mirror_view(d_col);
  auto ho_col = Kokkos::create_mirror_view(o_col);
  auto hd_val = Kokkos::create_mirror_view(d_val);
  auto ho_val = Kokkos::create_mirror_view(o_val);
  auto h_diag = Kokkos::create_mirror_view(diagonal_);
  const index_t* g = ghosts.data();
  const std::size_t ng = ghosts.size();
  Kokkos::parallel_for("spmd::sparse::CsrMatrix::split", policy, [&](const int i) {
    int e = 0, o = orow(i), last = 0;
    T dg = T(0);
    for (index_t k = in.row_ptr(i); k < in.row_ptr(i + 1); ++k) {
      const index_t c = in.col(k);
      if (c == lo + i) dg += in.val(k);
      if (c >= clo && c < chi) {
        last = static_cast<int>(c - clo);
        hd_col(dpos(i, e)) = last;
        hd_val(dpos(i, e++)) = in.val(k);
      } else {
        ho_col(o) = static_cast<int>(impl::lower_bound(g, ng, c));
        ho_val(o++) = in.val(k);
      }
    }
    h_diag(i) = dg;
    if (storage_.sliced)  // padding to the chunk's width: value 0 at the row's last column
      for (const int w = (chunk_ptr(i / C + 1) - chunk_ptr(i / C)) / C; e < w; ++e) {
        hd_col(dpos(i, e)) = last;
        hd_val(dpos(i, e)) = T(0);
      }
  });
  if (storage_.sliced)  // the lanes past the last row, in the last chunk
    for (int l = ni % C; l > 0 && l < C; ++l)
      for (int e = 0; e < (chunk_ptr(nch) - chunk_ptr(nch - 1)) / C; ++e) {
        hd_col(chunk_ptr(nch - 1) + e * C + l) = 0;
        hd_val(chunk_ptr(nch - 1) + e * C + l) = T(0);
      }
  Kokkos::deep_copy(d_map, drow);
  {
    auto h_map = Kokkos::create_mirror_view(o_map);
    auto h_rows = Kokkos::create_mirror_view(off_rows_);
    for (int r = 0; r < nr; ++r) {
      h_map(r) = orow(off_rows[static_cast<std::size_t>(r)]);
      h_rows(r) = off_rows[static_cast<std::size_t>(r)];
    }
    h_map(nr) = onnz;
    Kokkos::deep_copy(o_map, h_map);
    Kokkos::deep_copy(off_rows_, h_rows);
  }
  Kokkos::deep_copy(d_col, hd_col);
  Kokkos::deep_copy(o_col, ho_col);
  Kokkos::deep_copy(d_val, hd_val);
  Kokkos::deep_copy(o_val, ho_val);
  Kokkos::deep_copy(diagonal_, h_diag);
  if (storage_.sliced)
    sell_ = impl::SellBlock<T, M>{d_chunk, d_col, d_val, d_map};
  else
    diag_ = local_matrix_type("spmd::sparse::CsrMatrix::diagonal_block", ni, static_cast<int>(cols_.owned().extent(0)),
                              dnnz, d_val, d_map, d_col);
  off_ = local_matrix_type("spmd::sparse::CsrMatrix::offdiagonal_block", nr, static_cast<int>(ng), onnz, o_val, o_map,
                           o_col);
  import_ = std::make_shared<impl::GhostImport<T, M>>(cols_, ghosts, fn);
  nnz_ = comm.allreduce(static_cast<index_t>(dnnz) + onnz, Op::sum);
}

}  // namespace spmd::sparse
