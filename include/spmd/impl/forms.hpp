#pragma once
// The kernel-forms policy: which form of a kernel runs for data in a memory space. Host spaces
// take the host forms (row chunks per work item, one strided loop per box-copy segment, the
// lagged in-place update); devices take the device forms (one work item per point, or several
// past the thresholds; one flat launch for all box-copy segments; an aliased in-place update
// evaluated into a buffer and copied back). impl::forms<MemorySpace>() is the one place library
// code learns them. Tests and benchmarks change them only through the test-only interface of
// impl/testing.hpp (spmd::testing::knobs()), which no library header includes: a CPU build then
// takes the device forms, so the CPU suite covers them, and the one-pass tiled in-place form
// (measured slower than the buffered one on H100 and H200, issue 23) stays reachable.

#include "spmd/impl/ndrange.hpp"
#include "spmd/types.hpp"

namespace spmd::impl {

/// The forms of the kernels for one memory space (see the file comment).
struct Forms {
  /// Kernel layer: one work item per point (several past multi_points), not row chunks.
  bool point_items = false;
  /// Communication engine: box copies as one flat launch over all segments, not one strided
  /// loop per segment.
  bool flat_copies = false;
  /// An aliased in-place update (the destination read at other positions): the device forms
  /// (tiled or buffered), not the lagged host form.
  bool device_alias = false;
  /// Device form of an aliased in-place update: the one-pass tiled form (TiledAssign) where it
  /// applies (a 2-D box, reaches of at most 4 rows and 32 columns), not the buffered one.
  bool tiled_alias = false;
  /// Lagged and tiled host forms: this many bands (0: one per thread, and 3 for tiles).
  index_t bands = 0;
  /// Device kernel form: boxes of at least this many points take several points per work item
  /// (0: the library's threshold, BoxItems::multi_min).
  index_t multi_points = 0;
  /// Device kernel form: rows at least this long take the column form (0: the library's
  /// threshold, BoxItems::column_min).
  index_t column_min = 0;
};

/// Departures from each space's default forms, for tests and benchmarks only: set through
/// spmd::testing::knobs() (impl/testing.hpp), all off by default. Not thread-safe: set between
/// operations, on every rank alike.
struct FormSwitches {
  /// Host spaces: the device kernel form (one work item per point).
  bool point_items = false;
  /// Host spaces: the device forms of an aliased in-place update instead of the lagged one.
  bool buffered_alias = false;
  /// Host spaces: the device box-copy form (one flat launch).
  bool flat_copies = false;
  /// Every space: the one-pass tiled form of an aliased in-place update where it applies, instead
  /// of the buffered form (the default since issue 23 measured the buffered one faster).
  bool tiled_alias = false;
  /// See Forms.
  index_t bands = 0;
  index_t multi_points = 0;
  index_t column_min = 0;
};

/// The process-wide switches (test-only: see FormSwitches). Local.
inline FormSwitches& form_switches() {
  static FormSwitches s;
  return s;
}

/// The forms for data in MemorySpace: that space's defaults (see the file comment), with the
/// test-only switches applied. Local.
template <class MemorySpace>
Forms forms() {
  constexpr bool device = !host_accessible<MemorySpace>();
  const FormSwitches& s = form_switches();
  Forms f;
  f.point_items = device || s.point_items;
  f.flat_copies = device || s.flat_copies;
  f.device_alias = device || s.buffered_alias;
  f.tiled_alias = s.tiled_alias;
  f.bands = s.bands;
  f.multi_points = s.multi_points;
  f.column_min = s.column_min;
  return f;
}

}  // namespace spmd::impl
