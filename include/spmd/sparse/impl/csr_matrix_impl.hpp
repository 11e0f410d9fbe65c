#pragma once
// The constructor of spmd::sparse::CsrMatrix: argument agreement, the split into the diagonal and
// off-diagonal blocks (host, in parallel over rows), the diagonal block's storage (SELL on host
// execution spaces), the ghosts and their import plan.

#include <algorithm>
#include <array>
#include <climits>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spmd::sparse {

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
    throw Error::replicated(impl::str(fn, ": '", label, "': the ranks pass different or negative column counts (from ",
                                      -range[1], " to ", range[0], ")"));
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
  // ---- the local blocks (no communication until the ghost import plan): an allocation that
  // fails on some rank (a huge nnz there) is caught and agreed, one error naming that rank, its
  // rows and entries and about the bytes it asked for, instead of std::bad_alloc on one rank
  std::vector<index_t> ghosts;
  int dnnz = 0, onnz = 0;
  std::string alloc_error;
  try {
    // Repeated (row, column) entries are added up first (SciPy's sum_duplicates): a block may not
    // hold more entries than rows x columns (cuSPARSE refuses one, and Kokkos Kernels 4.6 then
    // crashes in its handle's destructor). Rows without repeats keep their order.
    std::vector<index_t> mp, mc;
    std::vector<T> mv;
    if (impl::merge_repeats(in, mp, mc, mv)) {
      build_blocks(impl::HostRows<T>(mp, mc, mv), ghosts, dnnz, onnz);
    } else {
      build_blocks(in, ghosts, dnnz, onnz);
    }
  } catch (const std::exception& e) {
    const index_t nz = in.row_ptr.extent(0) > 0 ? in.row_ptr(n) : 0;
    const double bytes = static_cast<double>(nz) * (2.0 * (sizeof(int) + sizeof(T)) + sizeof(index_t)) +
                         static_cast<double>(n + 1) * (4.0 * sizeof(int) + 2.0 * sizeof(T));
    const std::string why = e.what();
    alloc_error = impl::str(where(), "cannot allocate its local blocks: about ", spmd::impl::bytes_str(bytes), " for ",
                            nz, " entries in ", n, " rows in ", M::name(), " and host memory (",
                            why.substr(0, why.find('\n')).substr(0, 200), ")");
  }
  comm.check(alloc_error.empty(), alloc_error);
  import_ = std::make_shared<impl::GhostImport<T, M>>(cols_, ghosts, fn);
  ghost_cols_ = std::make_shared<const std::vector<index_t>>(std::move(ghosts));
  nnz_ = comm.allreduce(static_cast<index_t>(dnnz) + onnz, Op::sum);
}

template <class T, class M>
void CsrMatrix<T, M>::build_blocks(const impl::HostRows<T>& in, std::vector<index_t>& ghosts, int& dnnz_out,
                                   int& onnz_out) {
  using host_exec = Kokkos::DefaultHostExecutionSpace;
  const index_t lo = rows_.owned().lo[0];
  const index_t n = rows_.owned().extent(0);
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
  dnnz_out = dnnz;
  onnz_out = onnz;
  // The diagonal block's storage: SELL-C-1 (impl::SellBlock) with the largest chunk height C of
  // impl::sell_heights (host execution spaces) or impl::sell_device_height (devices, and hosts
  // under the testing knob point_items) whose padding stays within impl::sell_max_padding of the
  // entries (and whose slots fit an int); else CSR for KokkosSparse::spmv. chunk_ptr: first slot
  // of each chunk.
  using dev_map = typename local_matrix_type::row_map_type::non_const_type;
  dev_map d_chunk;
  auto chunk_ptr = Kokkos::create_mirror_view(d_chunk);
  index_t slots = dnnz;
  int C = 1, nch = 0;
  {
    static_assert(impl::sell_heights[0] % 4 == 0 && impl::sell_heights[1] % 4 == 0 && impl::sell_heights[2] % 4 == 0 &&
                      impl::sell_device_height % 4 == 0,
                  "spmd::sparse::CsrMatrix: SELL chunk heights are multiples of 4");
    const bool rows_form = !host_kernels || spmd::impl::forms<M>().point_items;
    std::vector<int> heights(std::begin(impl::sell_heights), std::end(impl::sell_heights));
    if (rows_form) heights = {impl::sell_device_height};
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
    for (const int height : heights) {
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
  ghosts.resize(static_cast<std::size_t>(onnz));
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
  // The chunk offsets were filled in their host mirror (the same View on host spaces): on a
  // device they must be copied, or every chunk reads as empty and the product is zero.
  if (storage_.sliced) Kokkos::deep_copy(d_chunk, chunk_ptr);
  if (storage_.sliced)
    sell_ = impl::SellBlock<T, M>{d_chunk, d_col, d_val, d_map};
  else
    diag_ = local_matrix_type("spmd::sparse::CsrMatrix::diagonal_block", ni, static_cast<int>(cols_.owned().extent(0)),
                              dnnz, d_val, d_map, d_col);
  off_ = local_matrix_type("spmd::sparse::CsrMatrix::offdiagonal_block", nr, static_cast<int>(ng), onnz, o_val, o_map,
                           o_col);
}

}  // namespace spmd::sparse
