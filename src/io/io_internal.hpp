#pragma once
// Internal declarations shared by the src/io/*.cpp files (not installed).
#include <cstdint>
#include <string>
#include <vector>

#include "spmd/io/checkpoint.hpp"

namespace spmd::io::impl {

using spmd::impl::shape_str;
using spmd::impl::str;

/// CRC-32 of n zero bytes (O(log n) combinations, no pass over memory). Local.
std::uint32_t crc32_of_zeros(std::uint64_t n);

/// Write the XDMF sidecar for the 2-D/3-D datasets of `h5_path` to `xmf_path` atomically (temp +
/// rename). Returns false when there is nothing to describe (no file written). Local (rank 0).
bool write_xdmf(const std::string& xmf_path, const std::string& h5_path, const std::vector<DatasetInfo>& datasets,
                const Attributes& attributes);

/// The sidecar name of a checkpoint: "<path without .h5>.xmf". Local.
std::string xdmf_path(const std::string& h5_path);

/// Atomically replace `path` by `contents` (temp file beside it, fsync, rename). Throws spmd::Error. Local.
void write_file_atomically(const std::string& path, const std::string& contents, const char* fn);

}  // namespace spmd::io::impl
