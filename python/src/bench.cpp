// For perf/bench_python.py: the C++ calls the Python front is measured against, on the same
// arrays in the same process: the fused kernel out = 0.2 * (a + b + c + d + e), float64, 1-3
// axes, and spmd::dot(x, y) of 1-D float64 arrays returned to the host, `reps` times each;
// they return the seconds of each repetition (fenced; a dot waits for its value). Collective.

#include <spmd/expr.hpp>
#include <spmd/reduce.hpp>

#include <chrono>
#include <vector>

#include "core.hpp"

namespace spmd::py {

template <int N>
std::vector<double> fused5(const std::vector<Holder>& h, int reps) {
  const auto& out = h[0].template array<double, N>();
  const auto& a = h[1].template array<double, N>();
  const auto& b = h[2].template array<double, N>();
  const auto& c = h[3].template array<double, N>();
  const auto& d = h[4].template array<double, N>();
  const auto& e = h[5].template array<double, N>();
  std::vector<double> t;
  Kokkos::DefaultExecutionSpace exec;
  for (int r = 0; r < reps; ++r) {
    out.comm().barrier();
    const auto t0 = std::chrono::steady_clock::now();
    spmd::assign(out, 0.2 * (a + b + c + d + e));
    exec.fence();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return t;
}

std::vector<double> bench_cpp_fused5(const std::vector<Holder>& h, int reps) {
  if (h.size() != 6) throw Error::replicated("spmdarray._core.bench_cpp_fused5: out, a, b, c, d, e");
  for (const Holder& x : h)
    if (x.dtype() != DType::f64 || !x.whole() || x.prank() != h[0].prank())
      throw Error::replicated("spmdarray._core.bench_cpp_fused5: whole float64 arrays of one rank");
  switch (h[0].prank()) {
    case 1:
      return fused5<1>(h, reps);
    case 2:
      return fused5<2>(h, reps);
    default:
      return fused5<3>(h, reps);
  }
}

std::vector<double> bench_cpp_dot(const Holder& x, const Holder& y, int reps) {
  for (const Holder* h : {&x, &y})
    if (h->dtype() != DType::f64 || !h->whole() || h->prank() != 1)
      throw Error::replicated("spmdarray._core.bench_cpp_dot: whole 1-D float64 arrays");
  const auto& a = x.template array<double, 1>();
  const auto& b = y.template array<double, 1>();
  std::vector<double> t;
  double sink = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    sink += spmd::dot(a, b);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (sink != sink) t.push_back(0);  // keeps the dots (a NaN sum adds a zero time: never here)
  return t;
}

}  // namespace spmd::py
