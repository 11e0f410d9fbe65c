#pragma once
/// \file poisson_matrix.hpp
/// The Poisson model matrix of a benchmark, kept between Google Benchmark's calls of one
/// benchmark function (building a 4096^2 or 256^3 matrix takes seconds), never more than one at
/// a time.

#include <memory>
#include <utility>

#include "bench_main.hpp"
#include "spmd/sparse.hpp"

namespace spmd::perf {

/// spmd::sparse::poisson2d (dim 2, n x n) or poisson3d (dim 3, n^3) on world(), reused while
/// the same one is asked for. Collective over world() when it builds.
inline const sparse::CsrMatrix<double>& poisson(int dim, index_t n) {
  using Matrix = sparse::CsrMatrix<double>;
  static std::unique_ptr<Matrix> cached;
  static std::pair<int, index_t> key{0, 0};
  static const bool hooked = [] {  // its Views must go before Kokkos does
    Kokkos::push_finalize_hook([] { cached.reset(); });
    return true;
  }();
  (void)hooked;
  if (!cached || key != std::make_pair(dim, n)) {
    cached.reset();
    cached =
        std::make_unique<Matrix>(dim == 2 ? sparse::poisson2d(world(), n, n) : sparse::poisson3d(world(), n, n, n));
    key = {dim, n};
  }
  return *cached;
}

}  // namespace spmd::perf
