#pragma once
// Test-only hooks of spmd::io (not part of the public API; tests/io_fault_main.cpp uses them).
#include <string>

namespace spmd::testing {

/// Make rank `rank` of every later spmd::io::save raise SIGKILL at `phase` of the save
/// ("before_write", "mid_dataset" or "before_rename"), for the crash-safety tests; an empty phase
/// switches the fault off. Throws spmd::Error for another phase name. Local.
void io_fault(const std::string& phase, int rank);

}  // namespace spmd::testing
