#pragma once
/// \file apps/common/checkpoint_options.hpp
/// The checkpoint/restart options every app shares, registered on a CLI11 app in one call:
///
///   --checkpoint-every K   save a checkpoint every K steps (0: never)
///   --checkpoint PREFIX    files PREFIX.<step, 10 digits>.h5 (+ .xmf); default "<app>-checkpoint"
///   --checkpoint-keep N    keep the newest N of them (default 2)
///   --restart FILE         start from checkpoint FILE; "latest" picks the newest valid file of PREFIX
///
/// Use in an app:
///
///   spmd::apps::CheckpointOptions ckpt("heat");
///   ckpt.add_to(cli);                          // before cli.parse
///   ...
///   if (ckpt.restarting()) { auto path = ckpt.restart_file(comm); ... io::load_into(path, "u", u); }
///   auto series = ckpt.series(comm);
///   for (...) { ...; if (ckpt.due(step)) series.save(step, {{"u", u}}, {{"time", t}}); }
///
/// Without parallel HDF5 (SPMD_HAVE_HDF5 == 0) the options still parse, and using them is an error.
#include <CLI/CLI.hpp>
#include <spmd.hpp>

#include <cstdint>
#include <string>

namespace spmd::apps {

struct CheckpointOptions {
  int every = 0;
  std::string prefix;
  int keep = 2;
  std::string restart;

  explicit CheckpointOptions(const std::string& app) : prefix(app + "-checkpoint") {}

  /// Register the options on `cli`. Local.
  void add_to(CLI::App& cli) {
    cli.add_option("--checkpoint-every", every, "save a checkpoint every K steps (0: never)")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--checkpoint", prefix, "checkpoint files are PREFIX.<step>.h5 (+ .xmf for ParaView)");
    cli.add_option("--checkpoint-keep", keep, "keep the newest N checkpoints")->check(CLI::PositiveNumber);
    cli.add_option("--restart", restart, "restart from this checkpoint file ('latest': newest of --checkpoint)");
  }
  bool restarting() const { return !restart.empty(); }
  /// True when a checkpoint is due after `step`. Local.
  bool due(std::int64_t step) const { return every > 0 && step % every == 0; }

  /// Throws the same spmd::Error on every rank (argv is the same everywhere) when checkpoints are
  /// asked for in a build without HDF5. Local.
  void require_hdf5(const char* app) const {
    if (!SPMD_HAVE_HDF5 && (every > 0 || restarting()))
      throw Error(std::string(app) + ": --checkpoint-every/--restart need spmdarray built with SPMD_ENABLE_HDF5=ON",
                  true);
  }

#if SPMD_HAVE_HDF5
  /// The series the app saves into. Local.
  io::CheckpointSeries series(const Comm& comm) const {
    return io::CheckpointSeries(comm, prefix, keep);
  }
  /// The file to restart from: --restart FILE, or the newest valid checkpoint of the series for
  /// "latest". Collective.
  std::string restart_file(const Comm& comm) const {
    if (restart != "latest") return restart;
    auto last = series(comm).latest();
    if (!last) throw Error("--restart latest: no valid checkpoint " + prefix + ".<step>.h5 found", true);
    return *last;
  }
  /// The attribute `name` of a checkpoint as a V (std::int64_t, double or std::string), with a
  /// clear error when it is missing or of another kind. Collective (info is replicated).
  template <class V>
  static V attribute(const io::FileInfo& info, const std::string& name, const char* kind) {
    const auto it = info.attributes.find(name);
    if (it == info.attributes.end() || !std::holds_alternative<V>(it->second))
      throw Error("restart: checkpoint '" + info.path + "' has no " + kind + " attribute '" + name + "'", true);
    return std::get<V>(it->second);
  }
  /// The integer attribute `name` of a checkpoint (e.g. "step"). Collective.
  static std::int64_t int_attribute(const io::FileInfo& info, const std::string& name) {
    return attribute<std::int64_t>(info, name, "integer");
  }
  static double real_attribute(const io::FileInfo& info, const std::string& name) {
    return attribute<double>(info, name, "real");
  }
  static std::string string_attribute(const io::FileInfo& info, const std::string& name) {
    return attribute<std::string>(info, name, "string");
  }
#endif
};

/// The CRC-32 of the whole of `a` (spmd::io::checksum: the same for every distribution, so equal
/// at every rank count), or -1 in builds without HDF5. The apps report it as `state_crc32` so
/// that tests can compare final states bit for bit. Collective.
template <class T, int N, class M>
std::int64_t state_crc32([[maybe_unused]] const Array<T, N, M>& a) {
#if SPMD_HAVE_HDF5
  return io::checksum(a);
#else
  return -1;
#endif
}

}  // namespace spmd::apps
