#pragma once
// The local pieces of a spmd::sparse::CsrMatrix: the block types (Kokkos Kernels' CrsMatrix with
// int ordinals and offsets), the host rows the constructor splits, and the ghost import plan
// (GhostImport) on the communication engine: which owned x entries each peer needs, packed by an
// index gather, moved by an impl::MessagePlan straight into the ghost vector.

#include <Kokkos_Core.hpp>
#include <KokkosSparse_CrsMatrix.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "spmd/array.hpp"
#include "spmd/distribution.hpp"
#include "spmd/impl/messages.hpp"
#include "spmd/impl/ndrange.hpp"

namespace spmd::sparse::impl {
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

/// When some row of `in` holds a column twice: rows (p, c, v) with each row's repeated columns
/// added up into one entry (the row's entries then in column order; a row without repeats as it
/// is), and true; else false and nothing written. The check runs on the host in parallel over
/// the rows and allocates nothing there (a long row out of column order is only a candidate);
/// the merge, which allocates, runs serially, so that std::bad_alloc reaches the caller (the
/// constructor agrees it as an error) instead of leaving a parallel region. Local.
template <class T>
bool merge_repeats(const HostRows<T>& in, std::vector<index_t>& p, std::vector<index_t>& c, std::vector<T>& v) {
  using host_exec = Kokkos::DefaultHostExecutionSpace;
  const index_t n = static_cast<index_t>(in.row_ptr.extent(0)) - 1;
  if (n <= 0) return false;
  // 1: a repeat surely, 0: surely none, -1: a long row out of order (sort it to know)
  const auto quick = [&](const index_t i) {
    const index_t b = in.row_ptr(i), e = in.row_ptr(i + 1);
    if (e - b <= 64) {
      for (index_t k = b + 1; k < e; ++k)
        for (index_t j = b; j < k; ++j)
          if (in.col(j) == in.col(k)) return 1;
      return 0;
    }
    for (index_t k = b + 1; k < e; ++k)
      if (!(in.col(k - 1) < in.col(k))) return -1;
    return 0;
  };
  index_t candidates = 0;
  Kokkos::parallel_reduce(
      "spmd::sparse::CsrMatrix::repeats", Kokkos::RangePolicy<host_exec>(host_exec(), 0, n),
      [&](const index_t i, index_t& count) { count += quick(i) != 0 ? 1 : 0; }, candidates);
  if (candidates == 0) return false;
  std::vector<index_t> sorted;
  const auto repeats = [&](const index_t i) {
    const int q = quick(i);
    if (q >= 0) return q == 1;
    sorted.assign(in.col.data() + in.row_ptr(i), in.col.data() + in.row_ptr(i + 1));
    std::sort(sorted.begin(), sorted.end());
    return std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  };
  bool any = false;
  for (index_t i = 0; i < n && !any; ++i) any = repeats(i);
  if (!any) return false;
  p.assign(1, 0);
  c.clear();
  v.clear();
  std::vector<std::pair<index_t, T>> row;
  for (index_t i = 0; i < n; ++i) {
    const index_t b = in.row_ptr(i), e = in.row_ptr(i + 1);
    if (!repeats(i)) {
      for (index_t k = b; k < e; ++k) {
        c.push_back(in.col(k));
        v.push_back(in.val(k));
      }
    } else {
      row.clear();
      for (index_t k = b; k < e; ++k) row.emplace_back(in.col(k), in.val(k));
      std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (const auto& [col, val] : row) {
        if (static_cast<index_t>(c.size()) > p.back() && c.back() == col)
          v.back() += val;  // in the order given
        else {
          c.push_back(col);
          v.push_back(val);
        }
      }
    }
    p.push_back(static_cast<index_t>(c.size()));
  }
  return true;
}

/// buf(k) = x(idx(k)): the x entries the peers need, in message order.
template <class T, class M>
struct GatherPack {
  T* buf;
  Kokkos::View<const int*, M> idx;
  VecView<const T, M> x;
  KOKKOS_INLINE_FUNCTION void operator()(const int k) const { buf[k] = x(idx(k)); }
};

/// y(rows(r)) += alpha * (row r of the off-diagonal block) . ghosts, one work item per row that
/// has off-rank entries (the rows are distinct, so no two items write one element). One kernel,
/// no temporary of the products and no sparse library call: KokkosSparse::spmv with the cuSPARSE
/// TPL creates descriptors and a work buffer on every call (about 0.1-0.2 ms per product on an
/// H200, measured 2026-11-27: CSR CG at 1024^2 per GPU went from 84 us per iteration on one GPU
/// to 286 us on two).
template <class T, class M>
struct OffDiagonalAdd {
  VecView<T, M> y;
  Kokkos::View<const int*, M> rows, row_map, col;
  Kokkos::View<const T*, M> val;
  VecView<const T, M> ghosts;
  T alpha;
  KOKKOS_INLINE_FUNCTION void operator()(const int r) const {
    T acc = T(0);
    for (int k = row_map(r); k < row_map(r + 1); ++k) acc += val(k) * ghosts(col(k));
    y(rows(r)) += alpha * acc;
  }
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
  void begin(const execution_space& exec, const VecView<const T, M>& x) const {
    if (active_)
      throw Error("spmd::sparse::GhostImport::begin: an import on this matrix is in progress; call import_end() first");
    active_ = true;
    const spmd::impl::Region region("spmd::sparse::import_begin");
    const index_t n = msgs_.send_total();
    if (n > 0)
      Kokkos::parallel_for("spmd::sparse::import::pack",
                           Kokkos::RangePolicy<execution_space>(exec, 0, static_cast<int>(n)),
                           GatherPack<T, M>{msgs_.send_buffer(), send_idx_, x});
    msgs_.start(exec);
  }
  /// Wait for the ghosts (then ghosts() holds them, in stream order on a device) and for the
  /// sends. Local call, completes a neighbour-collective operation.
  void end(const execution_space& exec) const {
    if (!active_) throw Error("spmd::sparse::GhostImport::end: no import in progress (call import_begin() first)");
    active_ = false;
    const spmd::impl::Region region("spmd::sparse::import_end");
    msgs_.wait_receives(exec);
    msgs_.wait_sends();
  }
  /// The ghost vector: x at the off-diagonal block's columns, in ghost order. Local.
  const Kokkos::View<T*, M>& ghosts() const { return msgs_.recv_view(); }
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

}  // namespace spmd::sparse::impl
