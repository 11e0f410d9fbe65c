// The pure validation of a checkpoint's metadata (include/spmd/io/metadata.hpp). No HDF5, MPI or
// Kokkos here: tests/fuzz/checkpoint_metadata_fuzz.cpp builds this file alone.
#include "spmd/io/metadata.hpp"

#include <cstdio>
#include <limits>
#include <set>

namespace spmd::io {

const char* element_type_name(ElementType t) {
  switch (t) {
    case ElementType::int32:
      return "int32";
    case ElementType::int64:
      return "int64";
    case ElementType::uint32:
      return "uint32";
    case ElementType::uint64:
      return "uint64";
    case ElementType::float32:
      return "float32";
    case ElementType::float64:
      return "float64";
    case ElementType::complex64:
      return "complex64";
    case ElementType::complex128:
      return "complex128";
  }
  return "?";
}

bool parse_element_type(const std::string& s, ElementType& t) {
  for (ElementType c : {ElementType::int32, ElementType::int64, ElementType::uint32, ElementType::uint64,
                        ElementType::float32, ElementType::float64, ElementType::complex64, ElementType::complex128})
    if (s == element_type_name(c)) {
      t = c;
      return true;
    }
  return false;
}

std::size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::int32:
    case ElementType::uint32:
    case ElementType::float32:
      return 4;
    case ElementType::int64:
    case ElementType::uint64:
    case ElementType::float64:
    case ElementType::complex64:
      return 8;
    case ElementType::complex128:
      return 16;
  }
  return 0;
}

const DatasetInfo* FileInfo::find(const std::string& name) const {
  for (const auto& d : datasets)
    if (d.name == name) return &d;
  return nullptr;
}

namespace {

using impl::printable;
using spmd::impl::str;

const char* kind_name(RawValue::Kind k) {
  switch (k) {
    case RawValue::Kind::integer:
      return "an integer";
    case RawValue::Kind::real:
      return "a real number";
    case RawValue::Kind::string:
      return "a string";
    case RawValue::Kind::other:
      break;
  }
  return "of another HDF5 class";
}

std::string describe(const RawValue& v) {
  if (v.points != 1) return str(kind_name(v.kind), " array of ", v.points, " elements");
  return kind_name(v.kind);
}

/// A scalar integer, real or string attribute as an AttributeValue; false for anything else.
bool scalar_value(const RawValue& v, AttributeValue& out) {
  if (v.points != 1) return false;
  if (v.kind == RawValue::Kind::integer && v.ints.size() == 1) {
    out = v.ints[0];
    return true;
  }
  if (v.kind == RawValue::Kind::real && v.reals.size() == 1) {
    out = v.reals[0];
    return true;
  }
  if (v.kind == RawValue::Kind::string) {
    out = v.text;
    return true;
  }
  return false;
}

std::string dims_str(const std::vector<std::uint64_t>& d) {
  std::string s = "{";
  for (std::size_t k = 0; k < d.size(); ++k) s += str(k ? ", " : "", d[k]);
  return s + "}";
}

}  // namespace

FileInfo validate_metadata(const RawMetadata& raw, const char* fn) {
  const std::string file = printable(raw.path, 200);
  FileInfo info;
  info.path = raw.path;

  // ---- root attributes ----------------------------------------------------------------------------
  const auto ver = raw.attributes.find("spmd_format_version");
  if (ver == raw.attributes.end())
    throw Error(str(fn, ": '", file, "' is an HDF5 file but not an spmdarray checkpoint (no spmd_format_version)"));
  if (ver->second.kind != RawValue::Kind::integer || ver->second.points != 1 || ver->second.ints.size() != 1)
    throw Error(str(fn, ": '", file, "': spmd_format_version is ", describe(ver->second), ", not an integer"));
  info.format_version = ver->second.ints[0];
  if (info.format_version < 1)
    throw Error(str(fn, ": '", file, "' has checkpoint format version ", info.format_version,
                    "; valid versions start at 1 (the file is corrupt)"));
  if (info.format_version > format_version)
    throw Error(str(fn, ": '", file, "' has checkpoint format version ", info.format_version,
                    ", newer than the version ", format_version, " this spmdarray reads; use a newer spmdarray"));
  const auto lib = raw.attributes.find("spmd_library_version");
  if (lib != raw.attributes.end() && lib->second.kind == RawValue::Kind::string && lib->second.points == 1)
    info.library_version = lib->second.text;
  const auto run = raw.attributes.find("spmd_run_id");
  if (run != raw.attributes.end()) {
    if (run->second.kind != RawValue::Kind::string || run->second.points != 1 || !impl::valid_run_id(run->second.text))
      throw Error(str(fn, ": '", file, "': spmd_run_id is not a run id (32 hexadecimal digits): ",
                      run->second.kind == RawValue::Kind::string ? "'" + printable(run->second.text) + "'"
                                                                 : describe(run->second)));
    info.run_id = run->second.text;
  }
  for (const auto& [k, v] : raw.attributes) {
    if (k.compare(0, 5, "spmd_") == 0) continue;
    AttributeValue value;
    if (scalar_value(v, value)) info.attributes[k] = value;
  }

  // ---- datasets ---------------------------------------------------------------------------------------
  std::set<std::string> seen;
  for (const RawDataset& d : raw.datasets) {
    const std::string name = printable(d.name);
    const std::string where = str(fn, ": dataset '", name, "' of '", file, "'");
    if (d.name.empty() || !seen.insert(d.name).second) throw Error(str(where, ": the name is empty or given twice"));
    DatasetInfo out;
    out.name = d.name;
    const auto et = d.attributes.find("spmd_element_type");
    if (et == d.attributes.end() || et->second.kind != RawValue::Kind::string || et->second.points != 1 ||
        !parse_element_type(et->second.text, out.type))
      throw Error(str(where, " lacks a valid spmd_element_type attribute",
                      et != d.attributes.end() && et->second.kind == RawValue::Kind::string
                          ? " ('" + printable(et->second.text) + "')"
                          : std::string()));
    // The stored type must be the element type: little-endian, of its size, class and sign.
    const bool is_complex = out.type == ElementType::complex64 || out.type == ElementType::complex128;
    const bool is_int = !is_complex && out.type != ElementType::float32 && out.type != ElementType::float64;
    const bool is_signed = out.type == ElementType::int32 || out.type == ElementType::int64;
    const bool type_ok = d.type_size == element_size(out.type) && d.little_endian &&
                         (is_complex ? d.type_class == RawDataset::Class::complex
                          : is_int   ? d.type_class == RawDataset::Class::integer && d.type_signed == is_signed
                                     : d.type_class == RawDataset::Class::real);
    if (!type_ok)
      throw Error(str(where, " says its elements are ", element_type_name(out.type), " but they are stored as ",
                      d.type_size, "-byte ", d.little_endian ? "little" : "big", "-endian ",
                      d.type_class == RawDataset::Class::integer
                          ? (d.type_signed ? "signed integers" : "unsigned integers")
                      : d.type_class == RawDataset::Class::real    ? "floating-point numbers"
                      : d.type_class == RawDataset::Class::complex ? "complex numbers"
                                                                   : "values of another class"));
    if (d.dims.empty() || d.dims.size() > 32)
      throw Error(str(where, " has ", d.dims.size(), " axes (1 to 32 expected)"));
    // Elements and bytes must fit an index_t: a corrupt extent must not become an allocation.
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<index_t>::max());
    bool zero = false, too_big = false;
    for (std::uint64_t e : d.dims) {
      zero = zero || e == 0;
      too_big = too_big || e > limit;
    }
    std::uint64_t bytes = element_size(out.type);
    for (std::size_t k = 0; k < d.dims.size() && !zero && !too_big; ++k) {
      if (d.dims[k] > limit / bytes)
        too_big = true;
      else
        bytes *= d.dims[k];
    }
    if (too_big)
      throw Error(str(where, " has the extents ", dims_str(d.dims), ": more than 2^63 bytes (the file is corrupt)"));
    for (std::uint64_t e : d.dims) out.shape.push_back(static_cast<index_t>(e));
    const auto sh = d.attributes.find("spmd_shape");
    if (sh == d.attributes.end() || sh->second.kind != RawValue::Kind::integer)
      throw Error(str(where, " lacks its spmd_shape attribute"));
    if (sh->second.ints != out.shape || sh->second.points != out.shape.size()) {
      std::string stored = "{";
      for (std::size_t k = 0; k < sh->second.ints.size(); ++k) stored += str(k ? ", " : "", sh->second.ints[k]);
      throw Error(str(where, ": spmd_shape ", stored, "} differs from the dataspace ", dims_str(d.dims),
                      " (the file is corrupt)"));
    }
    const auto ck = d.attributes.find("spmd_checksum_crc32");
    if (ck == d.attributes.end() || ck->second.kind != RawValue::Kind::integer || ck->second.points != 1 ||
        ck->second.ints.size() != 1)
      throw Error(str(where, " lacks its spmd_checksum_crc32 attribute"));
    const std::int64_t crc = ck->second.ints[0];
    if (crc < 0 || crc > std::int64_t(0xffffffff))
      throw Error(str(where, ": spmd_checksum_crc32 ", crc, " is not a CRC-32 (0 to 4294967295)"));
    out.checksum = static_cast<std::uint32_t>(crc);
    info.datasets.push_back(std::move(out));
  }
  return info;
}

}  // namespace spmd::io
