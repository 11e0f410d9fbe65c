// The parallel Matrix Market reader behind spmd::sparse::read_matrix_market (see
// include/spmd/sparse/matrix_market.hpp for the strategy and the supported subset).
#include "spmd/sparse/matrix_market.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace spmd::sparse::impl {
namespace {

constexpr const char* fn = "spmd::sparse::read_matrix_market";

enum Field : index_t { real = 0, integer = 1, pattern = 2 };

/// What rank 0 learns from the banner and the size line, broadcast as index_t[8].
struct Header {
  index_t rows = 0, cols = 0, entries = 0, field = real, symmetric = 0;
  index_t data_offset = 0;  // byte offset of the first line after the size line
  index_t data_line = 0;    // its line number (1-based)
  index_t file_size = 0;
};

/// One entry, 0-based; travels between ranks as raw bytes.
struct Entry {
  index_t row, col;
  double val;
};

std::string at_line(const std::string& path, index_t line) {
  return str(fn, ": '", path, "' line ", line, ": ");
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The whitespace-separated fields of a line.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    const std::size_t b = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > b) out.push_back(line.substr(b, i - b));
  }
  return out;
}

/// True for a line with nothing but white space, or a comment.
bool skipped(const std::string& line) {
  for (char c : line)
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '%';
  return true;
}

bool parse_int(const std::string& s, index_t& out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || errno != 0) return false;
  out = static_cast<index_t>(v);
  return true;
}

bool parse_real(const std::string& s, double& out) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) return false;
  out = v;
  return true;
}

/// Rank 0: the banner and the size line. Returns an error message, or "" when all is well.
std::string read_header(const std::string& path, Header& h) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return str(fn, ": cannot open '", path, "': ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  h.file_size = static_cast<index_t>(in.tellg());
  in.seekg(0);
  std::string line;
  index_t lineno = 0, offset = 0;
  const auto next = [&] {
    if (!std::getline(in, line)) return false;
    ++lineno;
    offset += static_cast<index_t>(line.size()) + (in.eof() ? 0 : 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  const char* banner = "'%%MatrixMarket matrix coordinate <field> <symmetry>'";
  if (!next()) return at_line(path, 1) + str("the file is empty (expected the banner ", banner, ")");
  const auto b = fields(line);
  if (b.size() != 5 || lower(b[0]) != "%%matrixmarket")
    return at_line(path, 1) + str("expected the banner ", banner, ", found '", line, "'");
  if (lower(b[1]) != "matrix") return at_line(path, 1) + str("unsupported object '", b[1], "' (only matrix)");
  if (lower(b[2]) != "coordinate")
    return at_line(path, 1) + str("unsupported format '", b[2], "' (only coordinate; array is not read)");
  const std::string field = lower(b[3]), sym = lower(b[4]);
  if (field == "real" || field == "double")
    h.field = real;
  else if (field == "integer")
    h.field = integer;
  else if (field == "pattern")
    h.field = pattern;
  else
    return at_line(path, 1) + str("unsupported field '", b[3], "' (real, integer or pattern)");
  if (sym == "general" || sym == "symmetric")
    h.symmetric = sym == "symmetric";
  else
    return at_line(path, 1) + str("unsupported symmetry '", b[4], "' (general or symmetric)");
  bool found = false;
  while (!found && next()) found = !skipped(line);
  if (!found)
    return at_line(path, lineno + 1) + "the size line 'rows columns entries' is missing (the file ends before it)";
  const auto s = fields(line);
  if (s.size() != 3 || !parse_int(s[0], h.rows) || !parse_int(s[1], h.cols) || !parse_int(s[2], h.entries) ||
      h.rows < 0 || h.cols < 0 || h.entries < 0)
    return at_line(path, lineno) +
           str("expected the size line 'rows columns entries' (three non-negative integers), ", "found '", line, "'");
  if (h.symmetric && h.rows != h.cols)
    return at_line(path, lineno) + str("a symmetric matrix must be square, the size line says ", h.rows, " x ", h.cols);
  h.data_offset = offset;
  h.data_line = lineno + 1;
  return "";
}

/// This rank's part of the entry section: the lines that start in its byte range (and the
/// whole last one). Sets `err` when the file cannot be read.
std::string read_part(const std::string& path, const Header& h, int p, int me, std::string& err) {
  const index_t len = h.file_size - h.data_offset;
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

/// Calls f(line) for each line of text (without its end of line).
template <class F>
void for_each_line(const std::string& text, F&& f) {
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t e = text.find('\n', i);
    if (e == std::string::npos) e = text.size();
    std::size_t end = e;
    if (end > i && text[end - 1] == '\r') --end;
    if (!f(text.substr(i, end - i))) return;
    i = e + 1;
  }
}

}  // namespace

MarketRows read_market_rows(const Comm& comm, const std::string& path) {
  const int p = comm.size(), me = comm.rank();
  // ---- rank 0 reads the banner and the size line
  Header h;
  std::string err;
  if (me == 0) err = read_header(path, h);
  comm.check(err.empty(), err);
  std::array<index_t, 8> hv{h.rows, h.cols, h.entries, h.field, h.symmetric, h.data_offset, h.data_line, h.file_size};
  comm.bcast(hv.data(), 8, 0);
  h = Header{hv[0], hv[1], hv[2], hv[3], hv[4], hv[5], hv[6], hv[7]};

  // ---- every rank parses the lines that start in its byte range
  const std::string text = read_part(path, h, p, me, err);
  std::vector<Entry> entries;
  index_t nlines = 0, bad_line = -1;
  std::string bad;
  const std::size_t want = h.field == pattern ? 2 : 3;
  const char* layout = h.field == pattern ? "'row column'" : "'row column value'";
  for_each_line(text, [&](const std::string& line) {
    ++nlines;
    if (skipped(line)) return true;
    const auto f = fields(line);
    Entry e{0, 0, 1.0};
    index_t iv = 0;
    if (f.size() != want)
      bad = str("expected an entry ", layout, ", found '", line, "'");
    else if (!parse_int(f[0], e.row))
      bad = str("row index '", f[0], "' is not an integer");
    else if (!parse_int(f[1], e.col))
      bad = str("column index '", f[1], "' is not an integer");
    else if (e.row < 1 || e.row > h.rows)
      bad = str("row index ", e.row, " is outside 1..", h.rows);
    else if (e.col < 1 || e.col > h.cols)
      bad = str("column index ", e.col, " is outside 1..", h.cols);
    else if (h.field == real && !parse_real(f[2], e.val))
      bad = str("value '", f[2], "' is not a real number");
    else if (h.field == integer && !parse_int(f[2], iv))
      bad = str("value '", f[2], "' is not an integer");
    if (!bad.empty()) {
      bad_line = nlines - 1;
      return false;
    }
    if (h.field == integer) e.val = static_cast<double>(iv);
    --e.row;
    --e.col;
    entries.push_back(e);
    return true;
  });
  if (bad_line >= 0) {  // count the remaining lines too: later ranks' numbers depend on them
    nlines = 0;
    for_each_line(text, [&](const std::string&) { return ++nlines > 0; });
  }

  // ---- number the lines and entries; agree on the first problem in file order
  const std::array<index_t, 2> mine{nlines, static_cast<index_t>(entries.size())};
  const std::vector<index_t> all = comm.allgather(mine.data(), 2);
  index_t first_line = h.data_line, first_entry = 0, total_lines = 0, total = 0;
  for (int r = 0; r < p; ++r) {
    if (r < me) {
      first_line += all[2 * r];
      first_entry += all[2 * r + 1];
    }
    total_lines += all[2 * r];
    total += all[2 * r + 1];
  }
  if (err.empty() && bad_line >= 0) err = at_line(path, first_line + bad_line) + bad;
  if (err.empty() && first_entry + static_cast<index_t>(entries.size()) > h.entries) {
    // The first entry past the declared count: find its line again.
    const index_t k = std::max<index_t>(0, h.entries - first_entry);
    index_t line = 0, seen = 0, at = 0;
    for_each_line(text, [&](const std::string& l) {
      ++line;
      if (skipped(l)) return true;
      if (seen++ == k) {
        at = line - 1;
        return false;
      }
      return true;
    });
    err = at_line(path, first_line + at) +
          str("more entries than the ", h.entries, " the size line (line ", h.data_line - 1, ") declares");
  }
  comm.check(err.empty(), err);
  if (total < h.entries)
    throw Error(at_line(path, h.data_line + total_lines - 1) + str("the file ends after ", total, " of the ", h.entries,
                                                                   " entries the size line (line ", h.data_line - 1,
                                                                   ") declares (a truncated file?)"),
                true);

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
  comm.check(ns <= INT_MAX && nr <= INT_MAX, str(fn, ": '", path, "': rank ", me, " would send ", ns, " and receive ",
                                                 nr, " entries, more than MPI's int counts (use more ranks)"));
  std::vector<Entry> out(static_cast<std::size_t>(ns)), in(static_cast<std::size_t>(nr));
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
  MarketRows r;
  r.rows = h.rows;
  r.cols = h.cols;
  const index_t lo = spmd::impl::block_start(h.rows, p, me);
  const index_t n = spmd::impl::block_extent(h.rows, p, me);
  std::sort(in.begin(), in.end(),
            [](const Entry& x, const Entry& y) { return x.row != y.row ? x.row < y.row : x.col < y.col; });
  r.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
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
