#pragma once
/// \file apps/common/app_cli.hpp
/// Command-line parsing every app shares: every rank parses the same argv and reaches the same
/// verdict; rank 0 alone prints the help text or the error.
///
///   CLI::App cli{"..."};
///   cli.add_option(...);
///   if (const int code = spmd::apps::parse(cli, comm, argc, argv); code >= 0) return code;
#include <CLI/CLI.hpp>
#include <spmd.hpp>

namespace spmd::apps {

/// Parse argv into `cli`. A later value of an option wins (scripts pass defaults before the
/// user's options). Returns -1 to go on, or the exit code (0 after --help). Local (argv is the
/// same on every rank).
inline int parse(CLI::App& cli, const Comm& comm, int argc, char** argv) {
  for (auto* opt : cli.get_options()) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm.rank() == 0 ? cli.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
  }
  return -1;
}

}  // namespace spmd::apps
