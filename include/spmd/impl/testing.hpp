#pragma once
// Test-only hooks: switches that make a CPU build take the code paths a GPU build takes, so that
// the CPU test suite covers them. Not part of the public API (the umbrella header does not
// include this file; only tests and benchmarks do). Local, and not thread-safe: set them between
// operations, on every rank alike.

#include "spmd/types.hpp"

namespace spmd::testing {

struct Knobs {
  /// Kernel layer: one work item per point (the device form) instead of row chunks on host spaces.
  bool point_items = false;
  /// Expressions: evaluate an aliased in-place update through the buffered form (the device
  /// form) instead of the lagged one on host spaces.
  bool buffered_alias = false;
  /// Expressions, lagged form: a fixed number of bands (0: one per thread), so band edges are
  /// exercised with one thread.
  index_t bands = 0;
  /// Communication engine: box copies as one flat launch over all segments (the device form)
  /// instead of one strided loop per segment on host spaces.
  bool flat_copies = false;
  /// Kernel layer, device form: boxes of at least this many points (> 0) take several points per
  /// work item (0: the library's threshold, impl::BoxItems::multi_min), so small test arrays
  /// cover that form too.
  index_t multi_points = 0;
  /// Kernel layer, device form: rows at least this long (> 0) take the column form in a box of
  /// several points per item (0: the library's threshold, impl::BoxItems::column_min), so small
  /// test arrays cover it too; a huge value keeps every box on the strided form.
  index_t column_min = 0;
  /// Expressions, device form of an aliased in-place update: the buffered form (evaluate into a
  /// temporary, copy back) even where the one-pass tiled form applies.
  bool untiled_alias = false;
};

/// The process-wide switches (all off by default). Local.
inline Knobs& knobs() {
  static Knobs k;
  return k;
}

/// Counts of things the library made, for tests that check a cache is used (a plan built once
/// and reused). Local, not thread-safe.
struct Counters {
  /// Broadcast plans built (impl::BroadcastPlan: one per broadcast operand of an expression
  /// shape, destination and operand slice; repeated evaluations reuse it).
  long broadcast_plans = 0;
  /// Points of broadcast operands this rank's plans bring per evaluation (the sizes of the
  /// parts it reads, summed over the plans built).
  long broadcast_points = 0;
};

/// The process-wide counters. Local.
inline Counters& counters() {
  static Counters c;
  return c;
}

/// Restores the default switches when it goes out of scope (use in tests: RAII).
struct KnobsGuard {
  Knobs saved = knobs();
  ~KnobsGuard() { knobs() = saved; }
};

}  // namespace spmd::testing
