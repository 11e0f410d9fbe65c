#pragma once
// Generated arrays of the binding (gen.cpp): spmd::linspace, spmd::eye and the reproducible
// random numbers of spmd::random.

#include <cstdint>

#include "core.hpp"

namespace spmd::py {

/// spmd::linspace<T>(comm, start, stop, num, endpoint, options) for T float64 or float32.
/// Collective.
Holder linspace(DType dtype, const Comm& comm, double start, double stop, index_t num, bool endpoint,
                const DistributionOptions& opts);
/// spmd::eye<T>(comm, n, m, k, options), any element type. Collective.
Holder eye(DType dtype, const Comm& comm, index_t n, index_t m, index_t k, const DistributionOptions& opts);

enum class RandomKind : int { uniform, normal, integers };
/// Fill the whole parent h with spmd::random draws of Generator{seed, stream}: uniform in [a, b)
/// or normal (mean a, stddev b) for floating h, integers in [lo, hi) for int64 / int32 h. The
/// element at row-major index i depends on (seed, stream, i) only: the same at any rank count.
/// Local (writes the owned block; the arguments must be the same on every rank).
void random_fill(const Holder& h, RandomKind kind, std::uint64_t seed, std::uint64_t stream, double a, double b,
                 std::int64_t lo, std::int64_t hi);

}  // namespace spmd::py
