#pragma once
/// \file apps/common/report.hpp
/// What every app reports: progress lines on rank 0 (Progress), the resources of a process
/// (Resources, for the soak tests) and the one JSON schema all apps write (Report). The schema is
/// documented in docs/apps.md and checked by apps/common/apptest.py (check_report) in every app
/// test.
///
///   spmd::apps::Report report(app, comm, "spmdarray-app-report/1");
///   report.j["problem"] = {{"n", n}, {"shape", {n + 2, n + 2}}};
///   spmd::apps::Progress progress(app, comm, "step", first, last);
///   progress.start();
///   for (...) { ...; if (progress.due(step)) progress.report(step, "max change " + ...); }
///   report.set_timings(progress, points_per_step, "point-updates/s");
///   report.j["check"] = {...};
///   return report.finish(comm, code, outcome);   // writes --json (checked), returns code
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mpi.h>

#include <nlohmann/json.hpp>

#include "app.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace spmd::apps {

/// The version of the JSON schema of docs/apps.md; bump it with any change of the keys.
inline constexpr const char* report_schema = "spmdarray-app-report/1";

/// A process's resources, each the maximum over the ranks.
struct Resources {
  double rss_bytes = 0;       // VmRSS
  double peak_rss_bytes = 0;  // VmHWM (peak resident set)
  double fds = 0;             // open file descriptors (/proc/self/fd)
  double comms = -1;          // live MPI communicators, when the soak probe is preloaded (else -1)
};

/// Sample this process (/proc/self/status, /proc/self/fd, and the live communicator count of
/// tests/soak/comm_probe.c when it is LD_PRELOADed) and take the maximum over the ranks.
/// Collective.
inline Resources sample_resources(const Comm& comm) {
  const auto mem = proc_bytes<2>("/proc/self/status", {"VmRSS", "VmHWM"});
  double v[4] = {mem[0], mem[1], 0, -1};
  if (DIR* d = opendir("/proc/self/fd")) {
    int n = 0;
    while (readdir(d)) ++n;
    closedir(d);
    v[2] = n - 3;  // ".", ".." and the descriptor of the listing itself
  }
  using probe_fn = long (*)();
  if (auto fn = reinterpret_cast<probe_fn>(dlsym(RTLD_DEFAULT, "spmd_probe_live_comms")))
    v[3] = static_cast<double>(fn());
  comm.allreduce(v, 4, Op::max);
  return Resources{v[0], v[1], v[2], v[3]};
}

/// Progress lines on rank 0: "heat: step 100/1000  max change 1.2e-03  elapsed 1.23 s
/// 81.3 steps/s  ETA 11.1 s" every --monitor K steps and at the last one; with --resources also
/// the memory, open files and live communicators (collective then).
class Progress {
 public:
  Progress(const App& app, const Comm& comm, std::string unit, std::int64_t first, std::int64_t last)
      : app_(app), comm_(comm), unit_(std::move(unit)), first_(first), last_(last) {}

  /// The clock starts: `first` is the next step to run. Collective (a barrier, so that the
  /// times of every rank start together).
  void start() {
    Kokkos::fence();
    comm_.barrier();
    t0_ = MPI_Wtime();
  }
  double elapsed() const { return MPI_Wtime() - t0_; }
  /// Call after each step: after the first step of a run that has more, the clock of the timed
  /// steps restarts (that step built the plans, mapped the peers' buffers or connected NCCL, and
  /// sized the statements' buffers: costs paid once, kept out of the rate). Collective then (a
  /// fence and a barrier), Local otherwise.
  void after_step(std::int64_t step) {
    if (step != first_ || step >= last_) return;
    Kokkos::fence();
    comm_.barrier();
    timed_from_ = elapsed();
    untimed_ = 1;
  }
  /// Seconds of the timed steps so far (after a fence). Local.
  double timed_seconds() const {
    Kokkos::fence();
    return elapsed() - timed_from_;
  }
  /// The timed steps among `done` steps run. Local.
  std::int64_t timed_steps(std::int64_t done) const { return done - untimed_ > 0 ? done - untimed_ : 0; }
  std::int64_t first() const { return first_; }
  std::int64_t last() const { return last_; }
  void set_last(std::int64_t last) { last_ = last; }

  /// True when a progress line is due after `step`. Local.
  bool due(std::int64_t step) const {
    return (app_.monitor() > 0 && step % app_.monitor() == 0) || (app_.resources() && step == last_);
  }

  /// Print the line for `step` with the app's check quantity; `remaining` is the number of steps
  /// still to go when the app knows better than last - step (a solver's estimate; NaN: unknown),
  /// else < 0.
  /// Call on every rank (with --resources this is a collective). Local otherwise.
  void report(std::int64_t step, const std::string& quantity, double remaining = -1) {
    Resources r;
    if (app_.resources()) {
      r = sample_resources(comm_);
      resources_.push_back({{"step", step},
                            {"rss_bytes", r.rss_bytes},
                            {"peak_rss_bytes", r.peak_rss_bytes},
                            {"fds", r.fds},
                            {"comms", r.comms}});
    }
    if (app_.quiet() || comm_.rank() != 0 || app_.monitor() == 0) return;
    const double t = elapsed();
    const double done = static_cast<double>(step - first_ + 1);
    const double rate = t > 0 && done > 0 ? done / t : 0.0;
    const double left = std::isnan(remaining) ? remaining : remaining >= 0 ? remaining : double(last_ - step);
    std::string line =
        format("%s: %s %*lld/%lld  %s  elapsed %s  %.4g %ss/s  ETA %s", app_.name().c_str(), unit_.c_str(),
               static_cast<int>(std::to_string(last_).size()), static_cast<long long>(step),
               static_cast<long long>(last_), quantity.c_str(), duration_str(t).c_str(), rate, unit_.c_str(),
               rate > 0 && std::isfinite(left) ? duration_str(left / rate).c_str() : "?");
    if (app_.resources())
      line += format("  rss %.1f MiB  peak %.1f MiB  fds %.0f  comms %.0f", r.rss_bytes / 1048576.0,
                     r.peak_rss_bytes / 1048576.0, r.fds, r.comms);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  const nlohmann::json& resources() const { return resources_; }

 private:
  const App& app_;
  const Comm& comm_;
  std::string unit_;
  std::int64_t first_, last_;
  double t0_ = 0, timed_from_ = 0;
  std::int64_t untimed_ = 0;
  nlohmann::json resources_ = nlohmann::json::array();
};

/// The device the app runs on: "cuda:<id>" on a CUDA default execution space, else "host".
inline std::string device_str() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Kokkos::DefaultExecutionSpace, Kokkos::Cuda>)
    return "cuda:" + std::to_string(Kokkos::Cuda().cuda_device());
#endif
  return "host";
}

/// The JSON report of a run (schema report_schema, docs/apps.md): `j` holds the common keys
/// after construction; the app adds "problem", "distribution", "run", "check" and calls
/// set_timings() and finish().
class Report {
 public:
  Report(const App& app, const Comm& comm) : app_(app) {
    nlohmann::json options = nlohmann::json::object();
    for (const CLI::Option* o : app.cli().get_options()) {
      if (o->get_lnames().empty() || o->get_group().empty()) continue;  // hidden: old names
      const std::string name = o->get_lnames().front();
      if (name == "help" || name == "version") continue;
      std::string value;
      if (o->get_expected_max() == 0) {  // a flag
        value = o->count() > 0 ? "true" : "false";
      } else if (o->count() > 0) {
        for (const auto& r : o->results()) value += (value.empty() ? "" : ",") + r;
      } else {
        value = o->get_default_str();
      }
      options[name] = value;
    }
    j = {{"schema", report_schema},
         {"app", app.name()},
         {"version", SPMD_VERSION_STRING},
         {"git_revision", SPMD_APPS_GIT_REVISION},
         {"backend", spmd::Runtime::backend()},
         {"device", device_str()},
         {"ranks", comm.size()},
         {"threads", Kokkos::DefaultHostExecutionSpace().concurrency()},
         {"options", options}};
  }

  /// "timings": the seconds of the timed steps (`local_seconds` of this rank, the max over ranks
  /// is recorded), their count, the seconds per step and `work_per_step / seconds per step` in
  /// `unit`; with --resources also the samples taken by `p`. Collective.
  void set_timings(const Progress& p, double local_seconds, std::int64_t steps_done, double work_per_step,
                   const std::string& unit, const Comm& comm) {
    Kokkos::fence();
    const double seconds = comm.allreduce(local_seconds, Op::max);
    seconds_ = seconds;
    const double per = steps_done > 0 ? seconds / static_cast<double>(steps_done) : 0.0;
    j["timings"] = {{"seconds", seconds},
                    {"steps", steps_done},
                    {"seconds_per_step", per},
                    {"rate", per > 0 ? work_per_step / per : 0.0},
                    {"rate_unit", unit}};
    if (app_.resources()) j["resources"] = p.resources();
  }
  /// set_timings() for all the steps `p` timed. Collective.
  void set_timings(const Progress& p, std::int64_t steps_done, double work_per_step, const std::string& unit,
                   const Comm& comm) {
    Kokkos::fence();
    set_timings(p, p.elapsed(), steps_done, work_per_step, unit, comm);
  }
  double seconds() const { return seconds_; }

  /// Record the exit status and outcome ("ok", "not_converged", "check_failed") with `message`,
  /// write --json if asked (rank 0; a failed write is an spmd::Error on every rank) and return
  /// `status`. Collective.
  int finish(const Comm& comm, int status, const std::string& outcome, const std::string& message = {}) {
    j["exit"] = {{"status", status}, {"outcome", outcome}, {"message", message}};
    const std::string& path = app_.json_path();
    if (path.empty()) return status;
    bool ok = true;
    std::string msg;
    if (comm.rank() == 0) {
      const std::string text = j.dump(2) + "\n";
      msg = write_json(path, text);
      ok = msg.empty();
    }
    comm.check(ok, msg);
    return status;
  }

  nlohmann::json j;

 private:
  /// Write `text` to the --json file: only a new or regular file (never through a symbolic link,
  /// never blocking on a FIFO). Returns "" or the error. Local.
  static std::string write_json(const std::string& path, const std::string& text) {
    const std::string shown = io::impl::printable(path, 200);
    if (std::string why = io::output_path_problem(path, shown); !why.empty()) return "--json: " + why;
    errno = 0;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot create the --json file '" + shown + "': " + std::strerror(errno);
    struct stat st {};
    std::string why;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) why = "--json: '" + shown + "' is not a regular file";
    for (std::size_t done = 0; why.empty() && done < text.size();) {
      const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) why = "writing the --json file '" + shown + "' failed: " + std::strerror(w < 0 ? errno : EIO);
      if (w > 0) done += static_cast<std::size_t>(w);
    }
    if (::close(fd) != 0 && why.empty())
      why = "writing the --json file '" + shown + "' failed: " + std::strerror(errno);
    return why;
  }
  const App& app_;
  double seconds_ = 0;
};

/// The "run" object of the report: the run id (null when the run neither restarted nor saved
/// checkpoints), the checkpoint it restarted from (null for a new run), the first and last step
/// (iteration) of this run and the unit ("step" or "iteration"). Local.
inline nlohmann::json run_json(const std::string& run_id, const std::string& restarted_from, std::int64_t first,
                               std::int64_t last, const std::string& unit) {
  return {{"run_id", run_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(run_id)},
          {"restarted_from", restarted_from.empty() ? nlohmann::json(nullptr) : nlohmann::json(restarted_from)},
          {"first_step", first},
          {"last_step", last},
          {"unit", unit}};
}

/// A failed check: rank 0 says why on stderr (also with --quiet), the report records it, and the
/// exit status is exit_check_failed. Collective (Report::finish).
inline int fail_check(const App& app, const Comm& comm, Report& report, const std::string& why) {
  if (comm.rank() == 0) {
    std::fprintf(stderr, "%s: check failed: %s\n", app.name().c_str(), why.c_str());
    std::fflush(stderr);
  }
  return report.finish(comm, exit_check_failed, "check_failed", why);
}

}  // namespace spmd::apps
