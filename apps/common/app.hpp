#pragma once
/// \file apps/common/app.hpp
/// What every app shares on the command line and at its exit (docs/apps.md):
///
///   int main(int argc, char** argv) {
///     spmd::apps::App app("heat", "2-D explicit heat equation", argc, argv);  // before Runtime
///     spmd::Runtime rt(app.argc(), app.argv());
///     spmd::Comm comm = rt.world();
///     app.add_monitor(100, "steps");
///     app.cli().add_option("--n", n, "...")->check(spmd::apps::in_range(1, 1 << 20));
///     return app.run(comm, [&] { ...; return spmd::apps::exit_ok; });
///   }
///
/// - --help / -h and --version are taken out of argv before Kokkos sees them (Kokkos prints its
///   own help for --help, on every rank); rank 0 alone prints the help (with the defaults) or
///   the version. --kokkos-* options still go to Kokkos (spmd::Runtime removes them from argv).
/// - Parsing is agreed: every rank parses its own argv, then one MPI_Allreduce compares the
///   verdicts and a hash of the command lines, so a rank whose argv differs or fails to parse
///   gives one error on rank 0 and exit status 64 everywhere, never a hang.
/// - The values of Kokkos' own options (--kokkos-num-threads=N, ...) are checked before Kokkos sees
///   them, and --spmd-* options spmd::Runtime does not know before it does (options.hpp:
///   screen_kokkos_arguments, screen_runtime_arguments): either is a usage error (64).
/// - Option values are checked by the validators of options.hpp (one per kind of value).
/// - An spmd::Error raised on every rank (collective()) is printed once and gives exit status 1;
///   an error raised on one rank alone reaches Runtime's terminate handler (MPI_Abort, status 1).
#include <CLI/CLI.hpp>
#include <spmd.hpp>

#include <spmd/io/metadata.hpp>
#include <spmd/io/output_path.hpp>

#include "options.hpp"
#include "spmd_apps_version.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace spmd::apps {

/// Exit status of every app (docs/apps.md#exit-status).
enum Exit : int {
  exit_ok = 0,             //!< ran to the end; every check passed (a solver converged)
  exit_error = 1,          //!< an error: bad input file, restart mismatch, I/O failure, too little memory
  exit_not_converged = 2,  //!< an iterative solver stopped without converging
  exit_check_failed = 3,   //!< the run finished but a check failed (non-finite values, --check-error)
  exit_usage = 64,         //!< bad command-line arguments (sysexits' EX_USAGE)
};

/// printf into a std::string. Local.
__attribute__((format(printf, 1, 2))) inline std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

/// A byte count as "8796093022208 bytes (8 TiB)". Local.
inline std::string bytes_str(double bytes) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = bytes;
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.0f bytes (%.3g %s)", bytes, v, unit[u]);
  return buf;
}

/// A duration as "12.3 s", "4 min 05 s" or "2 h 07 min". Local.
inline std::string duration_str(double s) {
  char buf[48];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%d min %02d s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%d h %02d min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  return buf;
}

/// The library version, the git revision of the source tree at build time and Kokkos' version.
inline std::string version_line(const std::string& app) {
  return app + " " + SPMD_VERSION_STRING + " (spmdarray " + SPMD_VERSION_STRING + ", git " + SPMD_APPS_GIT_REVISION +
         ", Kokkos " + std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
         std::to_string(KOKKOS_VERSION % 100) + ", " + spmd::Runtime::backend() + ")";
}

/// An app's command line, its common options and its exit. See the file comment.
class App {
 public:
  /// Takes --help, -h and --version out of argv (Kokkos would print its help on every rank) and,
  /// with them or --quiet, asks Kokkos not to print its warnings. Local (before spmd::Runtime).
  App(std::string name, const std::string& description, int argc, char** argv)
      : name_(std::move(name)), cli_(description, name_) {
    args_.push_back(argv[0]);
    bool quiet_kokkos = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        help_ = true;
      } else if (std::strcmp(argv[i], "--version") == 0) {
        version_ = true;
      } else {
        quiet_kokkos = quiet_kokkos || std::strcmp(argv[i], "--quiet") == 0;
        args_.push_back(argv[i]);
      }
    }
    {  // Kokkos' own options with malformed values never reach Kokkos (parse() reports them)
      std::vector<char*> rest(args_.begin() + 1, args_.end());
      screen_problem_ = screen_kokkos_arguments(rest);
      const std::string runtime = screen_runtime_arguments(rest);
      if (!runtime.empty()) screen_problem_ += (screen_problem_.empty() ? "" : "; ") + runtime;
      args_.resize(1);
      args_.insert(args_.end(), rest.begin(), rest.end());
    }
    if (help_ || version_ || quiet_kokkos) args_.push_back(disable_warnings_);
    argc_ = static_cast<int>(args_.size());
    args_.push_back(nullptr);
    argv_ = args_.data();

    cli_.option_defaults()->always_capture_default();
    cli_.set_version_flag("--version", std::string(), "print the version (library, git revision, Kokkos) and exit");
    cli_.add_flag("--quiet", quiet_, "print nothing but errors (no banner, no progress lines, no summary)");
    cli_.add_option("--json", json_, "write the results to this JSON file (rank 0; schema: docs/apps.md)")
        ->check(non_empty());
    cli_.add_flag("--resources", resources_,
                  "add the memory (RSS, peak RSS), open files and live communicators to the progress lines and the "
                  "JSON (max over ranks; a collective at each progress line)");
    cli_.footer(
        "Kokkos options (--kokkos-threads=N, ...) are passed to Kokkos. --spmd-log-view (or SPMD_LOG_VIEW=1)\n"
        "prints a profile of the library's regions at the end (docs/profiling.md).\n"
        "Exit status: 0 success; 1 error (input, restart mismatch, I/O, memory); 2 a solver did not converge;\n"
        "3 a check failed (non-finite results, --check-error); 64 bad arguments. See docs/apps.md.");
  }
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  /// For spmd::Runtime(app.argc(), app.argv()). Local.
  int& argc() { return argc_; }
  char**& argv() { return argv_; }
  CLI::App& cli() { return cli_; }
  const CLI::App& cli() const { return cli_; }
  const std::string& name() const { return name_; }
  bool quiet() const { return quiet_; }
  bool resources() const { return resources_; }
  const std::string& json_path() const { return json_; }
  int monitor() const { return monitor_; }

  /// Register --monitor K (progress every K `unit`, 0: none) with this app's default, and the
  /// option's old name if it had one. Local.
  void add_monitor(int default_every, const std::string& unit, const std::string& old_name = {}) {
    monitor_ = default_every;
    cli_.add_option("--monitor", monitor_, "print a progress line every K " + unit + " (0: none)")
        ->check(in_range(0, INT_MAX));
    if (!old_name.empty()) add_alias(old_name, "--monitor", monitor_);
  }

  /// True after parse() when the option `name` (e.g. "--n"), or an old name of it, was given on
  /// the command line. Local.
  bool given(const std::string& name) const {
    const CLI::Option* o = cli_.get_option_no_throw(name);
    if (o && o->count() > 0) return true;
    for (const auto& [old_name, new_name] : aliases_)
      if (new_name == name && cli_.get_option_no_throw(old_name)->count() > 0) return true;
    return false;
  }

  /// Keep accepting an option's old name (hidden from --help, with a warning): `old_name` sets
  /// `var` as `new_name` does. Local.
  /// The old name takes the new one's validators (add the new option first). Local.
  template <class T>
  void add_alias(const std::string& old_name, const std::string& new_name, T& var) {
    CLI::Option* alias = cli_.add_option(old_name, var, "old name of " + new_name)->group("");
    // CLI11 gives a hidden option's validation error an empty name (": value -1 is ..."): the
    // alias's validators name it themselves, and parse() drops the empty name.
    if (CLI::Option* o = cli_.get_option_no_throw(new_name))
      for (int i = 0;; ++i) {
        const CLI::Validator* v = nullptr;
        try {
          v = o->get_validator(i);
        } catch (const CLI::OptionNotFound&) {
          break;
        }
        alias->check(CLI::Validator(
            [check = *v, old_name](std::string& s) {
              const std::string why = check(s);
              return why.empty() ? why : old_name + ": " + why;
            },
            v->get_description(), v->get_name()));
      }
    aliases_.emplace_back(old_name, new_name);
  }

  /// Parse argv on every rank and agree on the verdict (one MPI_Allreduce when all agree).
  /// Returns -1 to go on, else the exit status, already the same on every rank (0 after --help
  /// or --version, printed by rank 0; 64 after a usage error, printed once by rank 0).
  /// Collective.
  int parse(const Comm& comm) {
    for (auto* opt : cli_.get_options()) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    enum Verdict : std::int64_t { go = 0, help = 1, version = 2, bad = 3 };
    std::int64_t verdict = help_ ? help : version_ ? version : go;
    std::string message;
    if (verdict == go && !screen_problem_.empty()) {
      verdict = bad;
      message = screen_problem_;
    } else if (verdict == go) {
      try {
        cli_.parse(argc_, argv_);
      } catch (const CLI::CallForHelp&) {
        verdict = help;
      } catch (const CLI::CallForVersion&) {
        verdict = version;
      } catch (const CLI::ParseError& e) {
        verdict = bad;
        message = e.what();
        if (message.rfind(": ", 0) == 0) message.erase(0, 2);  // a hidden option's (an alias's) empty name
      }
    }
    // The command line's hash (after Runtime took its options out), 62 bits.
    std::uint64_t h = 1469598103934665603ull;
    for (int i = 1; i < argc_; ++i) {
      for (const char* c = argv_[i]; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
      h = (h ^ 0xffu) * 1099511628211ull;
    }
    const auto hash = static_cast<std::int64_t>(h >> 2);
    std::int64_t agree[4] = {verdict, -verdict, hash, -hash};
    comm.allreduce(agree, 4, Op::max);
    const bool same_verdict = agree[0] == -agree[1], same_line = agree[2] == -agree[3];
    if (same_verdict && same_line && verdict == go && comm.rank() == 0)
      for (const auto& [old_name, new_name] : aliases_)
        if (cli_.get_option_no_throw(old_name)->count() > 0)
          std::fprintf(stderr, "%s: warning: %s is an old name of %s; use %s\n", name_.c_str(), old_name.c_str(),
                       new_name.c_str(), new_name.c_str());
    if (same_verdict && same_line && verdict != bad) {
      if (verdict == help && comm.rank() == 0) std::printf("%s", cli_.help().c_str());
      if (verdict == version && comm.rank() == 0) std::printf("%s\n", version_line(name_).c_str());
      if (verdict != go) std::fflush(stdout);
      return verdict == go ? -1 : exit_ok;
    }
    // A usage error, or ranks that disagree: one message, from the lowest rank that has one.
    bool ok = verdict != bad;
    if (!same_line) {
      const std::int64_t root_hash = comm.bcast(hash, 0);
      if (ok && hash != root_hash) {
        ok = false;
        message = "rank " + std::to_string(comm.rank()) +
                  " was given another command line than rank 0 (every rank must get the same arguments)";
      }
    } else if (!same_verdict && ok && agree[0] != bad) {
      // (Where another rank found a usage error, that rank reports it: a rank-local option such as
      // one rank's --spmd-bogus, which the screen took out before the hash. Else this cannot
      // happen with one command line; be safe.)
      ok = false;
      message = "the ranks parsed the same command line differently";
    }
    try {
      comm.check(ok, message);
    } catch (const Error& e) {
      if (comm.rank() == 0) {
        std::fprintf(stderr, "%s: %s\nRun with --help for more information.\n", name_.c_str(), e.what());
        std::fflush(stderr);
      }
    }
    return exit_usage;
  }

  /// Why the option `flag` (e.g. "--alpha") refuses the value `value`, by the option's own
  /// validators (the command line's), or "" when it takes it; for values read from elsewhere (a
  /// checkpoint's record). Local.
  std::string check_value(const std::string& flag, std::string value) {
    CLI::Option* o = cli_.get_option_no_throw(flag);
    if (!o) return "there is no option " + flag;
    for (int i = 0;; ++i) {
      CLI::Validator* v = nullptr;
      try {
        v = o->get_validator(i);
      } catch (const CLI::OptionNotFound&) {
        return {};
      }
      if (std::string why = (*v)(value); !why.empty()) return why;
    }
  }

  /// Refuse, on every rank alike, outputs that cannot be written: for each (option, path) with a
  /// path, io::output_path_problem (rank 0 looks). Throws a collective spmd::Error naming the
  /// option and the path. Collective.
  static void check_outputs(const Comm& comm, const std::vector<std::pair<std::string, std::string>>& outputs) {
    std::string why;
    if (comm.rank() == 0)
      for (const auto& [option, path] : outputs) {
        if (path.empty() || !why.empty()) continue;
        if (std::string p = io::output_path_problem(path, io::impl::printable(path, 200)); !p.empty())
          why = option + ": " + p;
      }
    // Rank 0 alone looked: its text on every rank (the same line at every rank count).
    int n = comm.bcast(static_cast<int>(why.size()), 0);
    if (n == 0) return;
    why.resize(static_cast<std::size_t>(n));
    comm.bcast(why.data(), n, 0);
    throw Error::replicated(why);
  }

  /// parse(), then `body()` (which returns an exit status); an spmd::Error raised on every rank
  /// is printed once by rank 0 and gives exit_error. The --json file's path is checked before
  /// body() runs (check_outputs). Collective.
  template <class Body>
  int run(const Comm& comm, Body&& body) {
    if (const int code = parse(comm); code >= 0) return code;
    try {
      check_outputs(comm, {{"--json", json_}});
      return body();
    } catch (const Error& e) {
      if (!e.collective()) throw;  // one rank alone: Runtime's terminate handler aborts the job
      if (comm.rank() == 0) {
        std::fprintf(stderr, "%s: error: %s\n", name_.c_str(), e.what());
        std::fflush(stderr);
      }
      return exit_error;
    }
  }

  /// Print `line` and a newline on rank 0, unless --quiet. Local.
  void say(const Comm& comm, const std::string& line) const {
    if (quiet_ || comm.rank() != 0) return;
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  std::string name_;
  CLI::App cli_;
  std::vector<char*> args_;
  int argc_ = 0;
  char** argv_ = nullptr;
  char disable_warnings_[32] = "--kokkos-disable-warnings";
  bool help_ = false, version_ = false, quiet_ = false, resources_ = false;
  std::string json_, screen_problem_;
  int monitor_ = 0;
  std::vector<std::pair<std::string, std::string>> aliases_;
};

/// Refuse a process grid `grid` given as `flag` (e.g. --grid 2,2) whose ranks are not the job's:
/// the same spmd::Error on every rank, naming the option. Nothing when `grid` is empty. Local
/// (the grid and the rank count are the same everywhere).
inline void check_grid(const Comm& comm, const std::string& flag, const std::vector<int>& grid) {
  if (grid.empty()) return;
  long long ranks = 1;
  std::string text;
  for (int g : grid) {
    ranks *= g;
    text += (text.empty() ? "" : ",") + std::to_string(g);
  }
  if (ranks != comm.size())
    throw Error::replicated(flag + " " + text + " makes a grid of " + std::to_string(ranks) + " ranks; this run has " +
                            std::to_string(comm.size()));
}

/// The values of `keys` (lines "Key:   123 kB" of a /proc file such as /proc/meminfo or
/// /proc/self/status), in bytes, in the order of `keys`; 0 for a key the file lacks or when it
/// cannot be read. Local.
template <std::size_t K>
inline std::array<double, K> proc_bytes(const char* path, const std::array<const char*, K>& keys) {
  std::array<double, K> out{};
  if (std::FILE* f = std::fopen(path, "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t len = std::strlen(keys[k]);
        if (std::strncmp(line, keys[k], len) == 0 && line[len] == ':') out[k] = std::atof(line + len + 1) * 1024.0;
      }
    std::fclose(f);
  }
  return out;
}

/// The memory available for this rank's arrays, in bytes, and where that figure comes from:
/// the GPU's free memory for device memory spaces, else the node's MemAvailable (/proc/meminfo,
/// or the physical memory) shared by the node's ranks. Collective (over the node's ranks).
inline std::pair<double, std::string> memory_per_rank(const Comm& comm) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<DefaultMemorySpace, Kokkos::CudaSpace>) {
    std::size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess)
      return {static_cast<double>(free_bytes), "free memory of this rank's GPU"};
  }
#endif
  double avail = proc_bytes<1>("/proc/meminfo", {"MemAvailable"})[0];
  if (avail <= 0) avail = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  const int on_node = comm.node_local().size();
  std::pair<double, std::string> out{avail / on_node, "the node's available memory (" + bytes_str(avail) +
                                                          ") shared by its " + std::to_string(on_node) + " rank" +
                                                          (on_node > 1 ? "s" : "")};
  // A rank may also have a smaller address-space limit of its own (ulimit -v; a batch system's
  // per-process limit): what is left of it under the limit counts too.
  struct rlimit lim {};
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const double used = proc_bytes<1>("/proc/self/status", {"VmSize"})[0];
    const double left = std::max(0.0, static_cast<double>(lim.rlim_cur) - used);
    if (left < out.first)
      out = {left, "what is left of this rank's address-space limit (ulimit -v: " +
                       bytes_str(static_cast<double>(lim.rlim_cur)) + ", " + bytes_str(used) + " in use)"};
  }
  return out;
}

/// Refuse, before allocating, a problem whose arrays would not fit: `bytes` is what this rank
/// will allocate (its owned block and halos of every array). Throws the same spmd::Error on
/// every rank naming `what`, the bytes per rank and the memory there is (memory_per_rank).
/// Collective.
inline void require_memory(const Comm& comm, double bytes, const std::string& what) {
  const auto [limit, source] = memory_per_rank(comm);
  const bool ok = bytes <= limit;
  comm.check(ok, ok ? std::string()
                    : what + " needs " + bytes_str(bytes) + " per rank on rank " + std::to_string(comm.rank()) +
                          ", more than the " + bytes_str(limit) + " it can have (" + source +
                          "): make the problem smaller or use more ranks/nodes");
}

/// Allocate through `alloc()` and agree on the outcome: an allocation failure on any rank
/// (std::bad_alloc, Kokkos' allocation error) becomes one spmd::Error on every rank naming
/// `what` and the bytes per rank. Collective.
template <class F>
void allocate_agreed(const Comm& comm, double bytes, const std::string& what, F&& alloc) {
  bool ok = true;
  std::string msg;
  try {
    alloc();
  } catch (const std::exception& e) {
    ok = false;
    msg = what + ": allocating " + bytes_str(bytes) + " on rank " + std::to_string(comm.rank()) + " failed (" +
          std::string(e.what()).substr(0, 200) + ")";
  }
  comm.check(ok, msg);
}

}  // namespace spmd::apps
