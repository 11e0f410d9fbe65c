// The text side of the Matrix Market reader (see matrix_market_parse.hpp): pure functions on
// byte buffers, shared by the collective reader and the fuzzing harness.
#include "matrix_market_parse.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace spmd::sparse::mm {
namespace {

constexpr const char* banner_form = "'%%MatrixMarket matrix coordinate <field> <symmetry>'";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/// Splits `line` at white space into at most `cap` fields; returns how many fields it has (which
/// may exceed cap: the ones past it are counted, not stored).
std::size_t split(std::string_view line, std::string_view* out, std::size_t cap) {
  std::size_t n = 0, i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t b = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > b) {
      if (n < cap) out[n] = line.substr(b, i - b);
      ++n;
    }
  }
  return n;
}

/// True for a line with nothing but white space, or a comment.
bool skipped(std::string_view line) {
  for (char c : line)
    if (!is_space(c)) return c == '%';
  return true;
}

/// Case-insensitive comparison with a lower-case ASCII word.
bool is(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (c != lower[i]) return false;
  }
  return true;
}

/// A decimal integer with an optional sign that fits int64_t.
bool parse_int(std::string_view s, std::int64_t& out) {
  std::size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) i = 1;
  if (i == s.size()) return false;
  // Accumulate negatively: the range of int64_t is one larger on that side.
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  std::int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const int d = s[i] - '0';
    if (v < (lo + d) / 10) return false;
    v = v * 10 - d;
  }
  if (!neg && v == lo) return false;
  out = neg ? v : -v;
  return true;
}

enum class Real { ok, syntax, infinite };

/// A real number in strtod's syntax (C locale). A value too small to represent is kept as the
/// nearest subnormal or zero; infinities, NaNs and values too large for a double are refused.
Real parse_real(std::string_view s, double& out) {
  const std::string z(s);  // strtod needs the terminating NUL
  char* end = nullptr;
  const double v = std::strtod(z.c_str(), &end);
  if (z.empty() || end != z.c_str() + z.size()) return Real::syntax;
  if (!std::isfinite(v)) return Real::infinite;
  out = v;
  return Real::ok;
}

/// Calls f(line) for each line of text, without its line end (and a '\r' before it); stops when
/// f returns false. A final line end does not start another line.
template <class F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t e = text.find('\n', i);
    if (e == std::string_view::npos) e = text.size();
    std::size_t end = e;
    if (end > i && text[end - 1] == '\r') --end;
    if (!f(text.substr(i, end - i))) return;
    i = e + 1;
  }
}

}  // namespace

std::string excerpt(std::string_view s, std::size_t max) {
  static const char hex[] = "0123456789abcdef";
  const std::size_t n = s.size() < max ? s.size() : max;
  std::string out;
  out.reserve(n + 16);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\')
      out += "\\\\";
    else if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\n')
      out += "\\n";
    else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

Status parse_header(std::string_view text, bool at_eof, Header& h, std::int64_t& line, std::string& message) {
  const auto fail = [&](std::int64_t at, std::string m) {
    line = at;
    message = std::move(m);
    return Status::error;
  };
  // ---- line 1: the banner
  if (text.empty())
    return at_eof ? fail(1, std::string("the file is empty (expected the banner ") + banner_form + ")") : Status::more;
  std::size_t e = text.find('\n');
  if (e == std::string_view::npos && !at_eof && text.size() <= max_banner_bytes) return Status::more;
  std::string_view first = text.substr(0, e);
  if (first.size() > max_banner_bytes)
    return fail(1, std::string("expected the banner ") + banner_form + ", found a line of more than " +
                       std::to_string(max_banner_bytes) + " bytes starting '" + excerpt(first.substr(0, 48)) + "...'");
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  std::string_view b[5];
  if (split(first, b, 5) != 5 || !is(b[0], "%%matrixmarket"))
    return fail(1, std::string("expected the banner ") + banner_form + ", found '" + excerpt(first) + "'");
  if (!is(b[1], "matrix")) return fail(1, "unsupported object '" + excerpt(b[1], 32) + "' (only matrix)");
  if (!is(b[2], "coordinate"))
    return fail(1, "unsupported format '" + excerpt(b[2], 32) + "' (only coordinate; array is not read)");
  if (is(b[3], "real") || is(b[3], "double"))
    h.field = Field::real;
  else if (is(b[3], "integer"))
    h.field = Field::integer;
  else if (is(b[3], "pattern"))
    h.field = Field::pattern;
  else
    return fail(1, "unsupported field '" + excerpt(b[3], 32) + "' (real, integer or pattern)");
  if (is(b[4], "general") || is(b[4], "symmetric"))
    h.symmetric = is(b[4], "symmetric");
  else
    return fail(1, "unsupported symmetry '" + excerpt(b[4], 32) + "' (general or symmetric)");

  // ---- comments and blank lines, then the size line
  std::size_t pos = e == std::string_view::npos ? text.size() : e + 1;
  std::int64_t lineno = 1;
  for (;;) {
    if (pos >= text.size()) {
      if (!at_eof) return Status::more;
      return fail(lineno + 1, "the size line 'rows columns entries' is missing (the file ends before it)");
    }
    e = text.find('\n', pos);
    if (e == std::string_view::npos && !at_eof) return Status::more;
    std::string_view l = text.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos);
    pos = e == std::string_view::npos ? text.size() : e + 1;
    ++lineno;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (skipped(l)) continue;
    std::string_view s[3];
    if (split(l, s, 3) != 3 || !parse_int(s[0], h.rows) || !parse_int(s[1], h.cols) || !parse_int(s[2], h.entries) ||
        h.rows < 0 || h.cols < 0 || h.entries < 0)
      return fail(lineno, "expected the size line 'rows columns entries' (three non-negative integers), found '" +
                              excerpt(l) + "'");
    if (h.symmetric && h.rows != h.cols)
      return fail(lineno, "a symmetric matrix must be square, the size line says " + std::to_string(h.rows) + " x " +
                              std::to_string(h.cols));
    h.data_offset = static_cast<std::int64_t>(pos);
    h.data_line = lineno + 1;
    return Status::ok;
  }
}

EntryLines parse_entries(std::string_view text, const Header& h, std::vector<Entry>& out) {
  EntryLines r;
  const std::size_t want = h.field == Field::pattern ? 2 : 3;
  const char* layout = h.field == Field::pattern ? "'row column'" : "'row column value'";
  for_each_line(text, [&](std::string_view line) {
    ++r.lines;
    if (r.bad >= 0 || skipped(line)) return true;
    std::string_view f[3];
    Entry e{0, 0, 1.0};
    std::int64_t iv = 0;
    Real real = Real::ok;
    std::string& bad = r.message;
    if (split(line, f, 3) != want)
      bad = std::string("expected an entry ") + layout + ", found '" + excerpt(line) + "'";
    else if (!parse_int(f[0], e.row))
      bad = "row index '" + excerpt(f[0], 32) + "' is not an integer";
    else if (!parse_int(f[1], e.col))
      bad = "column index '" + excerpt(f[1], 32) + "' is not an integer";
    else if (e.row < 1 || e.row > h.rows)
      bad = "row index " + std::to_string(e.row) + " is outside 1.." + std::to_string(h.rows);
    else if (e.col < 1 || e.col > h.cols)
      bad = "column index " + std::to_string(e.col) + " is outside 1.." + std::to_string(h.cols);
    else if (h.field == Field::real && (real = parse_real(f[2], e.val)) != Real::ok)
      bad = "value '" + excerpt(f[2], 32) + (real == Real::syntax ? "' is not a real number" : "' is not finite");
    else if (h.field == Field::integer && !parse_int(f[2], iv))
      bad = "value '" + excerpt(f[2], 32) + "' is not an integer";
    if (!bad.empty()) {
      r.bad = r.lines - 1;
      return true;  // go on counting lines
    }
    if (h.field == Field::integer) e.val = static_cast<double>(iv);
    --e.row;
    --e.col;
    out.push_back(e);
    return true;
  });
  return r;
}

std::int64_t entry_line(std::string_view text, std::int64_t k) {
  std::int64_t line = 0, seen = 0, at = -1;
  for_each_line(text, [&](std::string_view l) {
    ++line;
    if (skipped(l)) return true;
    if (seen++ == k) {
      at = line - 1;
      return false;
    }
    return true;
  });
  return at;
}

}  // namespace spmd::sparse::mm
