#pragma once
/// \file src/sparse/matrix_market_parse.hpp
/// The text side of the Matrix Market reader: the banner, comment and size lines and the entry
/// lines, parsed from byte buffers. Internal (not installed): no MPI, no Kokkos, no I/O, so the
/// libFuzzer harness (tests/fuzz/fuzz_matrix_market.cpp) links it alone. The collective reader
/// (matrix_market.cpp) does the file I/O, the byte ranges, the line numbering across ranks and
/// the agreement on errors.
///
/// Every message these functions return is printable ASCII of bounded length: bytes from the
/// file appear only through excerpt().

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::sparse::mm {

enum class Field : std::int64_t { real = 0, integer = 1, pattern = 2 };

/// What the banner and the size line say, and where the entries start.
struct Header {
  std::int64_t rows = 0, cols = 0, entries = 0;
  Field field = Field::real;
  bool symmetric = false;
  std::int64_t data_offset = 0;  ///< byte offset of the first line after the size line
  std::int64_t data_line = 0;    ///< its line number (1-based)
};

/// One entry, 0-based (the reader sends these between ranks as raw bytes).
struct Entry {
  std::int64_t row, col;
  double val;
};

/// The longest first line read while looking for the banner: a first line longer than this is
/// not a banner (so a file of garbage without line ends is rejected after this many bytes).
inline constexpr std::size_t max_banner_bytes = 1024;

/// `s` made fit for an error message: at most `max` of its bytes, each outside printable ASCII
/// (and the backslash) escaped as \t, \r, \n, \\ or \xNN, and "... (N bytes)" when cut.
std::string excerpt(std::string_view s, std::size_t max = 64);

enum class Status { ok, error, more };

/// Parses the banner, the comments and the size line at the start of a file. `text` is the first
/// bytes of the file; `at_eof` says whether it is all of it. Returns ok (h filled), error
/// (`line` and `message` set: a 1-based line number and a sentence without it), or more: the
/// size line has not been seen yet, call again with a longer prefix.
Status parse_header(std::string_view text, bool at_eof, Header& h, std::int64_t& line, std::string& message);

/// The outcome of parse_entries.
struct EntryLines {
  std::int64_t lines = 0;  ///< lines in the text (the last one may lack its line end)
  std::int64_t bad = -1;   ///< the first bad line (0-based, within the text), or -1
  std::string message;     ///< what is wrong with it (no line number)
};

/// Parses the entry lines in `text` (whole lines of the entry section; the last one may lack its
/// line end; '\r' before a line end is ignored; blank and comment lines are skipped), checks
/// every index against h.rows and h.cols and appends the entries, 0-based, to `out` (a pattern
/// file's values are 1). Stops appending at the first bad line but still counts every line.
EntryLines parse_entries(std::string_view text, const Header& h, std::vector<Entry>& out);

/// The 0-based line (within `text`) of its k-th entry line (0-based, skipping blank and comment
/// lines), or -1 when it has fewer.
std::int64_t entry_line(std::string_view text, std::int64_t k);

}  // namespace spmd::sparse::mm
