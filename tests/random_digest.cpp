// The random generator's arrays, and their reproducible sums, as files for an identity check
// between runs: rank counts, process grids, halos, and builds (CPU against GPU).
//   random_digest OUTDIR GRID     (GRID: auto, rows or columns; run by tests/random_identity.py)
// Rank 0 writes OUTDIR/<name>.bin (the gathered array's row-major bytes) for each array, and
// OUTDIR/sums.txt (each double array's spmd::sum(spmd::reproducible, ...) as its 64 bits in hex).
// Only the generator's own values are drawn (no arithmetic on them here): a GPU compiler may
// contract `a * b + c` into an fma, so an expression's bits are not the generator's to promise.
#include <spmd.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using spmd::Distribution;
using spmd::Index;
using spmd::index_t;
using spmd::random::Generator;

template <class T>
void write_bytes(const spmd::Comm& comm, const std::string& path, const std::vector<T>& v) {
  bool ok = true;
  if (comm.rank() == 0) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
    f.close();
    ok = bool(f);
  }
  comm.check(ok, "random_digest: could not write " + path);
}

std::string hex_bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  char s[24];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(b));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  const spmd::Comm comm = rt.world();
  comm.check(argc == 3, "usage: random_digest OUTDIR auto|rows|columns");
  const std::string dir = argv[1], grid = argv[2];
  const int p = comm.size();
  comm.check(grid == "auto" || grid == "rows" || grid == "columns",
             "random_digest: GRID must be auto, rows or columns, not " + grid);
  // 2-D arrays of about 2^20 points (odd sizes: blocks of unequal length); halos on two grids.
  const Index<2> shape{1021, 1031};
  const auto dist = [&](int halo) {
    if (grid == "rows") return Distribution<2>(comm, shape, spmd::grid({p, 1}), spmd::halo(halo));
    if (grid == "columns") return Distribution<2>(comm, shape, spmd::grid({1, p}), spmd::halo(halo));
    return Distribution<2>(comm, shape, spmd::halo(halo));
  };
  std::string sums;
  const auto sum_line = [&](const char* name, const auto& a) {
    sums += std::string(name) + " " + hex_bits(spmd::sum(spmd::reproducible, a)) + "\n";
  };
  const Generator g{20261124, 3};
  {
    auto a = spmd::empty<double>(dist(grid == "auto" ? 0 : 1), spmd::label("uniform_f64"));
    spmd::random::uniform(a, g, -1.0, 2.0);
    write_bytes(comm, dir + "/uniform_f64.bin", spmd::allgather(a));
    sum_line("uniform_f64", a);
  }
  {
    auto a = spmd::empty<double>(dist(grid == "columns" ? 2 : 0), spmd::label("normal_f64"));
    spmd::random::normal(a, g.stream(4), 10.0, 3.0);
    write_bytes(comm, dir + "/normal_f64.bin", spmd::allgather(a));
    sum_line("normal_f64", a);
  }
  {
    auto a = spmd::empty<float>(dist(0), spmd::label("uniform_f32"));
    spmd::random::uniform(a, g.stream(5));
    write_bytes(comm, dir + "/uniform_f32.bin", spmd::allgather(a));
    auto b = spmd::empty<float>(dist(1), spmd::label("normal_f32"));
    spmd::random::normal(b, g.stream(6));
    write_bytes(comm, dir + "/normal_f32.bin", spmd::allgather(b));
  }
  {
    auto a = spmd::empty<std::int64_t>(dist(0), spmd::label("integers_i64"));
    spmd::random::integers(a, g.stream(7), -(std::int64_t(1) << 40), std::int64_t(1) << 40);
    write_bytes(comm, dir + "/integers_i64.bin", spmd::allgather(a));
    auto b = spmd::empty<int>(dist(0), spmd::label("integers_i32"));
    spmd::random::integers(b, g.stream(8), -7, 1000);
    write_bytes(comm, dir + "/integers_i32.bin", spmd::allgather(b));
  }
  {
    // 3-D, and a strided slice (the slice's own row-major indices) of a zero array
    auto c = spmd::empty<double>(comm, {37, 41, 43}, spmd::label("normal_3d"));
    spmd::random::normal(c, Generator{7, 1});
    write_bytes(comm, dir + "/normal_3d.bin", spmd::allgather(c));
    sum_line("normal_3d", c);
    auto v = spmd::zeros<double>(dist(1), spmd::label("slice"));
    spmd::random::uniform(v(spmd::slice(1, -1), spmd::slice(1031, 0, -3)), Generator{7, 2});
    write_bytes(comm, dir + "/uniform_slice.bin", spmd::allgather(v));
    sum_line("uniform_slice", v);
  }
  bool ok = true;
  if (comm.rank() == 0) {
    std::ofstream f(dir + "/sums.txt");
    f << sums;
    f.close();
    ok = bool(f);
  }
  comm.check(ok, "random_digest: could not write " + dir + "/sums.txt");
  if (comm.rank() == 0)
    std::printf("random_digest: %d ranks, grid %s, %s execution space: wrote %s\n", p, grid.c_str(),
                Kokkos::DefaultExecutionSpace::name(), dir.c_str());
  return 0;
}
