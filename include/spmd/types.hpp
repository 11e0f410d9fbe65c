#pragma once
/// \file types.hpp
/// The vocabulary types every module shares: global indices, halo patterns and reduction
/// operations. No MPI, no Kokkos: headers of local concepts (boxes, selections) include only this.

#include <array>
#include <cstdint>

namespace spmd {

/// Global indices and extents (a rank's local indices are `int`).
using index_t = std::int64_t;

/// An N-d global index (or shape).
template <int N>
using Index = std::array<index_t, N>;

/// Halo exchange patterns: `face` fills the halo across faces only (no corners); `box` also fills
/// edges and corners (3^N - 1 neighbours).
enum class Pattern { face, box };

/// Reduction operations of the collectives (Comm::allreduce, spmd::allreduce).
enum class Op { sum, prod, min, max, land, lor };

}  // namespace spmd
