#pragma once
// The fuzz input of the checkpoint metadata validator (tests/fuzz/checkpoint_metadata_fuzz.cpp)
// and its regression test (tests/test_io.cpp, IoMetadata.FuzzCorpusAndRegressions): a text that
// describes what spmd::io::inspect() reads from a file (spmd::io::RawMetadata), one item a line,
// tokens separated by spaces, \xNN for any byte in a name or a string:
//
//   path <text>
//   root <name> int|real|str|other [@<points>] <values...>     a root attribute
//   dataset <name> dims <extents...>                             a dataset's dataspace
//   dataset <name> type int|real|other <bytes> signed|unsigned le|be
//   attr <dataset> <name> int|real|str|other [@<points>] <values...>
//
// The points of an attribute are its number of values (1 for str) unless @<points> says
// otherwise. The decoder never fails: malformed lines and values are skipped or saturated, so
// every byte string is an input. Then check_validation() runs the validator and traps on anything
// but a valid FileInfo or an spmd::Error with a printable, bounded message.
#include <spmd/io/metadata.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace spmd_fuzz {

inline std::string unescape(const std::string& t) {
  std::string out;
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (t[k] == '\\' && k + 3 < t.size() && t[k + 1] == 'x') {
      const std::string hex = t.substr(k + 2, 2);
      char* end = nullptr;
      const long v = std::strtol(hex.c_str(), &end, 16);
      if (end == hex.c_str() + 2) {
        out += static_cast<char>(v);
        k += 3;
        continue;
      }
    }
    out += t[k];
  }
  return out;
}

inline std::int64_t to_i64(const std::string& t) {
  errno = 0;
  const long long v = std::strtoll(t.c_str(), nullptr, 0);  // saturates at the int64 range
  return static_cast<std::int64_t>(v);
}
inline std::uint64_t to_u64(const std::string& t) {
  if (!t.empty() && t[0] == '-') return 0;
  return static_cast<std::uint64_t>(std::strtoull(t.c_str(), nullptr, 0));
}

/// The attribute of tokens tok[first..]: kind, optional @points, values.
inline spmd::io::RawValue decode_value(const std::vector<std::string>& tok, std::size_t first) {
  using spmd::io::RawValue;
  RawValue v;
  if (first >= tok.size()) return v;
  const std::string& kind = tok[first];
  std::size_t k = first + 1;
  bool explicit_points = false;
  if (k < tok.size() && tok[k].size() > 1 && tok[k][0] == '@') {
    v.points = to_u64(tok[k].substr(1));
    explicit_points = true;
    ++k;
  }
  if (kind == "int") {
    v.kind = RawValue::Kind::integer;
    for (; k < tok.size() && v.ints.size() < 64; ++k) v.ints.push_back(to_i64(tok[k]));
    if (!explicit_points) v.points = v.ints.size();
  } else if (kind == "real") {
    v.kind = RawValue::Kind::real;
    for (; k < tok.size() && v.reals.size() < 64; ++k) v.reals.push_back(std::strtod(tok[k].c_str(), nullptr));
    if (!explicit_points) v.points = v.reals.size();
  } else if (kind == "str") {
    v.kind = RawValue::Kind::string;
    for (; k < tok.size(); ++k) v.text += (v.text.empty() ? "" : " ") + unescape(tok[k]);
    if (!explicit_points) v.points = 1;
  } else {
    v.kind = RawValue::Kind::other;
    if (!explicit_points) v.points = 1;
  }
  return v;
}

inline spmd::io::RawDataset& dataset(spmd::io::RawMetadata& m, const std::string& name) {
  for (auto& d : m.datasets)
    if (d.name == name) return d;
  m.datasets.emplace_back();
  m.datasets.back().name = name;
  return m.datasets.back();
}

/// The RawMetadata an input describes (at most 64 datasets, 32 extents each read).
inline spmd::io::RawMetadata decode(const std::string& input) {
  spmd::io::RawMetadata m;
  std::istringstream lines(input);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string t; ls >> t && tok.size() < 80;) tok.push_back(t);
    if (tok.empty()) continue;
    if (tok[0] == "path" && tok.size() >= 2) {
      m.path = unescape(tok[1]);
    } else if (tok[0] == "root" && tok.size() >= 3) {
      m.attributes[unescape(tok[1])] = decode_value(tok, 2);
    } else if (tok[0] == "dataset" && tok.size() >= 3 && (m.datasets.size() < 64 || tok[2] == "type")) {
      spmd::io::RawDataset& d = dataset(m, unescape(tok[1]));
      if (tok[2] == "dims") {
        d.dims.clear();
        for (std::size_t k = 3; k < tok.size() && d.dims.size() < 40; ++k) d.dims.push_back(to_u64(tok[k]));
      } else if (tok[2] == "type" && tok.size() >= 7) {
        d.type_class = tok[3] == "int"    ? spmd::io::RawDataset::Class::integer
                       : tok[3] == "real" ? spmd::io::RawDataset::Class::real
                                          : spmd::io::RawDataset::Class::other;
        d.type_size = static_cast<std::size_t>(to_u64(tok[4]));
        d.type_signed = tok[5] == "signed";
        d.little_endian = tok[6] == "le";
      }
    } else if (tok[0] == "attr" && tok.size() >= 4 && m.datasets.size() < 64) {
      dataset(m, unescape(tok[1])).attributes[unescape(tok[2])] = decode_value(tok, 3);
    }
  }
  return m;
}

/// Run the validator on `m`: returns true when it accepted the metadata, false when it refused it
/// with an spmd::Error; traps (a crash for the fuzzer, a failure for the test) when an accepted
/// description breaks an invariant the loaders rely on, or a refusal's message is not printable
/// or is unbounded. Any other exception escapes (a crash for the fuzzer).
inline bool check_validation(const spmd::io::RawMetadata& m) {
  spmd::io::FileInfo info;
  try {
    info = spmd::io::validate_metadata(m, "fuzz");
  } catch (const spmd::Error& e) {
    const std::string msg = e.what();
    if (msg.size() > 4096) __builtin_trap();
    for (unsigned char c : msg)
      if (c < 0x20 || c > 0x7e) __builtin_trap();
    return false;
  }
  if (info.format_version < 1 || info.format_version > spmd::io::format_version) __builtin_trap();
  if (!info.run_id.empty() && !spmd::io::impl::valid_run_id(info.run_id)) __builtin_trap();
  for (const auto& d : info.datasets) {
    if (d.shape.empty() || d.shape.size() > 32 || d.name.empty()) __builtin_trap();
    unsigned __int128 bytes = spmd::io::element_size(d.type);
    bool zero = false;
    for (spmd::index_t e : d.shape) {
      if (e < 0) __builtin_trap();
      zero = zero || e == 0;
      if (!zero) bytes *= static_cast<unsigned __int128>(e);
      if (!zero && bytes > static_cast<unsigned __int128>(std::numeric_limits<std::int64_t>::max())) __builtin_trap();
    }
  }
  return true;
}

}  // namespace spmd_fuzz
