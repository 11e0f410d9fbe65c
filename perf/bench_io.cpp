// Checkpoint bandwidth: spmd::io::save / load_into of one 2-D double array of MiB mebibytes (rows x
// 8192), against a plain sequential POSIX write (and read) of the same bytes on the same disk:
//   BM_posix_write:       rank 0 write()s the bytes in 8 MiB pieces to one file, then fsync
//   BM_checkpoint_write:  io::save (crc32, collective MPI-IO write, close, fsync, rename, .xmf)
//   BM_posix_read:        rank 0 read()s that file back
//   BM_checkpoint_read:   io::load_into (collective MPI-IO read) with (verify:1, the default) or
//                         without (verify:0) the checksum verification
//   BM_checksum:          io::checksum alone (the crc32 part of the two above)
// GB/s = bytes / time of the slowest rank. Files go to $SPMD_BENCH_IO_DIR (default: the working
// directory). Page cache: writes end with fsync, so they reach the disk; the reads follow the
// writes of the same file and are served from the page cache (caches cannot be dropped here), so
// they measure the software path, not the disk.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "spmd/gather.hpp"
#include "spmd/io/checkpoint.hpp"

namespace {

constexpr spmd::index_t kCols = 8192;
constexpr std::size_t kPiece = std::size_t(8) << 20;

std::string bench_dir() {
  const char* d = std::getenv("SPMD_BENCH_IO_DIR");
  return d ? d : ".";
}

spmd::Distribution<2> distribution(benchmark::State& state) {
  const spmd::index_t rows = state.range(0) * (1 << 20) / (8 * kCols);
  return spmd::Distribution<2>(spmd::perf::world(), spmd::Index<2>{rows, kCols});
}

double bytes_of(const spmd::Distribution<2>& d) {
  return static_cast<double>(d.size()) * sizeof(double);
}

spmd::Array<double, 2> make_state(const spmd::Distribution<2>& d) {
  auto u = spmd::empty<double>(d, spmd::label("spmd::perf::io::u"));
  u.fill(0.0);
  auto acc = u.owned_access();
  const spmd::index_t cols = kCols, row0 = d.owned().lo[0];
  Kokkos::parallel_for(
      "spmd::perf::io::fill",
      spmd::impl::nd_policy<2>(Kokkos::DefaultExecutionSpace(),
                               {static_cast<int>(d.owned().extent(0)), static_cast<int>(d.owned().extent(1))}),
      KOKKOS_LAMBDA(int i, int j) { acc(i, j) = static_cast<double>((row0 + i) * cols + j) * 0.5; });
  Kokkos::fence();
  return u;
}

bool posix_write(const std::string& path, const char* data, std::size_t n) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (std::size_t off = 0; ok && off < n;) {
    const ssize_t w = ::write(fd, data + off, std::min(kPiece, n - off));
    ok = w > 0;
    off += ok ? static_cast<std::size_t>(w) : 0;
  }
  ok = ::fsync(fd) == 0 && ok;
  return ::close(fd) == 0 && ok;
}

bool posix_read(const std::string& path, char* data, std::size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  bool ok = true;
  for (std::size_t off = 0; ok && off < n;) {
    const ssize_t r = ::read(fd, data + off, std::min(kPiece, n - off));
    ok = r > 0;
    off += ok ? static_cast<std::size_t>(r) : 0;
  }
  return ::close(fd) == 0 && ok;
}

void BM_posix_write(benchmark::State& state) {
  const auto d = distribution(state);
  const std::size_t n = static_cast<std::size_t>(bytes_of(d));
  const bool root = spmd::perf::world().rank() == 0;
  std::vector<char> buf(root ? n : 0, 1);
  const std::string path = bench_dir() + "/bench_io_posix.bin";
  bool ok = true;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { ok = (!root || posix_write(path, buf.data(), n)) && ok; });
  spmd::perf::check_all(state, ok, "BM_posix_write: write failed");
  state.counters["GB/s"] = timer.rate(static_cast<double>(n));
}

void BM_posix_read(benchmark::State& state) {
  const auto d = distribution(state);
  const std::size_t n = static_cast<std::size_t>(bytes_of(d));
  const bool root = spmd::perf::world().rank() == 0;
  std::vector<char> buf(root ? n : 0, 1);
  const std::string path = bench_dir() + "/bench_io_posix.bin";
  bool ok = !root || posix_write(path, buf.data(), n);
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { ok = (!root || posix_read(path, buf.data(), n)) && ok; });
  spmd::perf::check_all(state, ok, "BM_posix_read: read failed");
  state.counters["GB/s"] = timer.rate(static_cast<double>(n));
}

void BM_checkpoint_write(benchmark::State& state) {
  const auto d = distribution(state);
  auto u = make_state(d);
  const std::string path = bench_dir() + "/bench_io_checkpoint.h5";
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { spmd::io::save(path, {{"u", u}}, {{"step", std::int64_t(1)}}); });
  state.counters["GB/s"] = timer.rate(bytes_of(d));
}

void BM_checkpoint_read(benchmark::State& state) {
  const auto d = distribution(state);
  auto u = make_state(d);
  const std::string path = bench_dir() + "/bench_io_checkpoint.h5";
  spmd::io::save(path, {{"u", u}});
  auto v = spmd::zeros<double>(d, spmd::label("spmd::perf::io::v"));  // touched, as the POSIX read's buffer
  spmd::io::LoadOptions options;
  options.verify_checksum = state.range(1) != 0;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { spmd::io::load_into(path, "u", v, options); });
  state.counters["GB/s"] = timer.rate(bytes_of(d));
}

void BM_checksum(benchmark::State& state) {
  const auto d = distribution(state);
  auto u = make_state(d);
  std::uint32_t crc = 0;
  spmd::perf::ManualTimer timer(state);
  for (auto _ : state) timer([&] { crc ^= spmd::io::checksum(u); });
  benchmark::DoNotOptimize(crc);
  state.counters["GB/s"] = timer.rate(bytes_of(d));
}

const bool registered = [] {
  using Fn = void (*)(benchmark::State&);
  const std::pair<const char*, Fn> all[] = {{"BM_posix_write", &BM_posix_write},
                                            {"BM_checkpoint_write", &BM_checkpoint_write},
                                            {"BM_posix_read", &BM_posix_read},
                                            {"BM_checkpoint_read", &BM_checkpoint_read},
                                            {"BM_checksum", &BM_checksum}};
  for (const auto& [name, fn] : all) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    if (fn == &BM_checkpoint_read)
      b->Args({1024, 1})->Args({1024, 0})->ArgNames({"MiB", "verify"});
    else
      b->Arg(1024)->ArgName("MiB");
    b->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
