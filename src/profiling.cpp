// The built-in recorder behind --spmd-log-view, and the bridge from impl::Region to Kokkos Tools
// (see include/spmd/impl/profiling.hpp).
#include "spmd/impl/profiling.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <climits>
#include <cstdio>
#include <map>
#include <type_traits>
#include <unordered_map>

#include "spmd/error.hpp"

namespace spmd::impl::profiling {

bool recording = false;

namespace {

using clock = std::chrono::steady_clock;

struct Entry {
  const char* name;
  long long count = 0;
  double seconds = 0;
  double bytes = 0;
  long long messages = 0;
  long long collectives = 0;
  double collective_bytes = 0;
};

struct Open {
  std::size_t entry;
  clock::time_point start;
};

/// Entries keyed by the name's address (region names are string literals); local_stats merges
/// entries whose names are equal strings at different addresses.
struct Recorder {
  std::vector<Entry> entries;
  std::unordered_map<const char*, std::size_t> index;
  std::unordered_map<std::string, std::size_t> by_text;  // names that are not string literals
  std::deque<std::string> texts;                         // their storage (Entry::name points here)
  std::vector<Open> stack;
  clock::time_point since = clock::now();
};

Recorder& recorder() {
  static Recorder r;
  return r;
}

double seconds_between(clock::time_point a, clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

bool tools_loaded() noexcept {
  return Kokkos::Profiling::profileLibraryLoaded();
}

void push(const char* name, bool tool, bool record) noexcept {
  try {
    if (tool) Kokkos::Profiling::pushRegion(name);
    if (record) {
      Recorder& r = recorder();
      auto it = r.index.find(name);
      if (it == r.index.end()) {
        it = r.index.emplace(name, r.entries.size()).first;
        r.entries.push_back(Entry{name});
      }
      r.stack.push_back(Open{it->second, clock::now()});
    }
  } catch (...) {  // out of memory while profiling: lose the record, not the run
  }
}

void push_text(const char* name) noexcept {
  try {
    Recorder& r = recorder();
    std::string key(name);
    auto it = r.by_text.find(key);
    if (it == r.by_text.end()) {
      r.texts.push_back(key);
      it = r.by_text.emplace(std::move(key), r.entries.size()).first;
      r.entries.push_back(Entry{r.texts.back().c_str()});
    }
    r.stack.push_back(Open{it->second, clock::now()});
  } catch (...) {
  }
}

void pop(bool tool, bool record) noexcept {
  try {
    if (record) {
      Recorder& r = recorder();
      if (!r.stack.empty()) {
        const Open o = r.stack.back();
        r.stack.pop_back();
        Entry& e = r.entries[o.entry];
        ++e.count;
        e.seconds += seconds_between(o.start, clock::now());
      }
    }
    if (tool) Kokkos::Profiling::popRegion();
  } catch (...) {
  }
}

void count_messages_slow(std::size_t bytes, std::size_t messages) noexcept {
  Recorder& r = recorder();
  for (const Open& o : r.stack) {
    r.entries[o.entry].bytes += static_cast<double>(bytes);
    r.entries[o.entry].messages += static_cast<long long>(messages);
  }
}

void count_collective_slow(std::size_t bytes) noexcept {
  Recorder& r = recorder();
  for (const Open& o : r.stack) {
    r.entries[o.entry].collectives += 1;
    r.entries[o.entry].collective_bytes += static_cast<double>(bytes);
  }
}

void set_recording(bool on) {
  if (on && !recording) recorder().since = clock::now();
  recording = on;
}

void reset() {
  Recorder& r = recorder();
  r.entries.clear();
  r.index.clear();
  r.by_text.clear();
  r.texts.clear();
  r.stack.clear();
  r.since = clock::now();
}

double elapsed() {
  return seconds_between(recorder().since, clock::now());
}

std::vector<RegionStats> local_stats() {
  std::map<std::string, RegionStats> by_name;
  for (const Entry& e : recorder().entries) {
    RegionStats& s = by_name[e.name];
    s.name = e.name;
    s.count += e.count;
    s.seconds += e.seconds;
    s.bytes += e.bytes;
    s.messages += e.messages;
    s.collectives += e.collectives;
    s.collective_bytes += e.collective_bytes;
  }
  std::vector<RegionStats> out;
  for (auto& kv : by_name) out.push_back(std::move(kv.second));
  return out;
}

std::vector<SummaryRow> gather(MPI_Comm comm) {
  const bool was = recording;
  recording = false;  // the gather's own collectives are not part of the profile
  const std::vector<RegionStats> mine = local_stats();
  const char* fn = "spmd::impl::profiling::gather";

  // The union of the names, '\n'-separated, on every rank.
  std::string names;
  for (const auto& s : mine) names += s.name + "\n";
  int size = 0;
  SPMD_MPI_CHECK(MPI_Comm_size(comm, &size), fn);
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  int mine_len = static_cast<int>(names.size());
  SPMD_MPI_CHECK(MPI_Allgather(&mine_len, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm), fn);
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += lengths[static_cast<std::size_t>(r)];
  }
  if (total > INT_MAX) throw Error::replicated(str(fn, ": region names too long to gather"));
  std::string all(static_cast<std::size_t>(total), '\0');
  SPMD_MPI_CHECK(
      MPI_Allgatherv(names.data(), mine_len, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm), fn);
  std::map<std::string, std::size_t> order;
  for (std::size_t a = 0; a < all.size();) {
    const std::size_t b = all.find('\n', a);
    order.emplace(all.substr(a, b - a), 0);
    a = b + 1;
  }
  std::vector<std::string> union_names;
  for (auto& kv : order) {
    kv.second = union_names.size();
    union_names.push_back(kv.first);
  }

  // Per name: this rank's figures (0 for a name it never saw), then combined.
  const std::size_t n = union_names.size();
  std::vector<long long> counts(n, 0), colls(n, 0), msgs(n, 0);
  std::vector<double> secs(n, 0.0), bytes(n, 0.0), cbytes(n, 0.0);
  for (const auto& s : mine) {
    const std::size_t i = order.at(s.name);
    counts[i] = s.count;
    colls[i] = s.collectives;
    msgs[i] = s.messages;
    secs[i] = s.seconds;
    bytes[i] = s.bytes;
    cbytes[i] = s.collective_bytes;
  }
  const int ni = static_cast<int>(n);
  auto reduce = [&](const auto& in, MPI_Datatype type, MPI_Op op) {
    std::decay_t<decltype(in)> out(in.size());
    if (ni > 0) SPMD_MPI_CHECK(MPI_Allreduce(in.data(), out.data(), ni, type, op, comm), fn);
    return out;
  };
  const auto cmin = reduce(counts, MPI_LONG_LONG, MPI_MIN), cmax = reduce(counts, MPI_LONG_LONG, MPI_MAX),
             csum = reduce(counts, MPI_LONG_LONG, MPI_SUM), msum = reduce(msgs, MPI_LONG_LONG, MPI_SUM),
             kmax = reduce(colls, MPI_LONG_LONG, MPI_MAX);
  const auto smin = reduce(secs, MPI_DOUBLE, MPI_MIN), smax = reduce(secs, MPI_DOUBLE, MPI_MAX),
             ssum = reduce(secs, MPI_DOUBLE, MPI_SUM), bsum = reduce(bytes, MPI_DOUBLE, MPI_SUM),
             kbsum = reduce(cbytes, MPI_DOUBLE, MPI_SUM);
  std::vector<SummaryRow> rows(n);
  for (std::size_t i = 0; i < n; ++i) {
    rows[i] = SummaryRow{union_names[i], cmin[i], cmax[i], csum[i], smin[i], smax[i],
                         ssum[i],        bsum[i], msum[i], kmax[i], kbsum[i]};
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const SummaryRow& a, const SummaryRow& b) { return a.seconds_max > b.seconds_max; });
  recording = was;
  return rows;
}

std::string format(const std::vector<SummaryRow>& rows, int ranks, double elapsed_min, double elapsed_max) {
  std::string out;
  char line[512];
  auto add = [&](const char* f, auto... args) {
    if constexpr (sizeof...(args) == 0) {
      out += f;  // no arguments: not a format
    } else {
      std::snprintf(line, sizeof line, f, args...);
      out += line;
    }
  };
  add("---------------------------------------------- spmd log view "
      "----------------------------------------------\n");
  add("%d rank%s, %.4g s (max over ranks; min %.4g s) from --spmd-log-view's start to the summary\n", ranks,
      ranks == 1 ? "" : "s", elapsed_max, elapsed_min);
  add("Regions are inclusive (a nested region also counts in the regions around it). Time: host wall-clock\n"
      "seconds per rank, without fences (asynchronous GPU work counts where it is waited for). count: calls per\n"
      "rank (max; * when ranks differ); mean: time per call, averaged over the ranks' calls; %T: max time over\n"
      "the run's; msgs, bytes: point-to-point messages and bytes sent, summed over ranks; coll: collective\n"
      "calls per rank (max); coll bytes: their payload, summed over ranks.\n\n");
  add("%-38s %9s %10s %10s %6s %10s %5s %9s %10s %7s %10s\n", "region", "count", "max (s)", "min (s)", "ratio",
      "mean (s)", "%T", "msgs", "bytes", "coll", "coll bytes");
  for (const auto& r : rows) {
    const double ratio = r.seconds_min > 0 ? r.seconds_max / r.seconds_min : 0.0;
    const double mean = r.count_sum > 0 ? r.seconds_sum / static_cast<double>(r.count_sum) : 0.0;
    const double pct = elapsed_max > 0 ? 100.0 * r.seconds_max / elapsed_max : 0.0;
    std::string name = r.name.size() > 38 ? r.name.substr(0, 35) + "..." : r.name;
    add("%-38s %8lld%s %10.3e %10.3e %6.2f %10.3e %5.1f %9lld %10s %7lld %10s\n", name.c_str(), r.count_max,
        r.count_min == r.count_max ? " " : "*", r.seconds_max, r.seconds_min, ratio, mean, pct, r.messages_sum,
        bytes_str(r.bytes_sum).c_str(), r.collectives_max, bytes_str(r.collective_bytes_sum).c_str());
  }
  add("------------------------------------------------------------------------------------------------------"
      "------\n");
  return out;
}

}  // namespace spmd::impl::profiling
