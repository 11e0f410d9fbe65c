#pragma once
// Profiling regions: one RAII type, impl::Region, opens a named region around a library operation
// (a collective, a halo exchange's begin or end, an SpMV phase, a solver iteration, a
// redistribution, a gather, a checkpoint...). Names are `spmd::<module>::<op>` string literals.
//
// A region feeds two consumers, each only when it is on:
//   - Kokkos Tools (Kokkos::Profiling::pushRegion/popRegion) when a tool library is loaded
//     (KOKKOS_PROFILE_LIBRARY / --kokkos-tools-library): the space-time stack shows the regions
//     around the kernels;
//   - the built-in recorder behind `--spmd-log-view` / SPMD_LOG_VIEW=1 (src/profiling.cpp): per
//     region the number of calls, the inclusive host wall-clock time, and what the communication
//     engine and the collectives moved while the region was open (messages and bytes sent,
//     collective calls and their bytes). Runtime prints the summary, gathered over its
//     communicator, from rank 0 when it is destroyed.
// When neither is on, a region costs a load of one flag and one call that asks Kokkos whether a
// tool is loaded.
//
// Regions are opened and closed by the host thread that calls MPI (the library is
// MPI_THREAD_FUNNELED); nested regions count in every region that encloses them. Times are host
// times without fences: an asynchronous kernel (on a GPU) is counted in the region that waits for
// it, as with Kokkos Tools' region timers.

#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace spmd::impl::profiling {

/// True while the built-in recorder records (set by Runtime for --spmd-log-view). Local.
extern bool recording;

/// True when a Kokkos Tools library is loaded. Local.
bool tools_loaded() noexcept;
/// Open / close a region (called by Region). Local.
void push(const char* name, bool tool, bool record) noexcept;
/// Open a recorder-only region named by the text of `name` (a user's kernel name). Local.
void push_text(const char* name) noexcept;
void pop(bool tool, bool record) noexcept;
/// Count `messages` point-to-point messages of `bytes` bytes in all, sent by this rank, in every
/// open region (the communication engine calls it once per exchange). Local.
void count_messages_slow(std::size_t bytes, std::size_t messages) noexcept;
inline void count_messages(std::size_t bytes, std::size_t messages) noexcept {
  if (recording) count_messages_slow(bytes, messages);
}
/// Count one collective call contributing `bytes` bytes from this rank in every open region. Local.
void count_collective_slow(std::size_t bytes) noexcept;
inline void count_collective(std::size_t bytes) noexcept {
  if (recording) count_collective_slow(bytes);
}

/// Switch the built-in recorder on or off; on also (re)starts its clock. Local.
void set_recording(bool on);
/// Forget everything recorded so far. Local.
void reset();

/// One region's totals on one rank (regions of the same name merged). Local.
struct RegionStats {
  std::string name;
  long long count = 0;
  double seconds = 0;
  double bytes = 0;  ///< sent by point-to-point messages
  long long messages = 0;
  long long collectives = 0;
  double collective_bytes = 0;
};
/// This rank's regions, by name. Local.
std::vector<RegionStats> local_stats();
/// Seconds since recording was switched on. Local.
double elapsed();

/// One region over all ranks of a communicator.
struct SummaryRow {
  std::string name;
  long long count_min = 0, count_max = 0, count_sum = 0;
  double seconds_min = 0, seconds_max = 0, seconds_sum = 0;
  double bytes_sum = 0;
  long long messages_sum = 0, collectives_max = 0;
  double collective_bytes_sum = 0;
};
/// Every region any rank of `comm` recorded, combined over the ranks (a rank that never opened a
/// region counts 0 for it), ordered by the largest total time first; the same on every rank.
/// Recording is paused meanwhile. Collective over `comm`.
std::vector<SummaryRow> gather(MPI_Comm comm);
/// The log-view table of `rows` (from gather) for `ranks` ranks whose recording lasted between
/// `elapsed_min` and `elapsed_max` seconds. Local.
std::string format(const std::vector<SummaryRow>& rows, int ranks, double elapsed_min, double elapsed_max);

}  // namespace spmd::impl::profiling

namespace spmd::impl {

/// Counts of plans the library made, for tests that check a cache is used (a plan built once and
/// reused; spmd::testing::counters() reads them). Local, not thread-safe.
struct PlanCounts {
  /// Broadcast plans built (impl::BroadcastPlan: one per broadcast operand of an expression
  /// shape, destination and operand slice; repeated evaluations reuse it).
  long broadcast_plans = 0;
  /// Points of broadcast operands this rank's plans bring per evaluation (the sizes of the
  /// parts it reads, summed over the plans built).
  long broadcast_points = 0;
};
/// The process-wide plan counts. Local.
inline PlanCounts& plan_counts() {
  static PlanCounts c;
  return c;
}

/// Tag of Region's constructor for a kernel's own name (see Region).
struct KernelName {};

/// A profiling region named `name` (a string literal `spmd::<module>::<op>`) from construction
/// to destruction. Local.
///
/// Region(name, KernelName{}) times one kernel launch (an assignment, a for_each, a transform)
/// under the kernel's name, any string (a user's spmd::label): for the built-in recorder only,
/// since Kokkos Tools sees the kernel itself. Its cost when recording: a hash of the name.
class Region {
 public:
  explicit Region(const char* name) noexcept : record_(profiling::recording), tool_(profiling::tools_loaded()) {
    if (record_ || tool_) profiling::push(name, tool_, record_);
  }
  Region(const char* name, KernelName) noexcept : record_(profiling::recording), tool_(false) {
    if (record_) profiling::push_text(name);
  }
  ~Region() {
    if (record_ || tool_) profiling::pop(tool_, record_);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  bool record_, tool_;
};

}  // namespace spmd::impl
