#pragma once
// Internal declarations shared by the src/io/*.cpp files (not installed).
#include <cstdint>
#include <string>
#include <vector>

#include "spmd/io/checkpoint.hpp"
#include "spmd/io/integrity.hpp"
#include "spmd/io/output_path.hpp"

namespace spmd::io::impl {

using spmd::impl::shape_str;
using spmd::impl::str;

/// CRC-32 of n zero bytes (O(log n) combinations, no pass over memory). Local.
std::uint32_t crc32_of_zeros(std::uint64_t n);

/// The XDMF sidecar text for the 2-D/3-D datasets of `h5_path`; empty when there is nothing to
/// describe. Local.
std::string xdmf_text(const std::string& h5_path, const std::vector<DatasetInfo>& datasets,
                      const Attributes& attributes);

/// The sidecar name of a checkpoint: "<path without .h5>.xmf". Local.
std::string xdmf_path(const std::string& h5_path);

/// Write `contents` to a hidden temporary beside `path` and fsync it; returns the temporary's
/// name (removed again on failure). Throws spmd::Error. Local.
std::string write_temporary(const std::string& path, const std::string& contents, const char* fn);

/// Why save(path) refuses `path` (output_path_problem of it and, with `sidecar`, of its .xmf),
/// or "". Local.
std::string save_path_problem(const std::string& path, bool sidecar);

/// Rename the temporary `tmp` over `path` (removing it on failure). Throws spmd::Error. Local.
void commit_temporary(const std::string& tmp, const std::string& path, const char* fn);

}  // namespace spmd::io::impl
