// The integrity record of a checkpoint (include/spmd/io/integrity.hpp): encoding and the checks a
// reader makes before HDF5 opens the file. Pure: no HDF5, MPI or Kokkos (tests/fuzz/ builds this
// file alone with zlib).
#include "spmd/io/integrity.hpp"

#include <zlib.h>

#include <cstdio>
#include <cstring>

#include "spmd/error.hpp"

namespace spmd::io {

namespace {

using spmd::impl::str;

void put32(std::string& s, std::size_t at, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) s[at + b] = static_cast<char>((v >> (8 * b)) & 0xff);
}
void put64(std::string& s, std::size_t at, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) s[at + b] = static_cast<char>((v >> (8 * b)) & 0xff);
}
std::uint32_t get32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (int b = 0; b < 4; ++b) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + b])) << (8 * b);
  return v;
}
std::uint64_t get64(const std::string& s, std::size_t at) {
  std::uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + b])) << (8 * b);
  return v;
}
std::uint32_t crc_of(const std::string& s, std::size_t n) {
  return static_cast<std::uint32_t>(crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(s.data()), n));
}
std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

constexpr std::size_t magic_bytes = 8;

}  // namespace

std::uint32_t integrity_block_size(std::size_t ranges) {
  std::uint32_t b = 512;
  while (b < integrity_record_bytes(ranges) && b < integrity_max_block) b *= 2;
  return b;
}

std::string encode_integrity_record(const IntegrityRecord& r) {
  const std::size_t n = r.ranges.size();
  if (integrity_record_bytes(n) > r.block)
    throw Error(
        str("spmd::io::encode_integrity_record: ", n, " data ranges do not fit a user block of ", r.block, " bytes"));
  std::string s(r.block, '\0');
  std::memcpy(&s[0], integrity_magic(), magic_bytes);
  put32(s, 8, integrity_version);
  put32(s, 12, r.block);
  put64(s, 16, r.file_size);
  put32(s, 24, r.file_crc);
  put32(s, 28, r.metadata_crc);
  put32(s, 32, static_cast<std::uint32_t>(n));
  for (std::size_t k = 0; k < n; ++k) {
    put64(s, 40 + 24 * k, r.ranges[k].offset);
    put64(s, 48 + 24 * k, r.ranges[k].length);
    put32(s, 56 + 24 * k, r.ranges[k].crc);
  }
  const std::size_t body = 40 + 24 * n;
  put32(s, body, crc_of(s, body));
  return s;
}

bool starts_with_hdf5_signature(const std::string& head) {
  return head.size() >= 8 && std::memcmp(head.data(), "\x89HDF\r\n\x1a\n", 8) == 0;
}

std::string decode_integrity_record(const std::string& head, std::uint64_t file_size, IntegrityRecord& out,
                                    std::size_t& need) {
  need = 0;
  const bool whole = head.size() >= file_size;
  if (head.size() < magic_bytes || std::memcmp(head.data(), integrity_magic(), magic_bytes) != 0) {
    if (starts_with_hdf5_signature(head))
      return "is an HDF5 file without an integrity record (written by another program, or by spmdarray before "
             "checkpoint format 2): it is not read, since its HDF5 metadata cannot be checked before HDF5 parses it";
    if (head.size() < magic_bytes && whole)
      return str("is not an HDF5 file (", file_size, " bytes, no integrity record, no HDF5 signature)");
    return "is not an HDF5 file (no integrity record, no HDF5 signature): it is not an spmdarray checkpoint, or "
           "its first bytes are damaged";
  }
  if (head.size() < 44) {
    if (!whole) {
      need = 512;
      return "needs more of the file";
    }
    return str("is truncated: ", file_size, " bytes, too few for its integrity record");
  }
  const std::uint32_t version = get32(head, 8), block = get32(head, 12);
  const std::uint64_t size = get64(head, 16);
  const std::uint32_t n = get32(head, 32);
  const std::string damaged = "is damaged: its integrity record ";
  // The fields needed to find the record's end, checked before they are used.
  if (block < 512 || block > integrity_max_block || (block & (block - 1)) != 0)
    return str(damaged, "gives a user block of ", block, " bytes (a power of two from 512 to ", integrity_max_block,
               " expected)");
  if (integrity_record_bytes(n) > block)
    return str(damaged, "lists ", n, " data ranges, more than its ", block, "-byte user block holds");
  if (head.size() < block) {
    if (!whole && file_size >= block) {
      need = block;
      return "needs more of the file";
    }
    return str("is truncated: ", file_size, " bytes, fewer than its ", block, "-byte integrity record");
  }
  const std::size_t body = 40 + 24 * static_cast<std::size_t>(n);
  const std::uint32_t stored = get32(head, body), actual = crc_of(head, body);
  if (stored != actual)
    return str(damaged, "has the checksum ", hex32(actual), ", not the ", hex32(stored), " it records");
  // The record is as written; now the file against it.
  if (version != integrity_version)
    return str("has an integrity record of version ", version, "; this spmdarray reads version ", integrity_version,
               " (use a newer spmdarray)");
  for (std::size_t k = body + 4; k < block; ++k)
    if (head[k] != '\0') return str("is damaged: its user block is not zero after the integrity record (byte ", k, ")");
  if (get32(head, 36) != 0) return str(damaged, "has a nonzero reserved field");
  if (size != file_size)
    return str(size > file_size ? "is truncated: " : "is damaged: ", "it has ", file_size,
               " bytes; its integrity record says ", size);
  IntegrityRecord r;
  r.block = block;
  r.file_size = size;
  r.file_crc = get32(head, 24);
  r.metadata_crc = get32(head, 28);
  std::uint64_t at = block;
  for (std::uint32_t k = 0; k < n; ++k) {
    DataRange d;
    d.offset = get64(head, 40 + 24 * k);
    d.length = get64(head, 48 + 24 * k);
    d.crc = get32(head, 56 + 24 * k);
    if (get32(head, 60 + 24 * k) != 0) return str(damaged, "has a nonzero reserved field in data range ", k);
    if (d.offset < at || d.length == 0 || d.length > size || d.offset > size - d.length)
      return str(damaged, "lists data range ", k, " as [", d.offset, ", +", d.length,
                 "), not in order inside the file's ", size, " bytes");
    at = d.offset + d.length;
    r.ranges.push_back(d);
  }
  out = std::move(r);
  return {};
}

std::string reseal_integrity_record(std::string b) {
  // The old record as written (its magic and its own checksum intact), whatever the file is now.
  if (b.size() < 44 || std::memcmp(b.data(), integrity_magic(), magic_bytes) != 0) return b;
  IntegrityRecord r;
  r.block = get32(b, 12);
  const std::uint32_t n = get32(b, 32);
  if (r.block < 512 || r.block > integrity_max_block || (r.block & (r.block - 1)) != 0 ||
      integrity_record_bytes(n) > r.block || b.size() < r.block)
    return b;
  const std::size_t body = 40 + 24 * static_cast<std::size_t>(n);
  if (get32(b, body) != crc_of(b, body)) return b;
  for (std::uint32_t k = 0; k < n; ++k) {
    DataRange d{get64(b, 40 + 24 * k), get64(b, 48 + 24 * k), 0};
    if (d.length > 0 && d.offset >= r.block && d.offset <= b.size() && d.length <= b.size() - d.offset) {
      d.crc = static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(b.data() + d.offset), d.length));
      r.ranges.push_back(d);
    }
  }
  r.file_size = b.size();
  uLong meta = crc32(0L, Z_NULL, 0);
  for (const auto& [at, len] : metadata_spans(r))
    meta = crc32_z(meta, reinterpret_cast<const Bytef*>(b.data() + at), len);
  r.metadata_crc = static_cast<std::uint32_t>(meta);
  r.file_crc =
      static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(b.data() + r.block), b.size() - r.block));
  const std::string block = encode_integrity_record(r);
  b.replace(0, block.size(), block);
  return b;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> metadata_spans(const IntegrityRecord& r) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  std::uint64_t at = r.block;
  for (const DataRange& d : r.ranges) {
    if (d.offset > at) spans.emplace_back(at, d.offset - at);
    at = d.offset + d.length;
  }
  if (r.file_size > at) spans.emplace_back(at, r.file_size - at);
  return spans;
}

}  // namespace spmd::io
