#pragma once
/// \file io/integrity.hpp
/// The integrity record of a checkpoint file: a whole-file checksum that is checked before HDF5
/// parses a single byte of the file (docs/checkpointing.md, "The integrity record").
///
/// spmd::io::save reserves an HDF5 user block at the start of the file (512 bytes, more when a
/// file holds many datasets; HDF5 ignores it and finds its superblock right after it) and, once
/// the file is complete, writes this record there:
///
///   offset  size  field
///   0       8     magic "\x89SPMDCK\n"
///   8       4     record version (1)
///   12      4     user block size B (a power of two, 512 to 1 MiB)
///   16      8     file size in bytes
///   24      4     CRC-32 of the bytes [B, file size): the whole file after the record
///   28      4     CRC-32 of those bytes outside the data ranges (the HDF5 metadata), in order
///   32      4     number n of data ranges (at most 43689)
///   36      4     zero
///   40      24 n  per dataset with storage, in file order: offset (u64), length (u64), the
///                 CRC-32 of its bytes (u32: the dataset's spmd_checksum_crc32), zero (u32)
///   40+24n  4     CRC-32 of the bytes [0, 40 + 24 n)
///   then zeros up to B.
/// All integers little-endian; CRC-32 is zlib's (Python's zlib.crc32).
///
/// Readers (inspect, load, verify, CheckpointSeries) refuse a file, before HDF5 opens it, unless
/// the record is intact, the file has its recorded size, the data ranges lie in order inside
/// it, the user block's tail is zero and the metadata bytes have their checksum: HDF5 then
/// parses only bytes this library's HDF5 wrote. The data ranges are checked against the
/// datasets' own checksums when data is read (load, verify). The record detects damage, not a
/// deliberately forged file (anyone can recompute a CRC).
///
/// Pure functions (no I/O, no MPI, no HDF5): tests/fuzz/ fuzzes them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spmd::io {

/// One dataset's raw data in a checkpoint file.
struct DataRange {
  std::uint64_t offset = 0;  ///< first byte in the file
  std::uint64_t length = 0;  ///< bytes (elements times element size)
  std::uint32_t crc = 0;     ///< CRC-32 of those bytes: the dataset's checksum
};

/// A checkpoint file's integrity record (see the file comment).
struct IntegrityRecord {
  std::uint32_t block = 512;       ///< user block size: the record's room, where HDF5's file starts
  std::uint64_t file_size = 0;     ///< the file's size in bytes
  std::uint32_t file_crc = 0;      ///< CRC-32 of bytes [block, file_size)
  std::uint32_t metadata_crc = 0;  ///< CRC-32 of the bytes of [block, file_size) outside `ranges`
  std::vector<DataRange> ranges;   ///< the datasets' raw data, ascending by offset
};

/// The record's fixed start: "\x89SPMDCK\n". Local.
inline const char* integrity_magic() {
  return "\x89SPMDCK\n";
}
/// Version of the record this library writes and reads.
inline constexpr std::uint32_t integrity_version = 1;
/// Bytes of a record of `ranges` data ranges (without the zero tail). Local.
constexpr std::size_t integrity_record_bytes(std::size_t ranges) {
  return 44 + 24 * ranges;
}
/// The smallest user block for `ranges` data ranges: a power of two, at least 512. Local.
std::uint32_t integrity_block_size(std::size_t ranges);
/// Largest user block a reader accepts (1 MiB).
inline constexpr std::uint32_t integrity_max_block = 1u << 20;

/// The user block holding record `r` (r.block bytes). Local.
std::string encode_integrity_record(const IntegrityRecord& r);

/// Decode and check the record at the start of a file of `file_size` bytes: `head` holds the
/// file's first bytes (at least 512 or the whole file; the whole user block when it is larger,
/// else the reason asks for them). Returns "" and fills `out` when the record is intact, its
/// fields are consistent (a power-of-two block, data ranges in order inside [block, file size),
/// a zero tail) and `file_size` is the recorded size; else why not, in words meant to follow
/// "'<file>' ": "is not an spmdarray checkpoint ...", "is truncated: ...", "is damaged: ...".
/// Sets `need` to the bytes of head it wants when `head` is too short (the reason is then
/// non-empty). Local.
std::string decode_integrity_record(const std::string& head, std::uint64_t file_size, IntegrityRecord& out,
                                    std::size_t& need);

/// The byte ranges of [r.block, r.file_size) outside r.ranges, in order: what metadata_crc
/// covers. Local.
std::vector<std::pair<std::uint64_t, std::uint64_t>> metadata_spans(const IntegrityRecord& r);

/// The whole file `bytes` with its integrity record written again for what it holds now: the
/// data ranges of its old record that are still inside it, every CRC recomputed from the bytes.
/// For a file changed on purpose (a test, a tool that edits attributes): a changed file is
/// otherwise refused as damaged. Returns `bytes` unchanged when its old record is not intact.
/// Local.
std::string reseal_integrity_record(std::string bytes);

/// True when `head` starts with HDF5's signature (at offset 0). Local.
bool starts_with_hdf5_signature(const std::string& head);

}  // namespace spmd::io
