#pragma once
/// \file apps/common/checkpoint_options.hpp
/// Checkpoints and restarts that cannot mix runs, for every app (docs/checkpointing.md#apps):
///
///   --checkpoint-every K   save a checkpoint every K steps (0: never)
///   --checkpoint PREFIX    files PREFIX.<step, 10 digits>.h5 (+ .xmf); default "<app>-checkpoint",
///                          or the restart file's own prefix when restarting from one
///   --checkpoint-keep N    keep the newest N of this run's files (default 2)
///   --restart FILE         start from checkpoint FILE; "latest": the newest valid file of PREFIX
///
/// Each checkpoint records the app ("app"), the run it belongs to (the series' run id), what
/// defines the problem ("problem.<field>": the options bound with ProblemRecord::option and the
/// quantities given to ProblemRecord::derived, such as a matrix's checksum) and how far the run
/// goes ("run.<steps option>"). A restart compares them with its command line: an option given
/// that differs from the checkpoint's value is an error naming it; an option not given takes the
/// checkpoint's value. Use in an app:
///
///   spmd::apps::CheckpointOptions ckpt("heat");
///   ckpt.add_to(app.cli());                    // before parsing
///   ...                                        // after parsing, in App::run's body:
///   spmd::apps::ProblemRecord record(app);
///   record.option("--n", n);
///   auto start = ckpt.start(comm, app, record, "--steps", steps);   // restart and series
///   ... load start.path when start.restarting() ...
///   ckpt.save(start, step, {{"u", u}}, record, {{"time", t}});      // HDF5 builds
///
/// Without parallel HDF5 (SPMD_HAVE_HDF5 == 0) the options still parse, and using them is an error.
#include <CLI/CLI.hpp>
#include <spmd.hpp>
#include <spmd/io/metadata.hpp>

#include "app.hpp"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace spmd::apps {

/// An attribute value as the command line would spell it: integers as such, reals in the
/// shortest form that reads back the same, strings quoted. Local.
inline std::string value_str(const io::AttributeValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    char buf[40];
    for (int prec = 6; prec <= 17; ++prec) {
      std::snprintf(buf, sizeof buf, "%.*g", prec, *d);
      if (std::strtod(buf, nullptr) == *d) break;
    }
    return buf;
  }
  return "'" + io::impl::printable(std::get<std::string>(v)) + "'";
}

/// What defines a run's problem, recorded in each checkpoint as attributes "problem.<field>" and
/// checked when a run restarts from one.
class ProblemRecord {
 public:
  explicit ProblemRecord(App& app) : app_(app) {}

  /// The option `flag` (e.g. "--n", bound to `var`) defines the problem. On restart, a value
  /// given on the command line must equal the checkpoint's; a value not given is taken from it.
  /// With `compare` false the value is only recorded and taken when not given (e.g. a file's
  /// path: the file's contents are compared through derived() fields). Local.
  template <class T>
  void option(const std::string& flag, T& var, bool compare = true) {
    Field f;
    f.name = flag.substr(flag.find_first_not_of('-'));
    f.flag = flag;
    f.compare = compare;
    f.flag_only = std::is_same_v<T, bool>;
    f.get = [&var]() -> io::AttributeValue {
      if constexpr (std::is_same_v<T, bool>)
        return std::int64_t(var ? 1 : 0);
      else if constexpr (std::is_integral_v<T>)
        return std::int64_t(var);
      else if constexpr (std::is_floating_point_v<T>)
        return double(var);
      else
        return std::string(var);
    };
    f.set = [&var](const io::AttributeValue& v) -> bool {
      if constexpr (std::is_same_v<T, bool>) {
        if (!std::holds_alternative<std::int64_t>(v)) return false;
        var = std::get<std::int64_t>(v) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        if (!std::holds_alternative<std::int64_t>(v)) return false;
        var = static_cast<T>(std::get<std::int64_t>(v));
      } else if constexpr (std::is_floating_point_v<T>) {
        if (!std::holds_alternative<double>(v)) return false;
        var = static_cast<T>(std::get<double>(v));
      } else {
        if (!std::holds_alternative<std::string>(v)) return false;
        var = std::get<std::string>(v);
      }
      return true;
    };
    fields_.push_back(std::move(f));
  }

  /// A quantity derived from the problem once it is built (a matrix's rows, entries and
  /// checksum): recorded, and on restart it must equal the checkpoint's. Local.
  void derived(const std::string& name, io::AttributeValue value) {
    for (auto& d : derived_)
      if (d.first == name) {
        d.second = std::move(value);
        return;
      }
    derived_.emplace_back(name, std::move(value));
  }

  /// The record as checkpoint attributes. Local.
  io::Attributes attributes() const {
    io::Attributes a;
    for (const Field& f : fields_) a["problem." + f.name] = f.get();
    for (const auto& d : derived_) a["problem." + d.first] = d.second;
    return a;
  }

  /// Restart from the checkpoint described by (path, attributes): take the options not given
  /// from it, and throw the same spmd::Error on every rank (the attributes are the same
  /// everywhere) when a given option differs from the checkpoint's value or the checkpoint has
  /// no record of it. Collective in effect (local work on replicated data).
  void adopt(const std::string& path, const io::Attributes& stored) {
    for (const Field& f : fields_) {
      const auto it = stored.find("problem." + f.name);
      if (it == stored.end())
        throw Error::replicated("restart: the checkpoint '" + io::impl::printable(path) + "' has no record of " +
                                f.flag + " (problem." + f.name +
                                "): it was written by an older version or another program, so this "
                                "run cannot be checked against it");
      // The stored value must pass the option's own validators, as a value given on the command
      // line does (a file edited, or written by another program, is refused here); the option's
      // current value (its default, or the value given and checked) needs no check.
      if (!f.flag_only && it->second != f.get())
        if (const std::string why = app_.check_value(f.flag, option_text(it->second)); !why.empty())
          throw Error::replicated("restart: the checkpoint '" + io::impl::printable(path) + "' records problem." +
                                  f.name + " " + value_str(it->second) + ", which " + f.flag + " refuses: " + why);
      const io::AttributeValue mine = f.get();
      if (app_.given(f.flag)) {
        if (f.compare && mine != it->second)
          throw Error::replicated(
              "restart: " + f.flag + (f.flag_only ? std::string() : " " + value_str(mine)) +
              " differs from the checkpoint '" + io::impl::printable(path) + "', made " +
              (f.flag_only ? "without " + f.flag : "with " + f.flag + " " + value_str(it->second)) +
              ": a restart continues the same problem; leave " + f.flag +
              " out to take the checkpoint's value, or start a new run with another --checkpoint prefix");
      } else if (!f.set(it->second)) {
        throw Error::replicated("restart: the checkpoint '" + io::impl::printable(path) + "' records problem." +
                                f.name + " as a value of another kind (" + value_str(it->second) + ")");
      }
    }
  }

  /// After the problem is built: every derived() quantity must equal the checkpoint's. Throws
  /// the same spmd::Error on every rank naming the first that differs. Collective in effect.
  void check_derived(const std::string& path, const io::Attributes& stored) const {
    for (const auto& [name, value] : derived_) {
      const auto it = stored.find("problem." + name);
      if (it == stored.end())
        throw Error::replicated(
            "restart: the checkpoint '" + io::impl::printable(path) + "' has no record of problem." + name +
            ": it was written by an older version or another program, so this run cannot be checked "
            "against it");
      if (it->second != value)
        throw Error::replicated("restart: this run's problem differs from the checkpoint '" +
                                io::impl::printable(path) + "' in problem." + name + ": " + value_str(value) +
                                " here, " + value_str(it->second) +
                                " in the checkpoint (another matrix or grid than the one the run began with)");
    }
  }

 private:
  struct Field {
    std::string name, flag;
    bool compare = true, flag_only = false;
    std::function<io::AttributeValue()> get;
    std::function<bool(const io::AttributeValue&)> set;
  };
  /// A stored value as the command line would give it to the option's validators: reals with
  /// all 17 digits (strtod reads back the same double), integers as such, strings raw.
  static std::string option_text(const io::AttributeValue& v) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v)) {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", *d);
      return buf;
    }
    return std::get<std::string>(v);
  }
  App& app_;
  std::vector<Field> fields_;
  std::vector<std::pair<std::string, io::AttributeValue>> derived_;
};

/// Where a run starts: from scratch (step 0) or from a checkpoint, and the series it saves into.
struct Start {
  std::string path;       //!< the checkpoint restarted from ("" for a new run)
  std::int64_t step = 0;  //!< the step (iteration) the state is at: 0, or the checkpoint's
  std::string run_id;     //!< the run id (of the checkpoint when restarting), "" when none is needed
  io::FileInfo info;      //!< the checkpoint's metadata (restart)
#if SPMD_HAVE_HDF5
  std::shared_ptr<io::CheckpointSeries> series;  //!< when checkpointing
#endif
  bool restarting() const {
    return !path.empty();
  }
};

struct CheckpointOptions {
  int every = 0;
  std::string prefix;
  int keep = 2;
  std::string restart;
  std::string app;

  explicit CheckpointOptions(const std::string& app_name) : prefix(app_name + "-checkpoint"), app(app_name) {}

  /// Register the options on `cli`. Local.
  void add_to(CLI::App& cli) {
    cli.add_option("--checkpoint-every", every, "save a checkpoint every K steps (0: never)")
        ->check(in_range(0, INT_MAX));
    prefix_option_ = cli.add_option("--checkpoint", prefix,
                                    "checkpoint files are PREFIX.<step>.h5 (+ .xmf for ParaView); when restarting "
                                    "from a file, its own prefix unless given")
                         ->check(non_empty());
    cli.add_option("--checkpoint-keep", keep, "keep the newest N checkpoints of this run")->check(in_range(1, 1e9));
    cli.add_option("--restart", restart,
                   "restart from this checkpoint file ('latest': the newest valid one of --checkpoint)")
        ->check(non_empty());
  }
  bool restarting() const { return !restart.empty(); }
  /// True when a checkpoint is due after `step`. Local.
  bool due(std::int64_t step) const { return every > 0 && step % every == 0; }

  /// Resolve the restart (if any), check it against the problem `record` and the step target
  /// (`steps_flag` bound to `steps`: taken from the checkpoint when not given, and never before
  /// the checkpoint's step), and claim the checkpoint prefix for this run. Throws the same
  /// spmd::Error on every rank. Collective.
  /// `offset` (read after the record is adopted) is added to `steps` where the app's steps do not
  /// count from the first one (cfd: --steps timed steps after --warmup ones).
  template <class I>
  Start start(const Comm& comm, App& a, ProblemRecord& record, const std::string& steps_flag, I& steps,
              const int& offset = 0) {
    Start s;
    if (!SPMD_HAVE_HDF5 && (every > 0 || restarting()))
      throw Error::replicated("--checkpoint-every/--restart need spmdarray built with SPMD_ENABLE_HDF5=ON");
#if SPMD_HAVE_HDF5
    if (restarting()) {
      s.path = restart;
      if (restart == "latest") {
        const io::CheckpointSeries::Latest l = io::CheckpointSeries(comm, prefix, keep).find_latest();
        for (const auto& [file, why] : l.skipped)
          if (comm.rank() == 0)
            std::fprintf(stderr, "%s: --restart latest: skipped '%s': %s\n", a.name().c_str(),
                         io::impl::printable(file).c_str(), why.c_str());
        if (!l.path)
          throw Error::replicated(
              "--restart latest: no valid checkpoint " + io::impl::printable(prefix) + ".<step>.h5 found" +
              (l.skipped.empty() ? std::string() : " (" + std::to_string(l.skipped.size()) + " invalid ones skipped)"));
        s.path = *l.path;
      } else if (!a.given("--checkpoint")) {
        prefix = prefix_of(restart, prefix);  // continue the file's own series
      }
      const io::FileInfo info = io::inspect(s.path, comm);
      s.info = info;
      const auto app_it = info.attributes.find("app");
      if (app_it == info.attributes.end() || app_it->second != io::AttributeValue(app))
        throw Error::replicated("restart: '" + io::impl::printable(s.path) + "' is not a checkpoint of " + app +
                                (app_it == info.attributes.end()
                                     ? std::string(" (it records no app)")
                                     : " (it is one of " + value_str(app_it->second) + ")"));
      if (info.run_id.empty())
        throw Error::replicated(
            "restart: '" + io::impl::printable(s.path) +
            "' records no run id: it was written by an older version, so this run cannot be checked "
            "against it");
      s.run_id = info.run_id;
      s.step = int_attribute(info, "step");
      if (s.step < 0 || s.step > INT_MAX)
        throw Error::replicated("restart: the checkpoint '" + io::impl::printable(s.path) + "' records the step " +
                                std::to_string(s.step) + ", outside [0, " + std::to_string(INT_MAX) + "]");
      record.adopt(s.path, info.attributes);
      const auto target = info.attributes.find("run." + steps_flag.substr(2));
      if (!a.given(steps_flag) && target != info.attributes.end() &&
          std::holds_alternative<std::int64_t>(target->second)) {
        const std::string text = std::to_string(std::get<std::int64_t>(target->second));
        if (const std::string why = a.check_value(steps_flag, text); !why.empty())
          throw Error::replicated("restart: the checkpoint '" + io::impl::printable(s.path) + "' records run." +
                                  steps_flag.substr(2) + " " + text + ", which " + steps_flag + " refuses: " + why);
        steps = static_cast<I>(std::get<std::int64_t>(target->second));
      }
      if (static_cast<std::int64_t>(steps) + offset < s.step)
        throw Error::replicated(
            "restart: " + steps_flag + " " + std::to_string(steps) + " ends before the checkpoint's step " +
            std::to_string(s.step) + " ('" + io::impl::printable(s.path) + "'): " + steps_flag +
            " counts from the start of the run, so give at least " + std::to_string(s.step - offset));
    }
    if (every > 0) {
      s.series = std::make_shared<io::CheckpointSeries>(comm, prefix, keep, s.run_id);
      s.series->claim(restarting());
      s.run_id = s.series->run_id();
    }
#else
    (void)comm;
    (void)a;
    (void)record;
    (void)steps_flag;
    (void)steps;
    (void)offset;
#endif
    steps_flag_ = steps_flag;
    steps_value_ = static_cast<std::int64_t>(steps);
    return s;
  }

#if SPMD_HAVE_HDF5
  /// Save the checkpoint of `step` when one is due: the datasets, the record, the app, the step
  /// target and `extra` attributes. Collective.
  void save(const Start& s, std::int64_t step, const std::vector<io::Dataset>& datasets, const ProblemRecord& record,
            io::Attributes extra = {}) const {
    io::Attributes attrs = record.attributes();
    attrs["app"] = app;
    attrs["run." + steps_flag_.substr(2)] = steps_value_;
    for (auto& [k, v] : extra) attrs[k] = std::move(v);
    s.series->save(step, datasets, attrs);
  }

  /// The integer attribute `name` of a checkpoint (e.g. "step"), with a clear error when it is
  /// missing. Collective (info is replicated).
  static std::int64_t int_attribute(const io::FileInfo& info, const std::string& name) {
    const auto it = info.attributes.find(name);
    if (it == info.attributes.end() || !std::holds_alternative<std::int64_t>(it->second))
      throw Error::replicated("restart: checkpoint '" + io::impl::printable(info.path) +
                              "' has no integer attribute '" + name + "'");
    return std::get<std::int64_t>(it->second);
  }
#endif

 private:
  /// The series prefix of a file "<prefix>.<10 digits>.h5", or `fallback`.
  static std::string prefix_of(const std::string& file, const std::string& fallback) {
    const std::size_t n = file.size();
    if (n < 15 || file.compare(n - 3, 3, ".h5") != 0 || file[n - 14] != '.') return fallback;
    for (std::size_t k = n - 13; k < n - 3; ++k)
      if (file[k] < '0' || file[k] > '9') return fallback;
    return file.substr(0, n - 14);
  }
  CLI::Option* prefix_option_ = nullptr;
  std::string steps_flag_ = "--steps";
  std::int64_t steps_value_ = 0;
};

/// Refuse, before any work, a --save path that io::save would refuse (a FIFO, a device, a
/// directory or a link at the path or at its .xmf sidecar, a missing directory), or any --save in
/// a build without HDF5: the same spmd::Error on every rank, naming --save. Nothing without a
/// path. Collective.
inline void check_save([[maybe_unused]] const Comm& comm, const std::string& path) {
  if (path.empty()) return;
#if SPMD_HAVE_HDF5
  const std::string why = io::output_problem(path, comm, true);
  if (!why.empty()) throw Error::replicated("--save: " + why);
#else
  throw Error::replicated("--save needs spmdarray built with SPMD_ENABLE_HDF5=ON");
#endif
}

/// The CRC-32 of the whole of `a` (spmd::io::checksum: the same for every distribution, so equal
/// at every rank count), or -1 in builds without HDF5. The apps report it in "check" ->
/// "state_crc32" so that tests can compare final states bit for bit. Collective.
template <class T, int N, class M>
std::int64_t state_crc32([[maybe_unused]] const Array<T, N, M>& a) {
#if SPMD_HAVE_HDF5
  return io::checksum(a);
#else
  return -1;
#endif
}

}  // namespace spmd::apps
