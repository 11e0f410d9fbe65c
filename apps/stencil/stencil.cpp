// apps/stencil: cuNumeric's stencil example (examples/stencil.py) written with spmd slices and
// expressions. An (N+2) x (N+2) grid, boundaries -273.15 (left, right, bottom) and 40.0 (top),
// and I iterations of
//
//   center = 0.2 * (center + north + east + west + south)     (NumPy semantics, in place)
//
// or, with --fast, the double buffer: next[1:-1, 1:-1] = 0.2 * (...u...); swap(u, next). Both give
// the same grid bit for bit, at any rank count (each point's update is the same arithmetic).
//
//   mpirun -n P ./stencil [--n N] [--iters I] [--fast] [--json FILE]
//                         [--checkpoint-every K --checkpoint PREFIX] [--restart FILE|latest]
//
// Prints the update rate (interior points per second) and a check value, the sum of the final
// grid in full precision, and writes both to --json. Checkpoints (builds with parallel HDF5) hold
// the grid and the iteration; --restart continues from one up to --iters (the total), on any rank
// count; a restarted run ends bitwise equal to an uninterrupted one.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spmd.hpp>

#include "app_cli.hpp"
#include "checkpoint_options.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using spmd::all;
using spmd::none;
using spmd::slice;

/// The boundaries of cuNumeric's grid: -273.15 left, right and bottom, 40.0 on top. Collective.
void set_boundaries(const spmd::Array<double, 2>& grid) {
  grid(all, 0) = -273.15;
  grid(all, -1) = -273.15;
  grid(-1, all) = -273.15;
  grid(0, all) = 40.0;
}

/// One iteration in place, as the NumPy script writes it. Neighbour-collective.
void step_in_place(const spmd::Array<double, 2>& grid) {
  auto center = grid(slice(1, -1), slice(1, -1));
  const auto north = grid(slice(0, -2), slice(1, -1));
  const auto east = grid(slice(1, -1), slice(2, none));
  const auto west = grid(slice(1, -1), slice(0, -2));
  const auto south = grid(slice(2, none), slice(1, -1));
  grid.exchange_halo(spmd::Pattern::face);
  center = 0.2 * (center + north + east + west + south);
}

/// One iteration on the double buffer: next's interior from grid, then swap. Neighbour-collective.
void step_double_buffer(spmd::Array<double, 2>& grid, spmd::Array<double, 2>& next) {
  const auto in = slice(1, -1);
  grid.exchange_halo(spmd::Pattern::face);
  next(in, in) = 0.2 * (grid(in, in) + grid(slice(0, -2), in) + grid(in, slice(2, none)) + grid(in, slice(0, -2)) +
                        grid(slice(2, none), in));
  spmd::swap(grid, next);
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm comm = rt.world();

  CLI::App cli{"cuNumeric's Jacobi stencil with spmd slices and fused expressions"};
  spmd::index_t n = 1000;
  int iters = 100;
  bool fast = false;
  std::string json_path;
  cli.add_option("--n", n, "interior points per axis (the grid is N + 2 square)")->check(CLI::Range(1, 1 << 20));
  cli.add_option("--iters", iters, "iterations (in total, when restarting)")->check(CLI::NonNegativeNumber);
  cli.add_flag("--fast", fast, "double buffer (next = f(u); swap) instead of the in-place update");
  cli.add_option("--json", json_path, "write the results to this JSON file (rank 0)");
  spmd::apps::CheckpointOptions ckpt("stencil");
  ckpt.add_to(cli);
  if (const int code = spmd::apps::parse(cli, comm, argc, argv); code >= 0) return code;

  ckpt.require_hdf5("stencil");
  int first = 1;  // the first iteration this run makes
#if SPMD_HAVE_HDF5
  std::string restart_path;
  if (ckpt.restarting()) {
    restart_path = ckpt.restart_file(comm);
    const spmd::io::FileInfo info = spmd::io::inspect(restart_path, comm);
    n = ckpt.int_attribute(info, "n");
    first = static_cast<int>(ckpt.int_attribute(info, "iteration")) + 1;
    if (comm.rank() == 0)
      std::printf("stencil: restarting from %s after iteration %d (n %lld)\n", restart_path.c_str(), first - 1,
                  static_cast<long long>(n));
  }
#endif

  const spmd::Distribution<2> dist(comm, {n + 2, n + 2}, spmd::halo(1));
  auto grid = spmd::zeros<double>(dist, spmd::label("spmd::stencil::grid"));
  spmd::Array<double, 2> next;
  set_boundaries(grid);
  if (fast) {
    next = spmd::zeros<double>(dist, spmd::label("spmd::stencil::next"));
    set_boundaries(next);  // the update never writes the boundaries: both buffers hold them
  }
#if SPMD_HAVE_HDF5
  if (!restart_path.empty()) spmd::io::load_into(restart_path, "grid", grid);
  const auto series = ckpt.series(comm);
#endif
  if (comm.rank() == 0)
    std::printf("stencil: %lld x %lld grid on %d ranks (%s), %d iterations%s, %s, backend %s\n",
                static_cast<long long>(n + 2), static_cast<long long>(n + 2), comm.size(), dist.describe().c_str(),
                iters, first > 1 ? (" from " + std::to_string(first)).c_str() : "",
                fast ? "double buffer (--fast)" : "in place", spmd::Runtime::backend().c_str());

  Kokkos::fence();
  comm.barrier();
  const double t0 = MPI_Wtime();
  for (int it = first; it <= iters; ++it) {
    if (fast)
      step_double_buffer(grid, next);
    else
      step_in_place(grid);
#if SPMD_HAVE_HDF5
    if (ckpt.due(it)) series.save(it, {{"grid", grid}}, {{"iteration", std::int64_t(it)}, {"n", std::int64_t(n)}});
#endif
  }
  Kokkos::fence();
  const double elapsed = comm.allreduce(MPI_Wtime() - t0, spmd::Op::max);
  const double check = spmd::sum(grid);
  // cuNumeric's own figure: the mean of the interior
  const double energy = spmd::sum(grid(slice(1, -1), slice(1, -1))) / (static_cast<double>(n) * static_cast<double>(n));
  const double done = iters >= first ? static_cast<double>(iters - first + 1) : 0.0;
  const double rate = elapsed > 0 ? static_cast<double>(n) * static_cast<double>(n) * done / elapsed : 0.0;
  const std::int64_t state_crc32 = spmd::apps::state_crc32(grid);
  if (comm.rank() == 0) {
    std::printf("stencil: %.3f s, %.4e points/s, check (sum of the grid) %.17g, average energy %.8g\n", elapsed, rate,
                check, energy);
    if (!json_path.empty()) {
      const nlohmann::json j = {{"app", "stencil"},
                                {"n", n},
                                {"iters", iters},
                                {"first_iteration", first},
                                {"fast", fast},
                                {"ranks", comm.size()},
                                {"seconds", elapsed},
                                {"points_per_second", rate},
                                {"check", check},
                                {"average_energy", energy},
                                {"state_crc32", state_crc32}};
      std::ofstream(json_path) << j.dump(2) << "\n";
    }
  }
  return 0;
}
