// libFuzzer harness for the Matrix Market text parser (src/sparse/matrix_market_parse.hpp), the
// part of spmd::sparse::read_matrix_market that sees the file's bytes. It checks properties, not
// only the absence of crashes:
//  - parse_header never asks for more of a whole file; on a prefix it either asks for more or
//    gives the answer it gives on the whole file;
//  - a parsed header is consistent (sizes >= 0, the entries start inside the file);
//  - every entry is inside the declared matrix, 0-based, and finite (1 for pattern files);
//  - parse_entries counts lines additively: the entry section cut at any line boundary (as the
//    reader's ranks cut it) gives the same lines, entries and first bad line as the whole;
//  - entry_line agrees with the entries parsed;
//  - every message is printable ASCII of bounded length (no raw bytes of the file).
// Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined); tests/fuzz/replay_main.cpp
// runs it over the corpus and the regression files in the ordinary ctest suite.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "matrix_market_parse.hpp"

namespace mm = spmd::sparse::mm;

#define FUZZ_CHECK(cond)                                                                         \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "fuzz_matrix_market: check failed: %s (line %d)\n", #cond, __LINE__); \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)

namespace {

/// A message fit to print: printable ASCII, bounded length.
bool printable(const std::string& m) {
  if (m.empty() || m.size() > 640) return false;
  for (const char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  return true;
}

bool same(const mm::Header& a, const mm::Header& b) {
  return a.rows == b.rows && a.cols == b.cols && a.entries == b.entries && a.field == b.field &&
         a.symmetric == b.symmetric && a.data_offset == b.data_offset && a.data_line == b.data_line;
}

bool same(const mm::Entry& a, const mm::Entry& b) {
  return a.row == b.row && a.col == b.col && a.val == b.val;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mm::Header h;
  std::int64_t line = 0;
  std::string message;
  const mm::Status st = mm::parse_header(text, true, h, line, message);
  FUZZ_CHECK(st != mm::Status::more);
  if (st == mm::Status::error) {
    FUZZ_CHECK(line >= 1);
    FUZZ_CHECK(printable(message));
  } else {
    FUZZ_CHECK(h.rows >= 0 && h.cols >= 0 && h.entries >= 0);
    FUZZ_CHECK(!h.symmetric || h.rows == h.cols);
    FUZZ_CHECK(h.data_offset >= 1 && h.data_offset <= static_cast<std::int64_t>(size));
    FUZZ_CHECK(h.data_line >= 3);
  }
  // The reader reads the header in growing prefixes: a prefix says "more" or what the whole says.
  for (const std::size_t cut : {size / 3, size / 2, size - size / 8}) {
    if (cut >= size) continue;
    mm::Header hp;
    std::int64_t lp = 0;
    std::string mp;
    const mm::Status sp = mm::parse_header(text.substr(0, cut), false, hp, lp, mp);
    if (sp == mm::Status::more) continue;
    FUZZ_CHECK(sp == st);
    if (st == mm::Status::ok)
      FUZZ_CHECK(same(hp, h));
    else
      FUZZ_CHECK(lp == line && mp == message);
  }
  if (st != mm::Status::ok) return 0;

  // ---- the entry section, whole
  const std::string_view section = text.substr(static_cast<std::size_t>(h.data_offset));
  std::vector<mm::Entry> all;
  const mm::EntryLines whole = mm::parse_entries(section, h, all);
  std::int64_t newlines = 0;
  for (const char c : section) newlines += c == '\n';
  FUZZ_CHECK(whole.lines == newlines + (!section.empty() && section.back() != '\n'));
  FUZZ_CHECK(whole.bad >= -1 && whole.bad < whole.lines);
  if (whole.bad >= 0) FUZZ_CHECK(printable(whole.message));
  for (const auto& e : all) {
    FUZZ_CHECK(e.row >= 0 && e.row < h.rows && e.col >= 0 && e.col < h.cols);
    FUZZ_CHECK(e.val - e.val == 0.0);  // finite
    if (h.field == mm::Field::pattern) FUZZ_CHECK(e.val == 1.0);
  }
  if (whole.bad < 0) {
    FUZZ_CHECK(mm::entry_line(section, static_cast<std::int64_t>(all.size())) == -1);
    if (!all.empty()) FUZZ_CHECK(mm::entry_line(section, static_cast<std::int64_t>(all.size()) - 1) >= 0);
  }

  // ---- the same section cut at a line boundary (as two ranks would read it)
  const std::size_t nl = section.find('\n', section.size() / 2);
  if (nl == std::string_view::npos) return 0;
  std::vector<mm::Entry> parts;
  const mm::EntryLines a = mm::parse_entries(section.substr(0, nl + 1), h, parts);
  const mm::EntryLines b = mm::parse_entries(section.substr(nl + 1), h, parts);
  FUZZ_CHECK(a.lines + b.lines == whole.lines);
  const std::int64_t first_bad = a.bad >= 0 ? a.bad : b.bad >= 0 ? a.lines + b.bad : -1;
  FUZZ_CHECK(first_bad == whole.bad);
  if (whole.bad < 0) {
    FUZZ_CHECK(parts.size() == all.size());
    for (std::size_t k = 0; k < all.size(); ++k) FUZZ_CHECK(same(parts[k], all[k]));
  } else {
    FUZZ_CHECK((a.bad >= 0 ? a.message : b.message) == whole.message);
  }
  return 0;
}
