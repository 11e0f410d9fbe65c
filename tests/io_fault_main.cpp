// Driver of the crash-safety and h5py tests of spmd::io (run by tests/io_fault.py and the h5py
// fixture in tests/CMakeLists.txt):
//
//   io_fault write  DIR STEP   save DIR/ckpt.h5 holding the state of STEP (SPMD_IO_FAULT=<phase>:<rank> arms
//                              spmd::testing::io_fault: that rank is killed in the middle)
//   io_fault verify DIR STEP   DIR/ckpt.h5 must hold exactly the state of STEP; then a new save
//                              must remove every stale temporary beside it
//
// The state of a step: u (2-D double, 40 x 30, halo 1), w (3-D float, 6 x 5 x 4), k (1-D int64, 50),
//   u[i, j] = step * 1000 + i * 0.5 + j * 0.25,  w[a, b, c] = step + 100 a + 10 b + c,
//   k[i] = step * 100000 + 3 i,
// which tests/check_h5py.py recomputes with NumPy.
#include <spmd.hpp>
#include <spmd/io/impl/testing.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {
struct State {
  spmd::Array<double, 2> u;
  spmd::Array<float, 3> w;
  spmd::Array<std::int64_t, 1> k;
};

template <class T, int N, class F>
std::vector<T> host_values(const spmd::Index<N>& shape, F&& f) {
  std::vector<T> v;
  spmd::for_each_index(spmd::Box<N>{spmd::Index<N>{}, shape}, [&](const spmd::Index<N>& g) { v.push_back(f(g)); });
  return v;
}

std::vector<double> u_of(std::int64_t s) {
  return host_values<double, 2>({40, 30},
                                [&](const spmd::Index<2>& g) { return s * 1000.0 + g[0] * 0.5 + g[1] * 0.25; });
}
std::vector<float> w_of(std::int64_t s) {
  return host_values<float, 3>(
      {6, 5, 4}, [&](const spmd::Index<3>& g) { return static_cast<float>(s + 100 * g[0] + 10 * g[1] + g[2]); });
}
/// The complex dataset "z" (complex128, stored as h5py's compound {r, i}).
std::vector<Kokkos::complex<double>> z_of(std::int64_t s) {
  return host_values<Kokkos::complex<double>, 2>(
      {9, 7}, [&](const spmd::Index<2>& g) { return Kokkos::complex<double>(s + g[0] * 0.5, g[1] - s * 0.25); });
}
std::vector<std::int64_t> k_of(std::int64_t s) {
  return host_values<std::int64_t, 1>({50}, [&](const spmd::Index<1>& g) { return s * 100000 + 3 * g[0]; });
}
}  // namespace

int main(int argc, char** argv) {
  spmd::Runtime rt(argc, argv);
  spmd::Comm comm = rt.world();
  if (argc != 4) {
    if (comm.rank() == 0) std::fprintf(stderr, "usage: io_fault write|verify DIR STEP\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2], path = dir + "/ckpt.h5";
  const std::int64_t step = std::atoll(argv[3]);
  // SPMD_IO_FAULT=<phase>:<rank> (set by tests/io_fault.py) arms the library's test-only fault hook.
  if (const char* fault = std::getenv("SPMD_IO_FAULT")) {
    const std::string spec(fault);
    const auto colon = spec.find(':');
    if (colon == std::string::npos) {
      if (comm.rank() == 0) std::fprintf(stderr, "io_fault: SPMD_IO_FAULT must be <phase>:<rank>, not '%s'\n", fault);
      return 2;
    }
    spmd::testing::io_fault(spec.substr(0, colon), std::atoi(spec.c_str() + colon + 1));
  }
  spmd::Distribution<2> du(comm, {40, 30}, spmd::halo(1));
  spmd::Distribution<3> dw(comm, {6, 5, 4});
  spmd::Distribution<1> dk(comm, {50});
  spmd::Distribution<2> dz(comm, {9, 7}, spmd::halo(1));
  if (mode == "write") {
    if (comm.rank() == 0) std::filesystem::create_directories(dir);
    State s{spmd::zeros<double>(du), spmd::zeros<float>(dw), spmd::zeros<std::int64_t>(dk)};
    const bool root = comm.rank() == 0;
    spmd::scatter(s.u, root ? u_of(step) : std::vector<double>{});
    spmd::scatter(s.w, root ? w_of(step) : std::vector<float>{});
    spmd::scatter(s.k, root ? k_of(step) : std::vector<std::int64_t>{});
    auto z = spmd::zeros<Kokkos::complex<double>>(dz);
    spmd::scatter(z, root ? z_of(step) : std::vector<Kokkos::complex<double>>{});
    spmd::io::save(path, {{"u", s.u}, {"w", s.w}, {"k", s.k}, {"z", z}}, {{"step", step}, {"time", step * 0.5}});
    return 0;
  }
  if (mode != "verify") return 2;
  // Load on another grid than the writer's and compare bit for bit.
  spmd::Distribution<2> du2(comm, {40, 30}, spmd::grid({1, comm.size()}));
  const auto u = spmd::gather(spmd::io::load<double>(path, "u", du2));
  const auto w = spmd::gather(spmd::io::load<float>(path, "w", dw));
  const auto k = spmd::gather(spmd::io::load<std::int64_t>(path, "k", dk));
  const auto z = spmd::gather(
      spmd::io::load<Kokkos::complex<double>>(path, "z", spmd::Distribution<2>(comm, {9, 7}, spmd::grid({1, 0}))));
  const auto attrs = spmd::io::read_attributes(path, comm);
  int bad = 0;
  if (comm.rank() == 0) {
    if (u != u_of(step) || w != w_of(step) || k != k_of(step) || z != z_of(step)) bad = 1;
    if (std::get<std::int64_t>(attrs.at("step")) != step) bad = 1;
    if (bad) std::fprintf(stderr, "io_fault verify: %s does not hold step %lld\n", path.c_str(), (long long)step);
  }
  // A new save removes the stale temporaries of killed saves.
  spmd::io::save(path, {{"k", spmd::io::load<std::int64_t>(path, "k", dk)}}, {{"step", step}});
  if (comm.rank() == 0)
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind(".ckpt.h5.tmp-", 0) == 0) {
        std::fprintf(stderr, "io_fault verify: stale temporary %s survived a save\n", e.path().c_str());
        bad = 1;
      }
  bad = comm.bcast(bad, 0);
  if (comm.rank() == 0 && !bad) std::printf("io_fault verify: step %lld loaded bit-identically\n", (long long)step);
  return bad;
}
