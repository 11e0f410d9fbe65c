#pragma once
// Test-only interface: switches that make a CPU build take the kernel forms a GPU build takes,
// so that the CPU test suite covers them, and counters of plans built. Not part of the public
// API, and included by no library header (the umbrella header does not include it; only tests
// and benchmarks do). The library reads the forms through impl::forms<MemorySpace>()
// (impl/forms.hpp). Local, and not thread-safe: set the switches between operations, on every
// rank alike.

#include "spmd/impl/forms.hpp"
#include "spmd/impl/profiling.hpp"

namespace spmd::testing {

/// The switches (impl::FormSwitches: all off by default, the library's own forms).
using Knobs = impl::FormSwitches;

/// The process-wide switches. Local.
inline Knobs& knobs() {
  return impl::form_switches();
}

/// Counts of things the library made (impl::PlanCounts). Local, not thread-safe.
using Counters = impl::PlanCounts;

/// The process-wide counters. Local.
inline Counters& counters() {
  return impl::plan_counts();
}

/// Restores the default switches when it goes out of scope (use in tests: RAII).
struct KnobsGuard {
  Knobs saved = knobs();
  ~KnobsGuard() { knobs() = saved; }
};

}  // namespace spmd::testing
