// The Python front's interpreter (python/src/program.hpp) outside the engine: the engine's host
// loop for out[...] = 0.2 * (a + b + c + d + e) (items of 4096 points, a line per item, one
// point at a time out of the line) run with the old 11-instruction program (load/add/const/mul)
// (with this interpreter's prefetch and chunk check) and with one op_lin instruction, against the C++ loop; thread CPU
// time (the machine's other load does not count), medians of 21. Stand-alone, for measuring interpreter changes without
// rebuilding the extension (seconds instead of minutes). docs/python.md "Performance" has the
// results. Build and run (a configured build folder BUILD gives spmd/config.hpp):
//   mpicxx.mpich -O3 -DNDEBUG -fopenmp -std=c++17 -Iinclude -IBUILD/include -Ipython/src
//     -isystem <kokkos prefix>/include perf/bench_python_interp.cpp -o /tmp/interp   (one line)
//   /tmp/interp 16384 200     # in cache      /tmp/interp 4000000 1   # from memory
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "program.hpp"

using namespace spmd;
using namespace spmd::py;
using Dev = ProgDev<double, 1, Kokkos::HostSpace>;

static double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

__attribute__((noinline)) void run_prog(const Dev& dev, double* out, index_t n) {
  for (index_t lo = 0; lo < n; lo += 4096) {
    const index_t hi = std::min(n, lo + 4096);
    const Kokkos::Array<index_t, 1> k{0};
    const auto in = dev.template line<0, true>(k);
    SPMD_IMPL_INDEPENDENT_ITERATIONS
    for (index_t i = lo; i < hi; ++i) out[i] = in(i);
  }
}

__attribute__((noinline)) void run_ref(const double* const* s, double* out, index_t n) {
  for (index_t lo = 0; lo < n; lo += 4096) {
    const index_t hi = std::min(n, lo + 4096);
    const double *a = s[0], *b = s[1], *c = s[2], *d = s[3], *e = s[4];
    SPMD_IMPL_INDEPENDENT_ITERATIONS
    for (index_t i = lo; i < hi; ++i) out[i] = 0.2 * (a[i] + b[i] + c[i] + d[i] + e[i]);
  }
}

int main(int argc, char** argv) {
  const index_t n = argc > 1 ? std::atol(argv[1]) : 4000000;
  const int inner = argc > 2 ? std::atoi(argv[2]) : 1;
  std::vector<std::vector<double>> v(5, std::vector<double>(static_cast<std::size_t>(n)));
  for (int t = 0; t < 5; ++t)
    for (index_t i = 0; i < n; ++i) v[t][i] = 1.0 + t + 1e-9 * static_cast<double>(i);
  std::vector<double> out(static_cast<std::size_t>(n));
  const double* s[5];
  for (int t = 0; t < 5; ++t) s[t] = v[t].data();
  const Ins old_prog[] = {{op_load, 0, 0, 0, 0}, {op_load, 1, 1, 0, 0},  {op_add, 0, 0, 1, 0}, {op_load, 1, 2, 0, 0},
                          {op_add, 0, 0, 1, 0},  {op_load, 1, 3, 0, 0},  {op_add, 0, 0, 1, 0}, {op_load, 1, 4, 0, 0},
                          {op_add, 0, 0, 1, 0},  {op_const, 1, 0, 0, 0}, {op_mul, 0, 1, 0, 0}};
  const Ins lin_prog[] = {{op_lin, 0, 5, 0, 0},      {op_term, 0, 0, kNone, 0}, {op_term, 0, 1, kNone, 0},
                          {op_term, 0, 2, kNone, 0}, {op_term, 0, 3, kNone, 0}, {op_term, 0, 4, kNone, 0}};
  for (int which = 0; which < 2; ++which) {
    const Ins* prog = which ? lin_prog : old_prog;
    const int len = which ? 6 : 11;
    if (!valid_program(prog, static_cast<std::size_t>(len), 5, 1)) return 1;
    Dev dev;
    dev.nsrc = 5;
    for (int t = 0; t < 5; ++t) {
      dev.src[t].p = s[t];
      dev.src[t].coef[0] = 1;
    }
    dev.ext[0] = n;
    dev.code.n = len;
    for (int j = 0; j < len; ++j) dev.code.ins[j] = prog[j];
    dev.code.k[0] = 0.2;
    dev.code.result = 0;
    std::vector<double> tp, tr;
    for (int r = 0; r < 21; ++r) {
      const double t0 = cpu_now();
      for (int q = 0; q < inner; ++q) run_prog(dev, out.data(), n);
      const double t1 = cpu_now();
      for (int q = 0; q < inner; ++q) run_ref(s, out.data(), n);
      const double t2 = cpu_now();
      tp.push_back(t1 - t0);
      tr.push_back(t2 - t1);
    }
    run_prog(dev, out.data(), n);
    double err = 0;
    for (index_t i = 0; i < n; ++i)
      err = std::max(err, std::abs(out[i] - 0.2 * (s[0][i] + s[1][i] + s[2][i] + s[3][i] + s[4][i])));
    std::sort(tp.begin(), tp.end());
    std::sort(tr.begin(), tr.end());
    const double scale = 1e9 / static_cast<double>(n) / inner;
    std::printf("%s: %.3f ns a point, C++ loop %.3f ns, ratio %.3f, max error %g\n",
                which ? "op_lin program      " : "old 11-instruction  ", tp[10] * scale, tr[10] * scale,
                tr[10] / tp[10], err);
  }
  return 0;
}
