// The parallel Matrix Market reader behind spmd::sparse::read_matrix_market (see
// include/spmd/sparse/matrix_market.hpp for the strategy and the supported subset). The text is
// parsed by the pure functions of matrix_market_parse.hpp (which the fuzzer also runs); this file
// does the I/O, the byte ranges, the line numbering across ranks and the agreement on errors.
#include "spmd/sparse/matrix_market.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "matrix_market_parse.hpp"

namespace spmd::sparse::impl {
namespace {

constexpr const char* fn = "spmd::sparse::read_matrix_market";

using mm::Entry;
using mm::Field;
using mm::Header;
static_assert(std::is_same_v<index_t, std::int64_t>, "the parser's indices are index_t");

std::string at_line(const std::string& path, index_t line) {
  return str(fn, ": '", path, "' line ", line, ": ");
}

/// "40000000008 bytes (37.3 GiB)".
std::string bytes_str(double b) {
  char text[96];
  if (b < 1e15)
    std::snprintf(text, sizeof(text), "%.0f bytes (%.3g GiB)", b, b / 1073741824.0);
  else
    std::snprintf(text, sizeof(text), "%.3g bytes (%.3g GiB)", b, b / 1073741824.0);
  return text;
}

/// Rank 0: the banner and the size line, read in growing chunks from the start of the file
/// until the parser has seen the size line. Returns an error message, or "" when all is well.
std::string read_header(const std::string& path, Header& h, index_t& file_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return str(fn, ": cannot open '", path, "': ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  file_size = static_cast<index_t>(in.tellg());
  in.seekg(0);
  if (!in || file_size < 0) return str(fn, ": cannot read '", path, "' (not a regular file?)");
  std::string text;
  std::size_t chunk = 65536;
  for (;;) {
    const std::size_t old = text.size();
    const std::size_t more = std::min<std::size_t>(chunk, static_cast<std::size_t>(file_size) - old);
    text.resize(old + more);
    in.read(&text[old], static_cast<std::streamsize>(more));
    if (in.gcount() != static_cast<std::streamsize>(more))
      return str(fn, ": could not read bytes ", old, "..", old + more, " of '", path,
                 "' (not a regular file, or did it change while it was read?)");
    const bool eof = text.size() == static_cast<std::size_t>(file_size);
    index_t line = 0;
    std::string message;
    const mm::Status st = mm::parse_header(text, eof, h, line, message);
    if (st == mm::Status::ok) return "";
    if (st == mm::Status::error) return at_line(path, line) + message;
    if (eof) return str(fn, ": '", path, "': internal error: the header parser wants more of a file it has whole");
    chunk *= 2;
  }
}

/// The size line's row count against what a rank can hold: a size line with more rows than a
/// rank's local block can index, or whose row pointers alone would not fit this node's memory, is
/// refused before anything is allocated; else this rank's row pointers are allocated here (into
/// row_ptr). Returns an error message, or "".
std::string check_size(const Comm& comm, const std::string& path, const Header& h, std::vector<index_t>& row_ptr) {
  const int p = comm.size();
  const index_t most = spmd::impl::block_extent(h.rows, p, 0);  // the first block is a largest one
  const double bytes = (static_cast<double>(most) + 1) * sizeof(index_t);
  const std::string declared = str(at_line(path, h.data_line - 1), "the size line declares ", h.rows, " x ", h.cols,
                                   " with ", h.entries, " entries: ");
  if (most > INT_MAX)
    return str(declared, "at ", p, p == 1 ? " rank" : " ranks", " a rank would own ", most,
               " rows, more than the 2147483647 (INT_MAX) a rank's part of a CsrMatrix can hold, and would need ",
               bytes_str(bytes), " per rank for its row pointers alone (is the size line right? else use at least ",
               (h.rows - 1) / INT_MAX + 1, " ranks)");
  // One check against the node's physical memory, so that an impossible size is refused cleanly
  // rather than left to the kernel's out-of-memory killer (allocations are overcommitted).
  const Comm node = comm.node_local();
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double physical = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
  if (physical > 0 && bytes * node.size() > physical)
    return str(declared, "at ", p, p == 1 ? " rank" : " ranks", " it needs ", bytes_str(bytes),
               " per rank for the row pointers of ", most, " rows alone, and the ", node.size(), " ranks on rank ",
               comm.rank(), "'s node together more than its ", bytes_str(physical),
               " of memory (is the size line right? else use more nodes)");
  try {
    row_ptr.assign(static_cast<std::size_t>(spmd::impl::block_extent(h.rows, p, comm.rank())) + 1, 0);
  } catch (const std::bad_alloc&) {
    return str(declared, "rank ", comm.rank(), " could not allocate the ", bytes_str(bytes),
               " per rank for the row pointers of its rows");
  }
  return "";
}

/// This rank's part of the entry section: the lines that start in its byte range (and the
/// whole last one). Sets `err` when the file cannot be read.
std::string read_part(const std::string& path, const Header& h, index_t file_size, int p, int me, std::string& err) {
  const index_t len = file_size - h.data_offset;
  const index_t a = h.data_offset + spmd::impl::block_start(len, p, me);
  const index_t b = h.data_offset + spmd::impl::block_start(len, p, me + 1);
  if (a >= b) return "";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err = str(fn, ": rank ", me, " cannot open '", path, "': ", std::strerror(errno));
    return "";
  }
  // Read from a - 1: a line starts at a when the byte before it ends a line.
  const index_t begin = a > h.data_offset ? a - 1 : a;
  std::string text(static_cast<std::size_t>(b - begin), '\0');
  in.seekg(begin);
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  if (in.gcount() != static_cast<std::streamsize>(text.size())) {
    err = str(fn, ": rank ", me, " could not read bytes ", begin, "..", b, " of '", path,
              "' (did the file change while it was read?)");
    return "";
  }
  std::size_t start = 0;
  if (begin < a) {
    const std::size_t nl = text.find('\n');
    if (nl == std::string::npos) return "";  // no line starts in [a, b)
    start = nl + 1;
  }
  if (begin + static_cast<index_t>(start) >= b) return "";
  // Finish the line that crosses b.
  if (text.back() != '\n') {
    char c;
    while (in.get(c)) {
      text.push_back(c);
      if (c == '\n') break;
    }
  }
  return text.substr(start);
}

}  // namespace

/// Rank 0 reads the banner and the size line and broadcasts them (and the file's size); an error
/// is agreed on. Collective.
mm::Header agreed_header(const Comm& comm, const std::string& path, index_t& file_size) {
  Header h;
  file_size = 0;
  std::string err;
  if (comm.rank() == 0) err = read_header(path, h, file_size);
  comm.check(err.empty(), err);
  std::array<index_t, 8> hv{h.rows,      h.cols,        h.entries,   static_cast<index_t>(h.field),
                            h.symmetric, h.data_offset, h.data_line, file_size};
  comm.bcast(hv.data(), 8, 0);
  file_size = hv[7];
  return Header{hv[0], hv[1], hv[2], static_cast<Field>(hv[3]), hv[4] != 0, hv[5], hv[6]};
}

MarketRows read_market_rows(const Comm& comm, const std::string& path) {
  const int p = comm.size(), me = comm.rank();
  // ---- rank 0 reads the banner and the size line
  index_t file_size = 0;
  Header h = agreed_header(comm, path, file_size);
  std::string err;

  // ---- a size line the ranks cannot hold is refused before anything else is allocated
  MarketRows r;
  err = check_size(comm, path, h, r.row_ptr);
  comm.check(err.empty(), err);

  // ---- every rank parses the lines that start in its byte range
  std::vector<Entry> entries;
  std::string text;
  mm::EntryLines part;
  try {
    text = read_part(path, h, file_size, p, me, err);
    part = mm::parse_entries(text, h, entries);
  } catch (const std::bad_alloc&) {
    err = str(fn, ": '", path, "': rank ", me, " ran out of memory holding its ", text.size(),
              " bytes of the file and ", entries.size(), " entries (",
              bytes_str(static_cast<double>(text.size() + entries.size() * sizeof(Entry))), "; use more ranks)");
  }

  // ---- number the lines and entries; agree on the first problem in file order
  const std::array<index_t, 2> mine{part.lines, static_cast<index_t>(entries.size())};
  const std::vector<index_t> all = comm.allgather(mine.data(), 2);
  index_t first_line = h.data_line, first_entry = 0, total_lines = 0, total = 0;
  for (int q = 0; q < p; ++q) {
    if (q < me) {
      first_line += all[2 * q];
      first_entry += all[2 * q + 1];
    }
    total_lines += all[2 * q];
    total += all[2 * q + 1];
  }
  if (err.empty() && part.bad >= 0) err = at_line(path, first_line + part.bad) + part.message;
  if (err.empty() && first_entry + static_cast<index_t>(entries.size()) > h.entries) {
    // The first entry past the declared count: find its line again.
    const index_t at = mm::entry_line(text, std::max<index_t>(0, h.entries - first_entry));
    err = at_line(path, first_line + at) +
          str("more entries than the ", h.entries, " the size line (line ", h.data_line - 1, ") declares");
  }
  text = std::string();
  comm.check(err.empty(), err);
  if (total < h.entries)
    throw Error::replicated(at_line(path, h.data_line + total_lines - 1) +
                            str("the file ends after ", total, " of the ", h.entries, " entries the size line (line ",
                                h.data_line - 1, ") declares (a truncated file?)"));

  // ---- route every entry (and a symmetric file's mirror) to the rank owning its row
  const auto owner = [&](index_t row) { return spmd::impl::block_of(h.rows, p, row); };
  std::vector<index_t> send_count(static_cast<std::size_t>(p), 0), recv_count(static_cast<std::size_t>(p), 0);
  for (const auto& e : entries) {
    ++send_count[static_cast<std::size_t>(owner(e.row))];
    if (h.symmetric && e.row != e.col) ++send_count[static_cast<std::size_t>(owner(e.col))];
  }
  SPMD_MPI_CHECK(
      MPI_Alltoall(send_count.data(), 1, mpi_type<index_t>(), recv_count.data(), 1, mpi_type<index_t>(), comm.raw()),
      fn);
  std::vector<int> sc(static_cast<std::size_t>(p)), rc(sc), sd(sc), rd(sc);
  index_t ns = 0, nr = 0;
  for (std::size_t q = 0; q < sc.size(); ++q) {
    sd[q] = static_cast<int>(std::min<index_t>(ns, INT_MAX));
    rd[q] = static_cast<int>(std::min<index_t>(nr, INT_MAX));
    sc[q] = static_cast<int>(send_count[q]);
    rc[q] = static_cast<int>(recv_count[q]);
    ns += send_count[q];
    nr += recv_count[q];
  }
  if (ns > INT_MAX || nr > INT_MAX)
    err = str(fn, ": '", path, "': rank ", me, " would send ", ns, " and receive ", nr,
              " entries, more than MPI's int counts (use more ranks)");
  std::vector<Entry> out, in;
  try {
    if (err.empty()) {
      out.resize(static_cast<std::size_t>(ns));
      in.resize(static_cast<std::size_t>(nr));
    }
  } catch (const std::bad_alloc&) {
    err = str(fn, ": '", path, "': rank ", me, " could not allocate ",
              bytes_str(static_cast<double>(ns + nr) * sizeof(Entry)), " to send ", ns, " and receive ", nr,
              " entries (use more ranks)");
  }
  comm.check(err.empty(), err);
  {
    std::vector<int> at(sd);
    for (const auto& e : entries) {
      out[static_cast<std::size_t>(at[static_cast<std::size_t>(owner(e.row))]++)] = e;
      if (h.symmetric && e.row != e.col)
        out[static_cast<std::size_t>(at[static_cast<std::size_t>(owner(e.col))]++)] = Entry{e.col, e.row, e.val};
    }
  }
  entries = std::vector<Entry>();
  MPI_Datatype entry_type;
  SPMD_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(sizeof(Entry)), MPI_BYTE, &entry_type), fn);
  SPMD_MPI_CHECK(MPI_Type_commit(&entry_type), fn);
  const int rc_all = MPI_Alltoallv(out.data(), sc.data(), sd.data(), entry_type, in.data(), rc.data(), rd.data(),
                                   entry_type, comm.raw());
  MPI_Type_free(&entry_type);
  SPMD_MPI_CHECK(rc_all, fn);
  out = std::vector<Entry>();

  // ---- this rank's rows: sorted by row, then column; repeated entries summed
  try {
    r.col.reserve(in.size());
    r.val.reserve(in.size());
  } catch (const std::bad_alloc&) {
    err = str(fn, ": '", path, "': rank ", me, " could not allocate ",
              bytes_str(static_cast<double>(in.size()) * (sizeof(index_t) + sizeof(double))), " for its ", in.size(),
              " entries (use more ranks)");
  }
  comm.check(err.empty(), err);
  r.rows = h.rows;
  r.cols = h.cols;
  const index_t lo = spmd::impl::block_start(h.rows, p, me);
  const index_t n = spmd::impl::block_extent(h.rows, p, me);
  std::sort(in.begin(), in.end(),
            [](const Entry& x, const Entry& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; });
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (k > 0 && in[k].row == in[k - 1].row && in[k].col == in[k - 1].col) {
      r.val.back() += in[k].val;
      continue;
    }
    r.col.push_back(in[k].col);
    r.val.push_back(in[k].val);
    ++r.row_ptr[static_cast<std::size_t>(in[k].row - lo) + 1];
  }
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) r.row_ptr[i + 1] += r.row_ptr[i];
  return r;
}

}  // namespace spmd::sparse::impl

namespace spmd::sparse {
MatrixMarketSize read_matrix_market_size(const Comm& comm, const std::string& path) {
  index_t file_size = 0;
  const mm::Header h = impl::agreed_header(comm, path, file_size);
  return MatrixMarketSize{h.rows, h.cols, h.entries, h.symmetric};
}
}  // namespace spmd::sparse
