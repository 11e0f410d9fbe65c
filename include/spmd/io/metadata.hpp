#pragma once
/// \file io/metadata.hpp
/// A checkpoint's metadata: what spmd::io::inspect() returns (FileInfo), what it reads from the
/// file before judging it (RawMetadata), and the pure function between the two
/// (validate_metadata). Kept apart from checkpoint.hpp so that the validator builds without
/// Kokkos or HDF5 (tests/fuzz/ fuzzes it).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "spmd/error.hpp"

namespace spmd {
using index_t = std::int64_t;  // as in comm.hpp
}

namespace spmd::io {

/// Version of the file layout this library writes; files of a newer version are refused. Version 2
/// added the integrity record (spmd/io/integrity.hpp); files without one are not read.
inline constexpr std::int64_t format_version = 2;

/// A user attribute value: an integer (step), a real number (time) or a string.
using AttributeValue = std::variant<std::int64_t, double, std::string>;
/// User attributes of a checkpoint, by name (names starting with "spmd_" are reserved).
using Attributes = std::map<std::string, AttributeValue>;

/// Element types a checkpoint can hold. complex64 and complex128 (Kokkos::complex<float>,
/// Kokkos::complex<double>) are stored as an HDF5 compound {r, i} of two little-endian floats,
/// the layout h5py reads as NumPy's complex64 / complex128.
enum class ElementType { int32, int64, uint32, uint64, float32, float64, complex64, complex128 };

/// "float64", "int32", ...: the name stored in the file (and NumPy's dtype name). Local.
const char* element_type_name(ElementType t);
/// The ElementType called `name` ("float64", ...); false for any other string. Local.
bool parse_element_type(const std::string& name, ElementType& t);
/// Bytes per element. Local.
std::size_t element_size(ElementType t);

/// What a checkpoint file holds, as read by inspect().
struct DatasetInfo {
  std::string name;                         ///< the dataset's name
  ElementType type = ElementType::float64;  ///< its element type
  std::vector<index_t> shape;               ///< its global shape
  std::uint32_t checksum = 0;               ///< CRC-32 of the little-endian row-major bytes
};
/// A checkpoint file's metadata, as read by inspect().
struct FileInfo {
  std::string path;                   ///< the file
  std::int64_t format_version = 0;    ///< the checkpoint format's version
  std::string library_version;        ///< the spmdarray version that wrote it
  std::string run_id;                 ///< the run it belongs to (CheckpointSeries), "" when none
  std::vector<DatasetInfo> datasets;  ///< its datasets, in file order
  Attributes attributes;              ///< the user's attributes
  /// The dataset called `name`, or nullptr. Local.
  const DatasetInfo* find(const std::string& name) const;
};

/// An attribute as HDF5 reports it, before any judgement: its class, the number of elements of
/// its dataspace and, for the classes the library writes, its values.
struct RawValue {
  /// The attribute's HDF5 class.
  enum class Kind { integer, real, string, other };
  Kind kind = Kind::other;         ///< its class
  std::uint64_t points = 0;        ///< elements in the attribute's dataspace (1 for a scalar)
  std::vector<std::int64_t> ints;  ///< integer attributes (all elements, when few)
  std::vector<double> reals;       ///< real attributes (all elements, when few)
  std::string text;                ///< string attributes (scalar)
};
/// Attributes by name, as HDF5 reports them.
using RawAttributes = std::map<std::string, RawValue>;

/// A dataset as HDF5 reports it: dataspace extents and the stored (file) datatype.
struct RawDataset {
  std::string name;                 ///< the dataset's name
  std::vector<std::uint64_t> dims;  ///< the dataspace's extents
  /// The stored datatype's HDF5 class (complex: a compound of exactly two floats of one size
  /// named r and i, at offsets 0 and half the size, as h5py writes complex numbers).
  enum class Class { integer, real, complex, other };
  Class type_class = Class::other;  ///< its class
  std::size_t type_size = 0;        ///< bytes per element
  bool type_signed = false;         ///< integers: signed
  bool little_endian = true;        ///< byte order
  std::uint64_t data_offset = 0;    ///< where its raw data starts in the file (0: no storage)
  std::uint64_t data_bytes = 0;     ///< bytes of raw data stored (0: no storage)
  RawAttributes attributes;         ///< the dataset's attributes
};

/// Everything inspect() reads from a file before validating it.
struct RawMetadata {
  std::string path;                  ///< the file
  RawAttributes attributes;          ///< of the root group, reserved "spmd_" ones included
  std::vector<RawDataset> datasets;  ///< every dataset of the root group
};

/// Judge the metadata of a file as read (a pure function: no I/O, no MPI) and describe it.
/// Throws spmd::Error (local) whose message starts with `fn`, names the file and the offending
/// attribute or dataset, and quotes the file's strings only as printable excerpts, when:
/// spmd_format_version is missing, not an integer, below 1 or above format_version; spmd_run_id
/// is present but not 32 hexadecimal digits; a dataset's spmd_element_type is missing or unknown,
/// its stored type is not that element type (little-endian, of that size and sign), its
/// dataspace has no axes, more than 32, or more than 2^63 bytes, its spmd_shape is missing or
/// differs from the dataspace, or its spmd_checksum_crc32 is missing or outside [0, 2^32).
/// Attributes of other kinds or shapes than a scalar integer, real or string are ignored (as
/// other tools may add them). Local.
FileInfo validate_metadata(const RawMetadata& raw, const char* fn);

namespace impl {
/// `s` as a printable excerpt for a message: control and non-ASCII bytes as \xNN, at most
/// `max` characters (256 by default), then "... (N bytes)". Local.
inline std::string printable(const std::string& s, std::size_t max = 256) {
  std::string out;
  std::size_t shown = 0;
  for (; shown < s.size() && out.size() < max; ++shown) {
    const auto c = static_cast<unsigned char>(s[shown]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (shown < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}
/// True for the run ids CheckpointSeries writes: 32 lower-case hexadecimal digits. Local.
inline bool valid_run_id(const std::string& id) {
  if (id.size() != 32) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
}  // namespace impl

}  // namespace spmd::io
