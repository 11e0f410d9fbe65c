#pragma once
/// \file apps/common/parse_options.hpp
/// Command-line parsing shared by the apps (CLI11), SPMD-safe:
///
///   if (auto code = spmd::apps::parse_options(cli, argc, argv, comm)) return *code;
///
/// A later value of an option wins (scripts/demo.sh passes defaults before the user's options).
/// Every rank parses the same argv and reaches the same verdict; on --help or a parse error rank 0
/// prints and every rank gets the exit code to return.
#include <CLI/CLI.hpp>
#include <spmd.hpp>

#include <optional>

namespace spmd::apps {

/// Parse argv into `cli`. Nothing when the app should go on, else the exit code. Local (argv is
/// the same on every rank).
inline std::optional<int> parse_options(CLI::App& cli, int argc, char** argv, const Comm& comm) {
  for (auto* opt : cli.get_options()) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm.rank() == 0 ? cli.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
  }
  return std::nullopt;
}

}  // namespace spmd::apps
