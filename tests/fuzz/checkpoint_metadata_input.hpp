#pragma once
// The fuzz input of the checkpoint metadata validator (tests/fuzz/checkpoint_metadata_fuzz.cpp)
// and its regression test (tests/test_io.cpp, IoMetadata.FuzzCorpusAndRegressions): bytes that
// describe what spmd::io::inspect() reads from a file (spmd::io::RawMetadata), as a sequence of
// records. Binary on purpose: integers are 8 little-endian bytes, so that libFuzzer's comparison
// hints (an extent compared with a shape, a checksum with 2^32) land on them directly.
//
//   record  := op:u8 body            (op mod 5)
//   0 path          str
//   1 root attr     str(name) value
//   2 dataset dims  str(name) n:u8 ((n & 0x7f) mod 40) u64 x n; with n & 0x80 also the
//                   spmd_shape attribute holding the same extents (as int64): consistent files
//                   by construction, so that mutating one extent reaches the checks behind the
//                   shape comparison
//   3 dataset type  str(name) class:u8 (mod 3: integer, real, other) size:u8 flags:u8
//                   (bit 0: signed, bit 1: big-endian)
//   4 dataset attr  str(dataset) str(name) value
//   value   := kind:u8 (mod 4: integer, real, string, other) count:u8
//              [u64 points, when count & 0x80] then (count & 0x3f) i64 or f64 for integers and
//              reals, one str for strings, nothing for other
//   str     := len:u8 bytes
//
// A record cut short by the end of the input takes zeros, so every byte string is an input.
// tests/fuzz/make_checkpoint_metadata_seeds.py writes the seed corpus in this format.
#include <spmd/io/metadata.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace spmd_fuzz {

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  bool done() const { return k_ >= n_; }
  std::uint8_t u8() { return k_ < n_ ? p_[k_++] : 0; }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v |= static_cast<std::uint64_t>(u8()) << (8 * b);
    return v;
  }
  std::string str() {
    const std::size_t len = u8();
    std::string s;
    for (std::size_t b = 0; b < len && !done(); ++b) s += static_cast<char>(u8());
    return s;
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_, k_ = 0;
};

inline spmd::io::RawValue value(Reader& in) {
  using spmd::io::RawValue;
  RawValue v;
  const int kind = in.u8() % 4;
  const std::uint8_t count = in.u8();
  const std::size_t n = count & 0x3f;
  v.kind = kind == 0   ? RawValue::Kind::integer
           : kind == 1 ? RawValue::Kind::real
           : kind == 2 ? RawValue::Kind::string
                       : RawValue::Kind::other;
  v.points = (count & 0x80) ? in.u64() : (kind < 2 ? n : 1);
  if (kind == 0)
    for (std::size_t k = 0; k < n; ++k) v.ints.push_back(static_cast<std::int64_t>(in.u64()));
  if (kind == 1)
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint64_t bits = in.u64();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      v.reals.push_back(d);
    }
  if (kind == 2) v.text = in.str();
  return v;
}

inline spmd::io::RawDataset& dataset(spmd::io::RawMetadata& m, const std::string& name) {
  for (auto& d : m.datasets)
    if (d.name == name) return d;
  m.datasets.emplace_back();
  m.datasets.back().name = name;
  return m.datasets.back();
}

/// The RawMetadata the bytes describe.
inline spmd::io::RawMetadata decode(const std::uint8_t* data, std::size_t size) {
  spmd::io::RawMetadata m;
  Reader in(data, size);
  while (!in.done()) {
    switch (in.u8() % 5) {
      case 0:
        m.path = in.str();
        break;
      case 1: {
        std::string name = in.str();
        m.attributes[name] = value(in);
        break;
      }
      case 2: {
        spmd::io::RawDataset& d = dataset(m, in.str());
        d.dims.clear();
        const std::uint8_t nb = in.u8();
        const int n = (nb & 0x7f) % 40;
        for (int k = 0; k < n; ++k) d.dims.push_back(in.u64());
        if (nb & 0x80) {
          spmd::io::RawValue& shape = d.attributes["spmd_shape"];
          shape = spmd::io::RawValue{};
          shape.kind = spmd::io::RawValue::Kind::integer;
          shape.points = d.dims.size();
          for (std::uint64_t e : d.dims) shape.ints.push_back(static_cast<std::int64_t>(e));
        }
        break;
      }
      case 3: {
        spmd::io::RawDataset& d = dataset(m, in.str());
        const int cls = in.u8() % 3;
        d.type_class = cls == 0   ? spmd::io::RawDataset::Class::integer
                       : cls == 1 ? spmd::io::RawDataset::Class::real
                                  : spmd::io::RawDataset::Class::other;
        d.type_size = in.u8();
        const std::uint8_t flags = in.u8();
        d.type_signed = flags & 1;
        d.little_endian = !(flags & 2);
        break;
      }
      default: {
        spmd::io::RawDataset& d = dataset(m, in.str());
        std::string name = in.str();
        d.attributes[name] = value(in);
        break;
      }
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
    // Elements times the element size fit an int64 (a zero extent anywhere: no bytes at all).
    bool zero = false;
    for (spmd::index_t e : d.shape) {
      if (e < 0) __builtin_trap();
      zero = zero || e == 0;
    }
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    std::uint64_t bytes = spmd::io::element_size(d.type);
    for (std::size_t k = 0; k < d.shape.size() && !zero; ++k) {
      const auto e = static_cast<std::uint64_t>(d.shape[k]);
      if (e > limit / bytes) __builtin_trap();
      bytes *= e;
    }
  }
  return true;
}

}  // namespace spmd_fuzz
