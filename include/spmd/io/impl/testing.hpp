#pragma once
// Test-only hooks of spmd::io (not part of the public API; tests/io_fault_main.cpp uses them).
#include <string>

namespace spmd::testing {

/// Make rank `rank` of every later spmd::io::save raise SIGKILL at `phase` of the save
/// ("before_write", "before_dataset_write" (the first dataset created, not written),
/// "mid_dataset" (the first dataset written) or "before_rename"), for the crash-safety tests; an
/// empty phase switches the fault off. Throws spmd::Error for another phase name. Local.
void io_fault(const std::string& phase, int rank);

/// Make rank `rank` alone of every later spmd::io::save throw an spmd::Error at `phase`
/// ("before_write", "before_dataset_write" or "mid_dataset"), as a failed HDF5 call on one rank
/// would: the save must then fail with that error on every rank, without hanging, and leave the
/// target as it was. An empty phase switches the fault off (io_fault's too). Local.
void io_fault_error(const std::string& phase, int rank);

}  // namespace spmd::testing
